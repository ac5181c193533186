"""``tfxline predict`` for an image model: a folder of images (searched through its sub-folders)
or a CSV with a column of image paths (the image input's column, or else the column whose cells
name images, as init finds it; relative paths are read from the CSV's folder), one output row per
image, in order: the path (and the CSV's other columns), ``predicted_class`` and every class's
probability.

The images go through the pushed model's ``serving_images`` signature as their files' bytes, the
request TF Serving's REST API decodes from ``{"b64": ...}`` (trainer/export.py): the model decodes
and resizes them as it did in training. A file that is not an image TensorFlow decodes refuses the
whole input before anything is predicted, naming it.
"""
from __future__ import annotations

import os
from typing import Dict, List, Optional, Tuple

import numpy as np

from tfxline.pipeline.config import PipelineConfig
from tfxline.pipeline.data.check import DataError, path_column, read_columns
from tfxline.pipeline.data.examples import read_csv_rows
from tfxline.transforms.image_files import IMAGE_EXTENSIONS, is_image_name

NAMED = 5
BATCH = 64


def image_rows(input_path: str, cfg: PipelineConfig) -> Tuple[List[Dict[str, str]], List[str]]:
    """(the output rows' input columns, each row's image file)."""
    column = cfg.features.image.source if cfg.features.image else "image"  # an image model has one
    if os.path.isdir(input_path):
        files = sorted(os.path.join(d, f) for d, _, names in os.walk(input_path) for f in names
                       if is_image_name(f))
        if not files:
            raise DataError(f"{input_path} holds no images ({', '.join(IMAGE_EXTENSIONS)}); pass a folder of "
                            f"images or a CSV with a {column!r} column of image paths")
        return [{column: os.path.relpath(f, input_path)} for f in files], files
    if not os.path.isfile(input_path):
        raise DataError(f"{input_path} does not exist; pass a folder of images or a CSV of image paths")
    rows = list(read_csv_rows(input_path))
    # the image input's column, or the one whose cells name images, as init finds it
    found = column if not rows or column in rows[0] else path_column(*read_columns([input_path]), is_image_name)
    if found is None:
        raise DataError(f"{input_path} has no column of image paths (nor one named {column!r}, the image input's); "
                        "add a column of image file names, or pass a folder of images")
    base = os.path.dirname(os.path.abspath(input_path))
    return rows, [os.path.join(base, row[found]) for row in rows]


def read_images(files: List[str]) -> List[bytes]:
    """Each file's bytes; DataError naming the files that are missing or do not decode."""
    from tfxline.components.image_example_gen import decodes

    contents, bad = [], []
    for path in files:
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError:
            bad.append(f"{path} (missing)")
            continue
        if not decodes(data):
            bad.append(path)
        contents.append(data)
    if bad:
        raise DataError(f"{len(bad)} of {len(files)} image(s) cannot be read as images: {', '.join(bad[:NAMED])}"
                        f"{' ...' if len(bad) > NAMED else ''}; fix or remove them and predict again")
    return contents


def predict_images(model_dir: str, contents: List[bytes], task) -> Tuple[np.ndarray, Optional[np.ndarray]]:
    """(the model's outputs, the served predicted_class or None) for the encoded images."""
    import tensorflow as tf

    from tfxline.task_types.decision import PREDICTED_CLASS
    from tfxline.trainer.export import IMAGES_INPUT, IMAGES_SIGNATURE

    serve = tf.saved_model.load(model_dir).signatures[IMAGES_SIGNATURE]
    outputs, decided = [], []
    for start in range(0, len(contents), BATCH):
        result = serve(**{IMAGES_INPUT: tf.constant(contents[start:start + BATCH])})
        outputs.append(result[task.output_key].numpy())
        if PREDICTED_CLASS in result and task.decides:
            decided.append(result[PREDICTED_CLASS].numpy())
    return np.concatenate(outputs), (np.concatenate(decided) if decided else None)
