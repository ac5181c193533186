"""The Evaluation section's eval texts for a model with a text input: the first ``COUNT`` rows of
the eval split, each text shortened to ``SHOWN`` characters, with its true class and the pushed
candidate's prediction (its serving_default signature on the stored tf.Examples, as TF Serving
would be asked). Empty for a model without text, or when the run's examples or model are gone
(tfxline gc)."""
from __future__ import annotations

import glob
import json
import os
from typing import Any, Dict, List

COUNT = 12
SHOWN = 240


def shortened(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= SHOWN else text[:SHOWN].rstrip() + " ..."


def eval_texts(run, model_dir: str) -> List[Dict[str, Any]]:
    execution, examples = run.execution("Transform"), run.artifact(run.example_gen_id(), "examples")
    if not model_dir or execution is None or examples is None or run.deleted(examples):
        return []
    from tfxline.transforms import features as F

    config = json.loads(execution.custom_properties["custom_config"].string_value or "{}")
    spec = F.FeatureSpec.from_dict(config["features"]) if "features" in config else None
    if spec is None or not spec.text_inputs:
        return []
    import tensorflow as tf

    from tfxline.components.tfma_results import label_classes
    from tfxline.trainer.export import SERVING_SIGNATURE

    files = sorted(glob.glob(os.path.join(examples.uri, "Split-eval", "*")))
    records = [r.numpy() for r in tf.data.TFRecordDataset(files, compression_type="GZIP").take(COUNT)] if files else []
    if not records:
        return []
    column, label = spec.text_inputs[0].source, spec.label.source
    parsed = tf.io.parse_example(records, {c: tf.io.VarLenFeature(tf.string) for c in (column, label)})
    texts = tf.sparse.to_dense(parsed[column], default_value=b"").numpy()[:, 0].tolist() \
        if parsed[column].dense_shape[1] else [b""] * len(records)
    labels = tf.sparse.to_dense(parsed[label], default_value=b"").numpy()[:, 0].tolist()
    out = tf.saved_model.load(model_dir).signatures[SERVING_SIGNATURE](examples=tf.constant(records))
    probabilities = out["probabilities"].numpy()
    classes = label_classes(model_dir)
    positive = str(spec.label.positive) if spec.label.positive is not None else "1"
    rows = []
    for text, true, p in zip(texts, labels, probabilities):
        p = p.reshape(-1)
        if len(p) == 1:  # binary: P(positive) at the model's own threshold (serving_default's class)
            called = bool(out["predicted_class"].numpy().reshape(-1)[len(rows)]) if "predicted_class" in out \
                else bool(p[0] >= 0.5)
            predicted, probability = (positive if called else f"not {positive}"), float(p[0] if called else 1 - p[0])
            shown_true = true.decode("utf-8", "replace")
            shown_true = shown_true if shown_true == positive else f"not {positive}"
        else:
            best = int(p.argmax())
            predicted, probability = (classes[best] if best < len(classes) else str(best)), float(p[best])
            shown_true = true.decode("utf-8", "replace")
        rows.append({"text": shortened(text.decode("utf-8", "replace")), "true": shown_true, "predicted": predicted,
                     "probability": probability})
    return rows
