"""The Evaluation section's gallery for an image model: the first ``eval_rows.COUNT`` images of the eval
split, each with its true class and the pushed candidate's prediction (its ``serving_images``
signature on the stored bytes, as TF Serving would be asked), embedded in the report as data URIs
so the page stays one self-contained file. Empty for a table model, or when the run's examples or
model are gone (tfxline gc)."""
from __future__ import annotations

import base64
from typing import Any, Dict, List

from tfxline.runs.report.eval_rows import eval_rows
from tfxline.transforms.image_files import format_of
from tfxline.transforms.image_input import image_input

MIME = {"JPEG": "image/jpeg", "PNG": "image/png", "GIF": "image/gif", "BMP": "image/bmp"}


def eval_gallery(run, model_dir: str) -> List[Dict[str, Any]]:
    from tfxline.transforms import features as F

    found = eval_rows(run, model_dir, lambda spec: spec.data_kind == F.IMAGE)
    if found is None:
        return []
    spec, records = found
    import tensorflow as tf

    from tfxline.components.tfma_results import label_classes
    from tfxline.trainer.export import IMAGES_INPUT, IMAGES_SIGNATURE

    image = image_input(spec).feature
    parsed = tf.io.parse_example(records, {c: tf.io.FixedLenFeature([], tf.string)
                                           for c in (image.source, spec.label.source)})
    encoded = parsed[image.source].numpy().tolist()
    serve = tf.saved_model.load(model_dir).signatures[IMAGES_SIGNATURE]
    probabilities = serve(**{IMAGES_INPUT: tf.constant(encoded)})["probabilities"].numpy()
    classes = label_classes(model_dir)
    out = []
    for data, label, p in zip(encoded, parsed[spec.label.source].numpy().tolist(), probabilities):
        best = int(p.argmax()) if p.ndim else int(p >= 0.5)
        out.append({"src": f"data:{MIME.get(format_of(data), 'image/png')};base64,{base64.b64encode(data).decode()}",
                    "true": label.decode("utf-8", "replace"),
                    "predicted": classes[best] if best < len(classes) else str(best),
                    "probability": float(p[best]) if p.ndim else float(p)})
    return out
