"""How many numeric inputs lie outside the range the Transform learnt on the training split, per
split of the run's data (its ExampleGen's: today's train and eval rows). The model clips them to
that range widened (transforms/preprocessing.py ``clip_to_range``): a value far outside is a
data-entry error or a shift, and the model treats it as the edge value. Counted on the first
``MAX_ROWS`` rows of each split, exactly (the examples read back), for the report's Data section.
"""
from __future__ import annotations

import json
import os
from typing import Any, Dict, List

import numpy as np

MAX_ROWS = 100_000
CLIPPED = ("zscore", "log_zscore")


def clipped_counts(run) -> Dict[str, Any]:
    """{"features": [{"name", "column", "low", "high", "splits": {split: [outside, rows]}}],
    "max_rows"}; empty features where the run has no Transform or examples, or learnt no range."""
    out: Dict[str, Any] = {"features": [], "max_rows": MAX_ROWS}
    transform, examples = run.artifact("Transform", "transform_graph"), run.artifact(run.example_gen_id(), "examples")
    execution = run.execution("Transform")
    if transform is None or examples is None or execution is None or run.deleted(transform) or run.deleted(examples):
        return out
    from tfxline.transforms import analyzers
    from tfxline.transforms import features as F
    from tfxline.transforms.preprocessing import widened

    config = json.loads(execution.custom_properties["custom_config"].string_value or "{}")
    if "features" not in config:
        return out
    spec = F.FeatureSpec.from_dict(config["features"])
    numeric = [f for f in spec.inputs if f.transform in CLIPPED]
    names = [analyzers.analyzer_name(f, k) for f in numeric for k in ("negated_min", "max")]
    values = analyzers.feature_values(os.path.join(transform.uri, "transform_fn"), spec, [], names) if numeric else {}
    ranged = [f for f in numeric if all(analyzers.analyzer_name(f, k) in values for k in ("negated_min", "max"))]
    if not ranged:
        return out
    from tensorflow_transform.output_wrapper import TFTransformOutput
    from tfx.types import artifact_utils

    raw = TFTransformOutput(transform.uri).raw_feature_spec()
    columns = {f.source: raw[f.source].dtype for f in ranged}
    read = {split: _read(artifact_utils.get_split_uri([examples], split), columns)
            for split in artifact_utils.decode_split_names(examples.split_names)}
    for f in ranged:
        low = -float(values[analyzers.analyzer_name(f, "negated_min")])
        high = float(values[analyzers.analyzer_name(f, "max")])
        if not low <= high:
            continue
        low, high = widened(low, high)
        entry = {"name": f.name, "column": f.source, "transform": f.transform, "low": low, "high": high, "splits": {}}
        for split, (x, rows) in read.items():
            v = x[f.source]
            v = np.log1p(np.maximum(v, 0.0)) if f.transform == "log_zscore" else v
            entry["splits"][split] = [int(np.sum((v < low) | (v > high))), rows]
        out["features"].append(entry)
    return out


def _read(split_uri: str, columns: Dict[str, Any]):
    """({column: its present values, float}, rows read) from the first MAX_ROWS examples;
    ``columns``: {column: its dtype in the examples}."""
    import tensorflow as tf

    files = tf.io.gfile.glob(os.path.join(split_uri, "*"))
    spec = {c: tf.io.VarLenFeature(dtype) for c, dtype in columns.items()}
    found: Dict[str, List[np.ndarray]] = {c: [] for c in columns}
    rows = 0
    if files:
        for batch in tf.data.TFRecordDataset(files, compression_type="GZIP").take(MAX_ROWS).batch(8192):
            rows += int(tf.shape(batch)[0])
            parsed = tf.io.parse_example(batch, spec)
            for c in columns:
                found[c].append(parsed[c].values.numpy().astype(np.float64))
    return {c: np.concatenate(v) if v else np.zeros(0, np.float32) for c, v in found.items()}, rows
