"""``tfxline init --data FOLDER`` for a folder of photos, one sub-folder per class: a config and a
schema decided from what the folder holds, one line per decision (docs/images.md states the
rules):

- the classes and their counts (the sub-folders' names); files that are not images, counted;
- the formats and sizes seen (read from the files' headers), and the side the model sees: the
  median shorter side rounded down to a multiple of 16, from 32 to 96 pixels on a CPU (a larger
  side trains quadratically slower; on a GPU with a keras.applications backbone set 224);
- the backbone (small_cnn, from scratch: no weights are downloaded) and the augmentation (crop);
- the split, the batch and the training length from the image count; balanced class weights when
  the largest class has over three times the images of the smallest;
- a TFLite model (float32) checked against the SavedModel before each push.
"""
from __future__ import annotations

import dataclasses
import math
import os
from typing import Any, Dict, List, Optional, TextIO, Tuple

from tfxline.cli.init_files import write_project
from tfxline.cli.init_label import InitError
from tfxline.kubeflow import names
from tfxline.pipeline.data import images as image_folder
from tfxline.pipeline.data import source as data_source
from tfxline.pipeline.data.check import path_column
from tfxline.trainer import budget as budget_lib
from tfxline.transforms import image_files

IMAGE_COLUMN, LABEL_COLUMN = "image", "label"
SIDES = (32, 96)   # the side init picks on a CPU, at least and at most
SKEW = 3.0         # largest / smallest class above this: balanced class weights


@dataclasses.dataclass
class ImagePlan:
    name: str
    data_path: str
    folder: image_folder.Folder
    size: int
    size_why: str
    batch_size: int
    epochs: int
    patience: int
    eval_steps: int
    sizing_why: str
    balanced: bool
    image_column: str = IMAGE_COLUMN   # a CSV's column of image paths (a folder: "image")
    label_column: str = LABEL_COLUMN   # a CSV's class column (a folder: "label", its sub-folders' names)
    other_columns: Tuple[str, ...] = ()  # a CSV's other columns, kept as text


def is_image_folder(path: str) -> bool:
    """A directory with at least one image one folder down (``<class>/<file>``)."""
    if not os.path.isdir(path):
        return False
    found = data_source.locate(path, "images").files if _has_subfolders(path) else []
    return any(image_folder.is_image_name(f) for f in found)


def refuse_flat_folder(path: str) -> None:
    """InitError for a folder of images with no class folders, or class folders with no images."""
    if not os.path.isdir(path) or is_image_folder(path):
        return
    loose = [f for f in os.listdir(path) if image_folder.is_image_name(f)]
    if loose:
        raise InitError(f"{path} holds {len(loose)} images but no class folders; put each class's images in a "
                        "sub-folder named for the class (e.g. cats/1.jpg, dogs/2.png)")
    if _has_subfolders(path) and not any(f.lower().endswith((".csv", ".csv.gz")) for f in os.listdir(path)):
        raise InitError(f"{path}'s sub-folders hold no images ({', '.join(image_folder.IMAGE_EXTENSIONS)}) and no .txt "
                        "files; put each class's images or .txt files in a sub-folder named for the class, or pass a "
                        "CSV with --label")


def _has_subfolders(path: str) -> bool:
    return any(os.path.isdir(os.path.join(path, d)) for d in os.listdir(path))


