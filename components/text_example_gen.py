"""TextExampleGen: a folder of ``.txt`` files, one sub-folder per class (the layout Keras's
``text_dataset_from_directory`` reads), to tf.Examples holding each file's text and its class,
split and written as TFX's file-based ExampleGens write theirs.

- The split pattern names the files relative to ``input_base`` (``*/*``: class/file; with TFX's
  span placeholders, ``day-{SPAN}/*/*``), local or gs:// (TFX's fileio); a file's class is its
  folder's name (components/folder_example_gen.py, ImageExampleGen's walk).
- Files whose names do not end in ``.txt`` (``README.md``, ``.DS_Store``) are ignored and counted
  (the examples' custom property ``ignored_files``; the run summary names their count).
- A record holds the text (UTF-8, a byte-order mark dropped) under the text input's column and the
  class under the label's: the columns the feature spec reads, as a CSV row of them would.
- A file whose bytes are not UTF-8 fails the run naming the file, its line and the byte
  (components/text_files.py); the pre-flight check (pipeline/data/texts.py) refuses it before any
  component runs.
- A record's split is the hash of the text's bytes, so copies of a document under any name or
  class land in one split: no eval document is a training document's copy.
"""
from __future__ import annotations

import apache_beam as beam
from tfx.dsl.components.base import executor_spec
from tfx.dsl.io import fileio
from tfx.proto import example_gen_pb2

from tfxline.components import folder_example_gen, text_files

TEXT_COLUMN, LABEL_COLUMN, DATA_DIGEST = "text_column", "label_column", "data_digest"


def custom_config(text_column: str, label_column: str, data_digest: str = "") -> example_gen_pb2.CustomConfig:
    return folder_example_gen.custom_config({TEXT_COLUMN: text_column, LABEL_COLUMN: label_column,
                                             DATA_DIGEST: data_digest})


def encode(text_column: str, label_column: str, text: str, label: str) -> bytes:
    """A document's tf.Example: its text and its class, both as bytes."""
    import tensorflow as tf

    def value(text: str):
        return tf.train.Feature(bytes_list=tf.train.BytesList(value=[text.encode()]))

    return tf.train.Example(features=tf.train.Features(feature={
        text_column: value(text), label_column: value(label)})).SerializeToString()


class ReadTexts(beam.DoFn):
    """A batch of entries -> (records, split keys), the split key the text's UTF-8 bytes."""

    def __init__(self, text_column: str, label_column: str):
        self._text, self._label = text_column, label_column

    def process(self, entries):
        records, keys = [], []
        for path, label, _ in entries:
            with fileio.open(path, "rb") as f:
                text = text_files.decode(path, f.read())
            records.append(encode(self._text, self._label, text, label))
            keys.append(text.encode())
        if records:
            yield records, keys


class Executor(folder_example_gen.FolderExecutor):
    """A class folder's ``.txt`` files, read by ``ReadTexts``."""

    FILES, EXTENSIONS = ".txt files", (text_files.TEXT_EXTENSION,)

    def entries(self, input_base, pattern, settings):
        return folder_example_gen.class_entries(folder_example_gen.matching_files(input_base, pattern),
                                                text_files.is_text_name)

    def reader(self, settings):
        return ReadTexts(settings.get(TEXT_COLUMN, "text"), settings.get(LABEL_COLUMN, "label"))


class TextExampleGen(folder_example_gen.FolderExampleGen):
    """TFX's file-based ExampleGen with ``Executor`` (component id ``TextExampleGen``)."""

    EXECUTOR_SPEC = executor_spec.BeamExecutorSpec(Executor)
