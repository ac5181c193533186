"""The first rows of a run's eval split and the feature spec they were transformed with: what the
Evaluation section shows its model's predictions on (an image model's gallery: gallery.py; a text
model's rows: text_examples.py). None when the run's examples or model are gone (tfxline gc), or
when ``wanted`` (the spec's kind of data) says the section has nothing to show."""
from __future__ import annotations

import glob
import json
import os
from typing import Any, Callable, List, Optional, Tuple

COUNT = 12


def eval_rows(run, model_dir: str, wanted: Callable[[Any], bool]) -> Optional[Tuple[Any, List[bytes]]]:
    """(the Transform's feature spec, the first ``COUNT`` serialized eval examples), or None."""
    execution, examples = run.execution("Transform"), run.artifact(run.example_gen_id(), "examples")
    if not model_dir or execution is None or examples is None or run.deleted(examples):
        return None
    from tfxline.transforms import features as F

    config = json.loads(execution.custom_properties["custom_config"].string_value or "{}")
    spec = F.FeatureSpec.from_dict(config["features"]) if "features" in config else None
    if spec is None or not wanted(spec):
        return None
    import tensorflow as tf

    files = sorted(glob.glob(os.path.join(examples.uri, "Split-eval", "*")))
    records = [bytes(r.numpy()) for r in tf.data.TFRecordDataset(files, compression_type="GZIP").take(COUNT)] \
        if files else []
    return (spec, records) if records else None
