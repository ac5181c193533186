"""What the ExampleGens of a class folder share (the layout Keras's ``image_dataset_from_directory``
and ``text_dataset_from_directory`` read: one sub-folder per class): ImageExampleGen (photos) and
TextExampleGen (``.txt`` files).

- The files: the split pattern's matches under ``input_base`` (``*/*``: class/file; with TFX's
  span placeholders, ``day-{SPAN}/*/*``), local or any filesystem TFX's fileio reads (gs://),
  sorted, hidden files (``.DS_Store``) skipped; a file's class is its folder's name. Those the
  ExampleGen does not read (its ``is_member`` says which) are ignored and counted (the examples'
  custom property ``ignored_files``, and ``folder_files``: what the others were, for the run
  summary's line).
- ``FolderExecutor``: batches of files (``FILES_PER_BATCH``) through the subclass's reader, a
  DoFn that yields ``(records, split keys)`` and, for a file it leaves out, its path on the
  ``bad`` output; each record's split is the hash of its key (the file's content), as
  components/example_splits.py splits the CSV ExampleGen's rows, so copies of a file under any
  name or class land in one split. The files left out are named back to the subclass
  (``record``), which counts them on the examples.
- The settings travel as TFX's ExampleGen custom_config, a struct of strings (``custom_config``).
"""
from __future__ import annotations

import os
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import apache_beam as beam
from apache_beam.io.textio import WriteToText
from google.protobuf import struct_pb2
from tfx.components.example_gen.component import FileBasedExampleGen
from tfx.dsl.components.base import base_beam_executor
from tfx.dsl.io import fileio
from tfx.proto import example_gen_pb2
from tfx.types import artifact_utils, standard_component_specs
from tfx.utils import proto_utils

from tfxline.components import example_splits
from tfxline.components.class_folders import class_of

FILES_PER_BATCH = 256
BAD_NAMES = "bad_files"  # the names of the files left out, written under the pieces folder
# the examples' custom properties: files ignored, and what the files read were ("images", ".txt files")
IGNORED_FILES, FOLDER_FILES = "ignored_files", "folder_files"

# a file to read: (its path, its class, a CSV row's other columns)
Entry = Tuple[str, str, Dict[str, str]]


def custom_config(fields: Dict[str, str]) -> example_gen_pb2.CustomConfig:
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


def matching_files(input_base: str, pattern: str) -> List[str]:
    """The files (not folders) matching the split pattern under ``input_base``, sorted; hidden ones
    (``.DS_Store``) skipped, as Python's glob skips them for the pre-flight check and init."""
    found = (os.fsdecode(p) for p in fileio.glob(os.path.join(input_base, pattern)))
    return sorted(p for p in found if not os.path.basename(p).startswith(".") and not fileio.isdir(p))


def class_entries(found: Sequence[str], is_member: Callable[[str], bool]) -> Tuple[List[Entry], List[str]]:
    """(the entries of the files ``is_member`` reads, each with its folder's class; the others)."""
    return [(p, class_of(p), {}) for p in found if is_member(p)], [p for p in found if not is_member(p)]


class FolderExecutor(base_beam_executor.BaseBeamExecutor):
    """Reads the split pattern's files into ``train``/``validation``/``eval`` (the output split
    config's hash buckets) with components/example_splits.py, as the CSV ExampleGen does. A
    subclass says which files it reads and how (``entries``, ``reader``), what the files it reads
    are (``FILES``), and records what it left out (``record``)."""

    FILES = "files"  # what the files read are, in the run summary's line: "N file(s) that are not FILES ignored"
    EXTENSIONS: Sequence[str] = ()  # their names' endings

    def entries(self, input_base: str, pattern: str, settings: Dict[str, str]) -> Tuple[List[Entry], List[str]]:
        raise NotImplementedError

    def reader(self, settings: Dict[str, str]) -> beam.DoFn:
        raise NotImplementedError

    def record(self, bad_paths: List[str], examples) -> None:
        """What the reader left out, on the examples (the run summary reads them)."""

    def Do(self, input_dict, output_dict, exec_properties) -> None:
        self._log_startup(input_dict, output_dict, exec_properties)
        settings = read_custom_config(exec_properties)
        input_config, _, examples, split_uris, buckets = example_splits.prepared_outputs(output_dict, exec_properties)
        input_base = exec_properties[standard_component_specs.INPUT_BASE_KEY]
        listed = [self.entries(input_base, split.pattern, settings) for split in input_config.splits]
        if not any(found for found, _ in listed):
            patterns = [s.pattern for s in input_config.splits]
            raise ValueError(f"no {self.FILES} ({', '.join(self.EXTENSIONS)}) match {patterns} under {input_base}; "
                             "put each class's files in a sub-folder named for the class")
        shards = example_splits.shard_count([path for found, _ in listed for path, _, _ in found])
        pieces_dir = os.path.join(artifact_utils.get_single_uri(examples), example_splits.PIECES_DIR)
        fileio.makedirs(pieces_dir)
        read = self.reader(settings)
        try:
            with self._make_beam_pipeline() as pipeline:
                keyed, bad = [], []
                for index, (split, (found, _)) in enumerate(zip(input_config.splits, listed)):
                    batches = [found[i:i + FILES_PER_BATCH] for i in range(0, len(found), FILES_PER_BATCH)]
                    out = (pipeline | f"Files[{split.name}]" >> beam.Create(batches)
                           | f"Read[{split.name}]" >> beam.ParDo(read).with_outputs("bad", main="records"))
                    bad.append(out.bad)
                    keyed.append(out.records | f"SplitData[{split.name}]" >> beam.ParDo(example_splits.SplitBatch(
                        shards, pieces_dir, buckets=buckets or None, split=None if buckets else index)))
                _ = (keyed | "Flatten" >> beam.Flatten()
                     | "GroupByShard" >> beam.GroupByKey()
                     | "WriteShards" >> beam.ParDo(example_splits.WriteShard(split_uris, shards)))
                # the names of the files left out, as files beside the splits (any runner), read back below
                _ = (bad | "FlattenBad" >> beam.Flatten()
                     | "WriteBad" >> WriteToText(os.path.join(pieces_dir, BAD_NAMES)))
            bad_paths = sorted(line.strip() for path in fileio.glob(os.path.join(pieces_dir, BAD_NAMES + "*"))
                               for line in fileio.open(path).read().splitlines() if line.strip())
        finally:
            example_splits.remove_pieces(pieces_dir)
        example_splits.write_empty_splits(split_uris)
        self.record(bad_paths, examples)
        for artifact in examples:
            artifact.set_int_custom_property(IGNORED_FILES, sum(len(other) for _, other in listed))
            artifact.set_string_custom_property(FOLDER_FILES, self.FILES)
        example_splits.mark_written(examples)


class FolderExampleGen(FileBasedExampleGen):
    """TFX's file-based ExampleGen (its driver: spans, versions, the input fingerprint) with a
    ``FolderExecutor``, set by the subclass (``EXECUTOR_SPEC``); the same id as TFX's ExampleGens
    take (the subclass's name)."""

    def __init__(self, input_base=None, input_config=None, output_config=None, range_config=None,
                 custom_config: Optional[example_gen_pb2.CustomConfig] = None):
        super().__init__(input_base=input_base, input_config=input_config, output_config=output_config,
                         range_config=range_config, custom_config=custom_config)