def choose_size(median_side: int) -> int:
    low, high = SIDES
    return max(low, min(high, median_side // 16 * 16))


def image_column_of(path: str) -> Optional[str]:
    """A CSV's column of image paths: the first whose filled cells (most of them) name image files."""
    if not (os.path.isfile(path) and path.lower().endswith(".csv")):
        return None
    return path_column(*data_source.read_columns([path]), image_folder.is_image_name)


def plan(data_path: str, label: Optional[str] = None) -> ImagePlan:
    image_column = image_column_of(data_path) if label else None
    columns = {}
    if image_column:  # a CSV of image paths and classes
        header = data_source.read_columns([data_path])[0]
        if label not in header:
            raise InitError(f"--label {label!r} is not a column of {data_path}; pass one of: {', '.join(header)}")
        columns = {"image_column": image_column, "label_column": label,
                   "other_columns": tuple(c for c in header if c not in (image_column, label))}
    found = data_source.locate(data_path, "images")
    folder = image_folder.check(found.files, data_path, "skip", image_column or IMAGE_COLUMN, label or LABEL_COLUMN)
    size = choose_size(folder.median_side)
    count = len(folder.images)
    batch = 32 if count < 1000 else 64
    # 70 / 10 / 20: the validation split holds ~10% of the images, at least a batch when there are enough
    # from scratch a network keeps learning for tens of passes, and a small validation split is noisy:
    # a long patience (a new user's icon folder of 1,141 images stopped at 10 of 30 at 65 % on train)
    epochs = 40 if count < 20_000 else 15
    eval_steps = max(1, min(50, math.ceil(count * 0.12 / batch)))  # the whole validation split, ~10% of them
    counts = list(folder.classes.values())
    return ImagePlan(
        name=names.portable(os.path.basename(os.path.normpath(data_path)).split(".")[0] + "-images"),
        data_path=os.path.abspath(data_path), folder=folder, size=size,
        size_why=(f"the median shorter side is {folder.median_side} px; {size} px keeps a CPU's training in "
                  f"minutes (from {SIDES[0]} to {SIDES[1]} on a CPU; 224 with a keras.applications backbone on a GPU)"),
        batch_size=batch, epochs=epochs, patience=10 if count < 20_000 else 4, eval_steps=eval_steps,
        sizing_why=(f"{count} images: batch {batch}, up to {epochs} passes, as many as fit in "
                    f"{budget_lib.FIRST_RUN_MINUTES} minutes (the Trainer times them; early stopping ends sooner)"),
        balanced=max(counts) > SKEW * min(counts), **columns)


def render_config(p: ImagePlan, schema_path: str) -> str:
    classes = ", ".join(f"{c} {n}" for c, n in p.folder.classes.items())
    return "\n".join([
        f"# {p.name}: {len(p.folder.classes)} classes of images in {p.data_path}, written by `tfxline init`.",
        "# Review it, then: tfxline run --config THIS_FILE (docs/images.md).",
        f"name: {p.name}",
        f"output_root: {_quote(os.path.join(os.path.dirname(schema_path), 'output'))}",
        "",
        "data:",
        f"  path: {_quote(p.data_path)}",
        "  format: images      # " + ("a CSV of image paths and classes (its other columns kept as text)"
                                     if p.other_columns or p.image_column != IMAGE_COLUMN else
                                     "one sub-folder per class; other files are ignored and counted"),
        f"  schema: {_quote(schema_path)}",
        "  bad_images: skip    # an image that does not decode is left out and named (fail: refuse the folder)",
        "  train_buckets: 7    # by each image's bytes: copies of a file stay in one split",
        "  validation_buckets: 1",
        "  eval_buckets: 2",
        "",
        "features:",
        f"  # classes: {classes}",
        f"  label: {{name: {p.label_column}, transform: class_vocabulary}}",
        "  inputs:",
        f"    # {p.folder.describe()}",
        f"    # {p.size_why}",
        f"    - {{name: {p.image_column}, transform: image, size: {p.size}, augment: crop}}   # flip_crop: also "
        "mirror (not for text or digits)",
        "",
        "model:",
        "  backbone: small_cnn   # from scratch; mobilenet_v2, efficientnet_b0, resnet50 with weights: <file>",
        "  weights: none",
        "  dropout: 0.2",
        "  learning_rate: 0.003",
        "",
        "training:",
        "  mode: epochs",
        f"  # {p.sizing_why}",
        f"  epochs: {p.epochs}",
        f"  batch_size: {p.batch_size}",
        f"  early_stopping_patience: {p.patience}",
        f"  eval_steps: {p.eval_steps}",
        "  seed: 42",
        f"  time_budget_minutes: {budget_lib.FIRST_RUN_MINUTES}   # {budget_lib.INIT_COMMENT}",
        *([f"  class_weight: balanced   # the largest class has over {SKEW:g}x the images of the smallest"]
          if p.balanced else []),
        "",
        "evaluation:",
        "  slices: []          # accuracy per class is in every run's metrics",
        "",
        "serving:",
        "  tflite: none        # a TFLite model for phones without quantization (float32; off: none at all),",
        "                      # checked against the SavedModel before each push",
        "",
    ])


def schema_text(p: ImagePlan) -> str:
    """The examples' schema: the image's bytes (TFDV's image statistics read them), the class, and the
    format (its domain the formats seen: a new day's folder of another format is an anomaly),
    width and height ImageExampleGen adds."""
    meta = image_files.metadata_columns(p.image_column)
    formats = sorted(f for f in p.folder.formats if f in dict(image_files.MAGIC).values())

    def feature(name, kind, *extra):
        return ["feature {", f'  name: "{name}"', f"  type: {kind}", "  presence { min_fraction: 1.0 min_count: 1 }",
                "  shape { dim { size: 1 } }", *extra, "}"]

    return "\n".join([f"# Written by `tfxline init` from {p.data_path}; review it."]
                     + feature(p.image_column, "BYTES", "  image_domain { }") + feature(p.label_column, "BYTES")
                     + feature(meta[image_files.FORMAT], "BYTES",
                               "  string_domain { " + " ".join(f'value: "{f}"' for f in formats) + " }")
                     + feature(meta[image_files.WIDTH], "INT") + feature(meta[image_files.HEIGHT], "INT")
                     + [line for c in p.other_columns  # a CSV's other columns, as text (empty when blank)
                        for line in feature(c, "BYTES")] + [""])


def _quote(text: str) -> str:
    import json

    return json.dumps(text)


def lines(p: ImagePlan) -> List[str]:
    f = p.folder
    out = [f"{len(f.images)} images in {len(f.classes)} classes in {p.data_path}"
           + (f"; {len(f.ignored)} other file(s) ignored ({', '.join(os.path.basename(x) for x in f.ignored[:3])})"
              if f.ignored else ""),
           "classes: " + ", ".join(f"{c} {n}" for c, n in f.classes.items()),
           f"images: {f.describe()}",
           f"image size {p.size} x {p.size}: {p.size_why}",
           "model: small_cnn from scratch (no weights downloaded), crop augmentation",
           f"sizing: {p.sizing_why}"]
    if p.balanced:
        out.append(f"class weights balanced: the largest class has over {SKEW:g}x the images of the smallest")
    return out


def init(data_path: str, directory: str, config_path: str, schema_path: str, stream: TextIO,
         write_text, label: Optional[str] = None) -> Dict[str, Any]:
    """Decide, check the config loads, print the decisions, write both files."""
    p = plan(data_path, label)
    write_project(render_config(p, os.path.abspath(schema_path)), schema_text(p), lines(p), config_path,
                  schema_path, stream, write_text)
    return {"images": len(p.folder.images)}


__all__ = ["InitError", "init", "is_image_folder", "plan"]
