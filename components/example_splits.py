"""An ExampleGen's output, written from batches of serialized records: each record in the split
TFX's ExampleGen gives it, the splits written as gzipped TFRecord shards.

TFX's ExampleGen executor partitions, reshuffles and writes one record at a time (``beam.
Partition``, ``Reshuffle``, ``WriteToTFRecord``): for a 1M-row CSV that is a million elements
through three Beam stages, tens of seconds of per-element overhead on the DirectRunner. Here a
Beam element is a batch:

- ``SplitBatch`` hashes each record's split key as TFX's ``_PartitionFn`` hashes its partition
  key (sha256 modulo the total hash buckets, the split by ``bisect``); other bits of the same
  hash pick the record's shard and its place in the shard. The key is the record's bytes, as
  TFX's default, for a row's first copy in its file, and the bytes with the copy's number for
  its other copies (csv_records.split_key), or a group column's value (TFX's
  ``partition_feature_name``). The bytes alone send every copy of a row to one split (AER's
  Fertility: 13,065 distinct rows in 203,724, eval AUC 0.166; with a row-number column 0.621).
  A row that appears once lands where TFX puts it, on every run and in any file that holds it.
  It writes the records to piece files, one per (split, shard) and bundle,
  and passes on only their names: the shuffle between the two stages carries file names, not
  records. (It carried the records: Beam's DirectRunner holds a stage's whole output in the
  runner's memory until the next stage runs, so a 1M-row day's ExampleGen peaked at 3.4 GB and
  grew with the rows; docs/scale.md.)
- ``WriteShard`` reads a shard's pieces and writes its records ordered by that hash: a shuffle,
  as TFX's ``Reshuffle`` is, so a CSV sorted by date or label does not reach the trainer sorted,
  but a deterministic one (the same data gives the same files), where TFX's order changes per
  run. It writes to a temporary name and renames, so a retried bundle on a distributed runner
  leaves one whole file; the pieces go when the pipeline is done (``remove_pieces``).

Shards: one per ``SHARD_INPUT_BYTES`` of input (counted uncompressed; gzip files x4), so a
shard's records fit a worker's memory and large days write in parallel on distributed runners.
"""
from __future__ import annotations

import bisect
import hashlib
import itertools
import math
import os
import uuid
from typing import Any, Dict, List, NamedTuple, Optional, Sequence

import apache_beam as beam
import tensorflow as tf
from apache_beam.transforms.window import GlobalWindows
from tfx.components.example_gen import utils as example_gen_utils
from tfx.components.example_gen import write_split
from tfx.components.util import examples_utils
from tfx.dsl.io import fileio
from tfx.proto import example_gen_pb2
from tfx.types import artifact_utils, standard_component_specs
from tfx.utils import proto_utils

SHARD_INPUT_BYTES = 32 << 20
FILE_PREFIX = write_split.DEFAULT_TF_RECORD_FILE_NAME  # TFX's file name


def _gzip_writer(path: str) -> tf.io.TFRecordWriter:
    return tf.io.TFRecordWriter(path, tf.io.TFRecordOptions(compression_type="GZIP"))


def shard_count(paths: Sequence[str]) -> int:
    """Shards per split for these input files: one per SHARD_INPUT_BYTES of (estimated
    uncompressed) input."""
    size = sum(tf.io.gfile.stat(p).length * (4 if p.endswith(".gz") else 1) for p in paths)
    return max(1, math.ceil(size / SHARD_INPUT_BYTES))


def shard_name(shard: int, shards: int) -> str:
    return f"{FILE_PREFIX}-{shard:05d}-of-{shards:05d}.gz"


PIECES_DIR = ".pieces"  # under the examples artifact's URI, beside its split folders
ORDER_BYTES = 16  # a record's place in its shard: the top 128 bits of its sha256


