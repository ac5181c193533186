"""ImageExampleGen: a folder of photos, one sub-folder per class (the layout Keras's
``image_dataset_from_directory`` reads), to tf.Examples holding each file's encoded bytes and its
class, split and written as TFX's file-based ExampleGens write theirs.

- The split pattern names the files relative to ``input_base`` (``*/*``: class/file; with TFX's
  span placeholders, ``day-{SPAN}/*/*``); a file's class is its folder's name. Or it names CSV
  files: each row an image's path (its image column; relative to the CSV's folder, absolute or
  gs://), its class (the label column) and any other columns, kept as text.
- Files whose names are not images (transforms/image_files.IMAGE_EXTENSIONS: ``notes.txt``,
  ``.DS_Store``) are ignored and counted (the examples' custom property ``ignored_files``).
- Each image is decoded once, as the Trainer will (TensorFlow's decode_image): one that fails (a
  truncated JPEG) is left out, counted and named (``bad_images``, ``bad_image_files``: the first
  few), or refuses the run with ``bad_images: fail`` (data.bad_images).
- The bytes are stored as they are, never decoded pixels: a record is the file's size plus a few
  bytes.
- A record's split is the hash of the image's bytes (components/example_splits.py), so copies of a
  file, under any name or class, land in one split: no eval image is a training image's copy.

Elements are batches of files (``FILES_PER_BATCH``), as the CSV ExampleGen's are batches of rows.
"""
from __future__ import annotations

import hashlib
import os
from typing import Dict, List, Optional, Tuple

import apache_beam as beam
from apache_beam import pvalue
from apache_beam.io.textio import WriteToText
from google.protobuf import struct_pb2
from tfx.components.example_gen.component import FileBasedExampleGen
from tfx.dsl.components.base import base_beam_executor, executor_spec
from tfx.dsl.io import fileio
from tfx.proto import example_gen_pb2
from tfx.types import artifact_utils, standard_component_specs
from tfx.utils import proto_utils

from tfxline.components import example_splits
from tfxline.serving.native_stderr import IMAGE_DECODE_NOISE, stderr_filtered
from tfxline.transforms import image_files, images

IMAGE_COLUMN, LABEL_COLUMN, BAD_IMAGES, DATA_DIGEST = "image_column", "label_column", "bad_images", "data_digest"
BAD_IMAGE_POLICIES = ("skip", "fail")
FILES_PER_BATCH = 256
BAD_NAMES = "bad_images"  # the bad images' names, written under the pieces folder
NAMED = 5  # bad images named in the log and the examples' properties
# the examples' custom properties
IGNORED_FILES, BAD_IMAGE_COUNT, BAD_IMAGE_FILES = "ignored_files", "bad_images", "bad_image_files"


class BadImageError(ValueError):
    """An image that does not decode, under ``bad_images: fail``."""


def custom_config(image_column: str, label_column: str, bad_images: str = "skip",
                  data_digest: str = "") -> example_gen_pb2.CustomConfig:
    fields = {IMAGE_COLUMN: image_column, LABEL_COLUMN: label_column, BAD_IMAGES: bad_images,
              DATA_DIGEST: data_digest}
    config = example_gen_pb2.CustomConfig()
    values = {k: struct_pb2.Value(string_value=v) for k, v in fields.items()}
    config.custom_config.Pack(struct_pb2.Struct(fields=values))
    return config


def read_custom_config(exec_properties) -> Dict[str, str]:
    config = example_gen_pb2.CustomConfig()
    proto_utils.json_to_proto(exec_properties.get(standard_component_specs.CUSTOM_CONFIG_KEY) or "{}", config)
    fields = struct_pb2.Struct()
    config.custom_config.Unpack(fields)
    return {k: v.string_value for k, v in fields.fields.items()}


# an image to read: (its path, its class, the CSV row's other columns)
Entry = Tuple[str, str, Dict[str, str]]


def list_entries(input_base: str, pattern: str, image_column: str, label_column: str):
    """(entries, files ignored) matching the split pattern: the images of class folders, or the
    rows of CSV files that name them (``csv_entries``), sorted."""
    found = sorted(os.fsdecode(p) for p in fileio.glob(os.path.join(input_base, pattern)) if not fileio.isdir(p))
    tables = [p for p in found if p.lower().endswith(".csv")]
    if tables:
        return [e for path in tables for e in csv_entries(path, image_column, label_column)], []
    return ([(p, class_of(p), {}) for p in found if image_files.is_image_name(p)],
            [p for p in found if not image_files.is_image_name(p)])


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


