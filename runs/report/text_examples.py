"""The Evaluation section's eval texts for a model with a text input: the first ``eval_rows.COUNT`` rows of
the eval split, each text shortened to ``SHOWN`` characters, with its true class and the pushed
candidate's prediction (its serving_default signature on the stored tf.Examples, as TF Serving
would be asked). Empty for a model without text, or when the run's examples or model are gone
(tfxline gc)."""
from __future__ import annotations

from typing import Any, Dict, List

from tfxline.runs.report.eval_rows import eval_rows

SHOWN = 240


def shortened(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= SHOWN else text[:SHOWN].rstrip() + " ..."


def eval_texts(run, model_dir: str) -> List[Dict[str, Any]]:
    found = eval_rows(run, model_dir, lambda spec: bool(spec.text_inputs))
    if found is None:
        return []
    spec, records = found
    import tensorflow as tf

    from tfxline.components.tfma_results import label_classes
    from tfxline.trainer.export import SERVING_SIGNATURE

    column, label = spec.text_inputs[0].source, spec.label.source
    parsed = tf.io.parse_example(records, {c: tf.io.VarLenFeature(tf.string) for c in (column, label)})
    texts = tf.sparse.to_dense(parsed[column], default_value=b"").numpy()[:, 0].tolist() \
        if parsed[column].dense_shape[1] else [b""] * len(records)
    labels = tf.sparse.to_dense(parsed[label], default_value=b"").numpy()[:, 0].tolist()
    out = tf.saved_model.load(model_dir).signatures[SERVING_SIGNATURE](examples=tf.constant(records))
    probabilities = out["probabilities"].numpy()
    classes = label_classes(model_dir)
    positive = str(spec.label.positive) if spec.label.positive is not None else "1"
    # binary: P(positive), called at the model's own threshold (serving_default's class)
    binary = probabilities.ndim == 1 or probabilities.shape[-1] == 1
    called = None if not binary else (out["predicted_class"].numpy().reshape(-1) if "predicted_class" in out
                                      else probabilities.reshape(-1) >= 0.5)
    rows = []
    for i, (text, true, p) in enumerate(zip(texts, labels, probabilities)):
        p, shown_true = p.reshape(-1), true.decode("utf-8", "replace")
        if called is not None:
            yes = bool(called[i])
            predicted, probability = (positive if yes else f"not {positive}"), float(p[0] if yes else 1 - p[0])
            shown_true = shown_true if shown_true == positive else f"not {positive}"
        else:
            best = int(p.argmax())
            predicted, probability = (classes[best] if best < len(classes) else str(best)), float(p[best])
        rows.append({"text": shortened(text.decode("utf-8", "replace")), "true": shown_true, "predicted": predicted,
                     "probability": probability})
    return rows