class SplitBatch(beam.DoFn):
    """Batches of records into piece files, one per (split index, shard) in a bundle, each entry
    the record's order key (``ORDER_BYTES``) then the record; yields ``((split, shard), piece
    path)`` once the bundle is done. ``buckets`` are the splits' cumulative hash buckets (TFX's
    output split config), or ``split`` the one split every record goes to (TFX's input splits).
    A batch is a list of records, each hashed by its bytes, or ``(records, keys)``: each record
    hashed by its key (its bytes and copy number, or its group: csv_records.split_key)."""

    def __init__(self, shards: int, pieces_dir: str, buckets: Optional[List[int]] = None,
                 split: Optional[int] = None):
        self._shards, self._pieces_dir, self._buckets, self._split = shards, pieces_dir, buckets, split

    def start_bundle(self):
        self._writers: Dict[tuple, tuple] = {}

    def process(self, batch):
        records, keys = batch if isinstance(batch, tuple) else (batch, batch)
        total = self._buckets[-1] if self._buckets else 1
        for record, key in zip(records, keys):
            digest = hashlib.sha256(key).digest()
            h = int.from_bytes(digest, "big")
            key = (bisect.bisect(self._buckets, h % total) if self._buckets else self._split, (h >> 64) % self._shards)
            if key not in self._writers:
                path = os.path.join(self._pieces_dir, f"{key[0]}-{key[1]}-{uuid.uuid4().hex}.tfrecord")
                self._writers[key] = (path, tf.io.TFRecordWriter(path))
            self._writers[key][1].write(digest[:ORDER_BYTES] + record)

    def finish_bundle(self):
        for key, (path, writer) in self._writers.items():
            writer.close()
            yield GlobalWindows.windowed_value((key, path))
        self._writers = {}


class WriteShard(beam.DoFn):
    """One shard's records, read from its pieces, in hash order (then by their bytes: entries
    sorted whole), to ``<split dir>/data_tfrecord-SSSSS-of-NNNNN.gz``."""

    def __init__(self, split_uris: List[str], shards: int):
        self._split_uris, self._shards = split_uris, shards

    def process(self, element):
        (split, shard), pieces = element
        entries = sorted(record for batch in tf.data.TFRecordDataset(sorted(pieces)).batch(65536)
                         for record in batch.numpy())
        path = os.path.join(self._split_uris[split], shard_name(shard, self._shards))
        partial = path + ".partial"
        with _gzip_writer(partial) as writer:
            for entry in entries:
                writer.write(entry[ORDER_BYTES:])
        tf.io.gfile.rename(partial, path, overwrite=True)
        yield split, len(entries)


def remove_pieces(pieces_dir: str) -> None:
    if tf.io.gfile.exists(pieces_dir):
        tf.io.gfile.rmtree(pieces_dir)


def write_empty_splits(split_uris: Sequence[str]) -> None:
    """A split no record went to gets one empty file, as Beam's WriteToTFRecord writes, so
    readers find the split (and the data checks report it empty)."""
    for uri in split_uris:
        if not tf.io.gfile.glob(os.path.join(uri, f"{FILE_PREFIX}-*")):
            with _gzip_writer(os.path.join(uri, shard_name(0, 1))):
                pass


class Outputs(NamedTuple):
    """What an ExampleGen executor of ours writes to, from its exec properties."""
    input_config: Any
    output_config: Any
    examples: List[Any]       # the output Examples artifacts (split names set)
    split_uris: List[str]     # each output split's folder, made
    buckets: List[int]        # the output splits' cumulative hash buckets; empty: each input split is one


def prepared_outputs(output_dict, exec_properties) -> Outputs:
    """The input and output configs, the examples' split names and folders, and the hash buckets
    (an output split config hashes one input split into buckets; without one, each input split is an
    output split: TFX's two modes)."""
    input_config, output_config = example_gen_pb2.Input(), example_gen_pb2.Output()
    proto_utils.json_to_proto(exec_properties[standard_component_specs.INPUT_CONFIG_KEY], input_config)
    proto_utils.json_to_proto(exec_properties[standard_component_specs.OUTPUT_CONFIG_KEY], output_config)
    examples = output_dict[standard_component_specs.EXAMPLES_KEY]
    split_names = example_gen_utils.generate_output_split_names(input_config, output_config)
    artifact_utils.get_single_instance(examples).split_names = artifact_utils.encode_split_names(split_names)
    split_uris = [artifact_utils.get_split_uri(examples, name) for name in split_names]
    for uri in split_uris:
        fileio.makedirs(uri)
    buckets = list(itertools.accumulate(s.hash_buckets for s in output_config.split_config.splits))
    return Outputs(input_config, output_config, examples, split_uris, buckets)


def mark_written(examples) -> None:
    """The examples' payload (tf.Example) and file format (gzipped TFRecords), as TFX's ExampleGens record them."""
    for artifact in examples:
        examples_utils.set_payload_format(artifact, example_gen_pb2.FORMAT_TF_EXAMPLE)
        examples_utils.set_file_format(artifact, write_split.to_file_format_str(example_gen_pb2.FORMAT_TFRECORDS_GZIP))