def class_of(path: str) -> str:
    """A file's class: the name of the folder it is in."""
    return os.path.basename(os.path.dirname(path))


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


class Executor(base_beam_executor.BaseBeamExecutor):
    """Reads the split pattern's images into ``train``/``validation``/``eval`` (the output split
    config's hash buckets) with components/example_splits.py, as the CSV ExampleGen does."""

    def Do(self, input_dict, output_dict, exec_properties) -> None:
        self._log_startup(input_dict, output_dict, exec_properties)
        settings = read_custom_config(exec_properties)
        input_config, _, examples, split_uris, buckets = example_splits.prepared_outputs(output_dict, exec_properties)
        input_base = exec_properties[standard_component_specs.INPUT_BASE_KEY]
        image_column, label_column = settings.get(IMAGE_COLUMN, "image"), settings.get(LABEL_COLUMN, "label")
        listed = [list_entries(input_base, split.pattern, image_column, label_column) for split in input_config.splits]
        if not any(found for found, _ in listed):
            raise ValueError(f"no image files ({', '.join(image_files.IMAGE_EXTENSIONS)}) match "
                             f"{[s.pattern for s in input_config.splits]} under {input_base}")
        shards = example_splits.shard_count([path for found, _ in listed for path, _, _ in found])
        pieces_dir = os.path.join(artifact_utils.get_single_uri(examples), example_splits.PIECES_DIR)
        fileio.makedirs(pieces_dir)
        read = ReadImages(image_column, label_column, settings.get(BAD_IMAGES, "skip"))
        try:
            with self._make_beam_pipeline() as pipeline:
                keyed, bad = [], []
                for index, (split, (found, _)) in enumerate(zip(input_config.splits, listed)):
                    batches = [found[i:i + FILES_PER_BATCH] for i in range(0, len(found), FILES_PER_BATCH)]
                    out = (pipeline | f"Files[{split.name}]" >> beam.Create(batches)
                           | f"ReadImages[{split.name}]" >> beam.ParDo(read).with_outputs("bad", main="records"))
                    bad.append(out.bad)
                    keyed.append(out.records | f"SplitData[{split.name}]" >> beam.ParDo(example_splits.SplitBatch(
                        shards, pieces_dir, buckets=buckets or None, split=None if buckets else index)))
                _ = (keyed | "Flatten" >> beam.Flatten()
                     | "GroupByShard" >> beam.GroupByKey()
                     | "WriteShards" >> beam.ParDo(example_splits.WriteShard(split_uris, shards)))
                # the bad images' names as files beside the splits (any runner), read back below
                _ = (bad | "FlattenBad" >> beam.Flatten()
                     | "WriteBad" >> WriteToText(os.path.join(pieces_dir, BAD_NAMES)))
            bad_paths = sorted(line.strip() for path in fileio.glob(os.path.join(pieces_dir, BAD_NAMES + "*"))
                               for line in fileio.open(path).read().splitlines() if line.strip())
        finally:
            example_splits.remove_pieces(pieces_dir)
        example_splits.write_empty_splits(split_uris)
        ignored = sum(len(other) for _, other in listed)
        record_bad(bad_paths, examples)
        for artifact in examples:
            artifact.set_int_custom_property(IGNORED_FILES, ignored)
        example_splits.mark_written(examples)


def record_bad(paths: List[str], examples) -> None:
    """The bad images' count and first names, on the examples (the run summary reads them)."""
    import logging

    for artifact in examples:
        artifact.set_int_custom_property(BAD_IMAGE_COUNT, len(paths))
        artifact.set_string_custom_property(BAD_IMAGE_FILES, "\n".join(paths[:NAMED]))
    if paths:
        logging.warning("%d image(s) do not decode and were left out: %s%s", len(paths), ", ".join(paths[:NAMED]),
                        " ..." if len(paths) > NAMED else "")


class ImageExampleGen(FileBasedExampleGen):
    """TFX's file-based ExampleGen (its driver: spans, versions, the input fingerprint) with
    ``Executor``; the same id as TFX's ExampleGens take (``ImageExampleGen``)."""

    EXECUTOR_SPEC = executor_spec.BeamExecutorSpec(Executor)

    def __init__(self, input_base=None, input_config=None, output_config=None, range_config=None,
                 custom_config: Optional[example_gen_pb2.CustomConfig] = None):
        super().__init__(input_base=input_base, input_config=input_config, output_config=output_config,
                         range_config=range_config, custom_config=custom_config)

