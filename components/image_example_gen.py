"""ImageExampleGen: a folder of photos, one sub-folder per class (the layout Keras's
``image_dataset_from_directory`` reads), to tf.Examples holding each file's encoded bytes and its
class, split and written as TFX's file-based ExampleGens write theirs.

- The split pattern names the files relative to ``input_base`` (``*/*``: class/file; with TFX's
  span placeholders, ``day-{SPAN}/*/*``); a file's class is its folder's name. Or it names CSV
  files: each row an image's path (its image column; relative to the CSV's folder, absolute or
  gs://), its class (the label column) and any other columns, kept as text.
- Files whose names are not images (transforms/image_files.IMAGE_EXTENSIONS: ``notes.txt``,
  ``.DS_Store``) are ignored and counted (the examples' custom property ``ignored_files``).
- The folder walk, the split and the writing are components/folder_example_gen.py's, which
  TextExampleGen shares.
- Each image is decoded once, as the Trainer will (TensorFlow's decode_image): one that fails (a
  truncated JPEG) is left out, counted and named (``bad_images``, ``bad_image_files``: the first
  few), or refuses the run with ``bad_images: fail`` (data.bad_images).
- The bytes are stored as they are, never decoded pixels: a record is the file's size plus a few
  bytes.
- A record's split is the hash of the image's bytes (components/example_splits.py), so copies of a
  file, under any name or class, land in one split: no eval image is a training image's copy.
"""
from __future__ import annotations

import hashlib
import os
from typing import Dict, List, Optional, Tuple

import apache_beam as beam
from apache_beam import pvalue
from tfx.dsl.components.base import executor_spec
from tfx.dsl.io import fileio
from tfx.proto import example_gen_pb2

from tfxline.components import folder_example_gen
from tfxline.components.folder_example_gen import Entry, class_of  # noqa: F401 - pipeline/data/images.py reads class_of here
from tfxline.serving.native_stderr import IMAGE_DECODE_NOISE, stderr_filtered
from tfxline.transforms import image_files, images

IMAGE_COLUMN, LABEL_COLUMN, BAD_IMAGES, DATA_DIGEST = "image_column", "label_column", "bad_images", "data_digest"
BAD_IMAGE_POLICIES = ("skip", "fail")
NAMED = 5  # bad images named in the log and the examples' properties
# the examples' custom properties (ignored_files: components/folder_example_gen.py's)
BAD_IMAGE_COUNT, BAD_IMAGE_FILES = "bad_images", "bad_image_files"


class BadImageError(ValueError):
    """An image that does not decode, under ``bad_images: fail``."""


def custom_config(image_column: str, label_column: str, bad_images: str = "skip",
                  data_digest: str = "") -> example_gen_pb2.CustomConfig:
    return folder_example_gen.custom_config({IMAGE_COLUMN: image_column, LABEL_COLUMN: label_column,
                                             BAD_IMAGES: bad_images, DATA_DIGEST: data_digest})


def list_entries(input_base: str, pattern: str, image_column: str, label_column: str):
    """(entries, files ignored) matching the split pattern: the images of class folders, or the
    rows of CSV files that name them (``csv_entries``), sorted."""
    found = folder_example_gen.matching_files(input_base, pattern)
    tables = [p for p in found if p.lower().endswith(".csv")]
    if tables:
        return [e for path in tables for e in csv_entries(path, image_column, label_column)], []
    return folder_example_gen.class_entries(found, image_files.is_image_name)


def csv_entries(path: str, image_column: str, label_column: str) -> List[Entry]:
    """A CSV's rows as entries: the image at the path in ``image_column`` (relative to the CSV's
    folder, absolute, or gs://), the class in ``label_column``, the other columns kept as text.
    ValueError, in one line, when a column is missing or a row names no image or class."""
    import csv

    with fileio.open(path, "rb") as f:
        rows = list(csv.DictReader(f.read().decode("utf-8-sig").splitlines()))
    missing = [c for c in (image_column, label_column) if rows and c not in rows[0]]
    if missing:
        raise ValueError(f"{path} has no column {', '.join(missing)} (columns: {', '.join(rows[0])}); name the "
                         "column of image paths and the class column as the config's image input and label")
    out = []
    for n, row in enumerate(rows, start=2):
        image, label = (row.get(image_column) or "").strip(), (row.get(label_column) or "").strip()
        if not image or not label:
            raise ValueError(f"{path} line {n} has no {'image path' if not image else 'class'}; fill it in or "
                             "remove the row")
        where = image if "://" in image or os.path.isabs(image) else os.path.join(os.path.dirname(path), image)
        out.append((where, label, {k: v or "" for k, v in row.items() if k not in (image_column, label_column)}))
    return out


def encode(image_column: str, label_column: str, data: bytes, label: str, size: Tuple[int, int],
           other: Optional[Dict[str, str]] = None) -> bytes:
    """The image's bytes, its class, its format, width and height (image_files.metadata_columns),
    and a CSV row's other columns as text."""
    import tensorflow as tf

    def text(value: bytes):
        return tf.train.Feature(bytes_list=tf.train.BytesList(value=[value]))

    def number(value: int):
        return tf.train.Feature(int64_list=tf.train.Int64List(value=[value]))

    meta = image_files.metadata_columns(image_column)
    return tf.train.Example(features=tf.train.Features(feature={
        image_column: text(data), label_column: text(label.encode()),
        meta[image_files.FORMAT]: text(image_files.format_of(data).encode()),
        meta[image_files.HEIGHT]: number(size[0]), meta[image_files.WIDTH]: number(size[1]),
        **{k: text(v.encode()) for k, v in (other or {}).items()},
    })).SerializeToString()


def decoded_size(data: bytes) -> Optional[Tuple[int, int]]:
    """(height, width) when TensorFlow decodes the bytes as the Trainer will (the whole file: a
    truncated JPEG fails here, not half-way through training), else None."""
    import tensorflow as tf

    try:
        with stderr_filtered(IMAGE_DECODE_NOISE):  # libjpeg's own line about the file we name
            shape = tf.io.decode_image(data, channels=images.CHANNELS, expand_animations=False).shape
        return int(shape[0]), int(shape[1])
    except (tf.errors.InvalidArgumentError, tf.errors.UnknownError):
        return None


def decodes(data: bytes) -> bool:
    return decoded_size(data) is not None


class ReadImages(beam.DoFn):
    """A batch of entries -> (records, split keys), the split key the image's sha256; a file that
    does not decode goes to the ``bad`` output (or raises, under ``fail``)."""

    def __init__(self, image_column: str, label_column: str, policy: str):
        self._image, self._label, self._policy = image_column, label_column, policy

    def process(self, entries):
        records, keys = [], []
        from tensorflow import errors

        for path, label, other in entries:
            try:
                with fileio.open(path, "rb") as f:
                    data = f.read()
            except errors.NotFoundError:  # a CSV row's missing file: as an image that does not decode
                data = b""
            size = decoded_size(data) if data else None
            if size is None:
                if self._policy == "fail":
                    raise BadImageError(f"{path} is not an image TensorFlow decodes (truncated or damaged); "
                                        "remove or replace it, or set data.bad_images: skip to leave such files out")
                yield pvalue.TaggedOutput("bad", path)
                continue
            records.append(encode(self._image, self._label, data, label, size, other))
            keys.append(hashlib.sha256(data).digest())
        if records:
            yield records, keys


class Executor(folder_example_gen.FolderExecutor):
    """A class folder's (or a CSV's) images, read by ``ReadImages``; the bad ones counted and named."""

    FILES, EXTENSIONS = "images", image_files.IMAGE_EXTENSIONS

    def entries(self, input_base, pattern, settings):
        return list_entries(input_base, pattern, settings.get(IMAGE_COLUMN, "image"),
                            settings.get(LABEL_COLUMN, "label"))

    def reader(self, settings):
        return ReadImages(settings.get(IMAGE_COLUMN, "image"), settings.get(LABEL_COLUMN, "label"),
                          settings.get(BAD_IMAGES, "skip"))

    def record(self, bad_paths, examples):
        record_bad(bad_paths, examples)


def record_bad(paths: List[str], examples) -> None:
    """The bad images' count and first names, on the examples (the run summary reads them)."""
    import logging

    for artifact in examples:
        artifact.set_int_custom_property(BAD_IMAGE_COUNT, len(paths))
        artifact.set_string_custom_property(BAD_IMAGE_FILES, "\n".join(paths[:NAMED]))
    if paths:
        logging.warning("%d image(s) do not decode and were left out: %s%s", len(paths), ", ".join(paths[:NAMED]),
                        " ..." if len(paths) > NAMED else "")


class ImageExampleGen(folder_example_gen.FolderExampleGen):
    """TFX's file-based ExampleGen with ``Executor`` (component id ``ImageExampleGen``)."""

    EXECUTOR_SPEC = executor_spec.BeamExecutorSpec(Executor)
