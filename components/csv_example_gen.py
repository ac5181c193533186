"""CsvExampleGen for the CSV files people have: TFX's own component, its header and records read
by components/csv_records.py (BOM, spaces around names, quoted names, gzip: what TFX's executor
got wrong there).

The rows are then typed and encoded ``csv_records.BATCH_ROWS`` at a time, not one Python
tf.Example per row: each column's type as TFX infers it (``column_type``), each record serialized
by ``components/example_encoder.py``, byte for byte TFX's example serialized deterministically.
(tests/test_csv_encoding.py); on a 1M-row CSV the component went from 206 s to the figure in
docs/scale.md. TFX hashes those bytes to pick a record's split; here too, with a copy's number
added to a repeated row's bytes, or a group column's value instead (components/example_splits.py).
"""
from __future__ import annotations

import os
from typing import Any, Callable, List, Optional, Sequence

import apache_beam as beam
import numpy as np
from apache_beam import pvalue, typehints
from apache_beam.metrics.metric import MetricsFilter
from apache_beam.pipeline import Pipeline
from google.protobuf import struct_pb2
from tfx.components import CsvExampleGen as TfxCsvExampleGen
from tfx.components.example_gen.component import FileBasedExampleGen
from tfx.components.example_gen.csv_example_gen import executor as tfx_csv
from tfx.dsl.components.base import executor_spec
from tfx.dsl.io import fileio
from tfx.proto import example_gen_pb2
from tfx.types import artifact_utils, standard_component_specs
from tfx.utils import proto_utils
from tfx_bsl.coders import csv_decoder

from tfxline.components import csv_records, example_encoder, example_splits
from tfxline.components.csv_records import DROPPED, read_header

ColumnType = csv_decoder.ColumnType
_INT64_MIN, _INT64_MAX = np.iinfo(np.int64).min, np.iinfo(np.int64).max


# custom_config (a Struct in TFX's CustomConfig) keys: the columns whose empty cell leaves a row
# out (the label's, with data.missing_labels: drop; the count is the Beam counter DROPPED and the
# examples' custom property DROPPED), and the input files' content digest (read by nothing: it
# is in the execution's cache key, which TFX's driver fingerprint of the files holds only by
# size and modification second, so a CSV rewritten within a second, or copied with its time
# kept, was served from cache)
DROP_ROWS_WITHOUT, DATA_DIGEST = "drop_rows_without", "data_digest"


def custom_config(drop_rows_without: Sequence[str] = (),
                  data_digest: str = "") -> Optional[example_gen_pb2.CustomConfig]:
    """The ExampleGen's custom_config: leave out rows with an empty cell in any of the columns
    named; ``data_digest``, the content of the files it reads (None when neither is given)."""
    fields = {}
    if drop_rows_without:
        fields[DROP_ROWS_WITHOUT] = struct_pb2.Value(list_value=struct_pb2.ListValue(
            values=[struct_pb2.Value(string_value=c) for c in drop_rows_without]))
    if data_digest:
        fields[DATA_DIGEST] = struct_pb2.Value(string_value=data_digest)
    if not fields:
        return None
    config = example_gen_pb2.CustomConfig()
    config.custom_config.Pack(struct_pb2.Struct(fields=fields))
    return config


def drop_rows_without(exec_properties) -> List[str]:
    """The columns named by the execution's custom_config (``custom_config``'s inverse)."""
    text = exec_properties.get(standard_component_specs.CUSTOM_CONFIG_KEY)
    if not text:
        return []
    config = example_gen_pb2.CustomConfig()
    proto_utils.json_to_proto(text, config)
    fields = struct_pb2.Struct()
    if not config.custom_config.Unpack(fields) or DROP_ROWS_WITHOUT not in fields.fields:
        return []
    return [v.string_value for v in fields.fields[DROP_ROWS_WITHOUT].list_value.values]


def column_type(cells: Sequence[bytes]) -> csv_decoder.ColumnType:
    """The type TFX infers for a column holding ``cells`` (``ColumnTypeInferrer``: the highest
    of each cell's type, UNKNOWN < INT < FLOAT < STRING), a column at a time: int() or float()
    over every value rather than the per-cell try-int-then-float."""
    values = [c for c in cells if c]
    if not values:
        return ColumnType.UNKNOWN
    try:
        ints = [int(v) for v in values]
    except ValueError:
        try:
            [float(v) for v in values]  # pylint: disable=expression-not-assigned
        except ValueError:
            return ColumnType.STRING
        # float() also reads integers too large for int64, which TFX types STRING.
        long = [v for v in values if len(v) >= 19]
        infer = csv_decoder._InferValueType  # pylint: disable=protected-access
        return max([ColumnType.FLOAT] + [infer(v) for v in long])
    in_range = _INT64_MIN <= min(ints) and max(ints) <= _INT64_MAX
    return ColumnType.INT if in_range else ColumnType.STRING


class _ColumnTypes(csv_decoder.ColumnTypeInferrer):
    """TFX's column type inference (its accumulator, merge and output), a batch of columns at
    a time."""

    def add_input(self, accumulator, columns):
        for name, cells in zip(self._column_names, columns):
            current = column_type(cells)
            if name not in accumulator or current > accumulator[name]:
                accumulator[name] = current
        return accumulator


_ENCODING = {ColumnType.INT: (example_encoder.INT, int), ColumnType.FLOAT: (example_encoder.FLOAT, float),
             ColumnType.STRING: (example_encoder.BYTES, bytes)}


class _EncodeBatch(beam.DoFn):
    """Each record of a batch of columns as a serialized tf.Example, byte for byte TFX's
    ``_ParsedCsvToTfExample`` example serialized deterministically (so the split hash is the
    same): an empty cell is the column's kind with no value, a column empty throughout has
    no kind. A batch read with split hints gets each record's split key (``csv_records.split_key``):
    ``(records, keys)``."""

    def process(self, batch, column_infos):
        columns, hints = batch if isinstance(batch, tuple) else (batch, None)
        if columns and len(columns[0]):
            records = encode_columns(columns, column_infos)
            yield records if hints is None else (records, [csv_records.split_key(r, h) for r, h in zip(records, hints)])


def encode_columns(columns: Sequence[Sequence[bytes]], column_infos) -> List[bytes]:
    """A batch of columns (cells as bytes, b"" empty) as serialized tf.Examples, typed by
    ``column_infos`` (TFX's ``ColumnInfo``s, from the whole file's ``column_type``s). Also how
    ``tfxline schema draft`` sees a CSV, so a draft describes what the pipeline reads."""
    encoded = []
    for cells, info in zip(columns, column_infos):
        if info.type == ColumnType.IGNORE:
            continue
        present = np.fromiter(map(bool, cells), bool, len(cells))
        if info.type == ColumnType.UNKNOWN:
            encoded.append(example_encoder.Column(info.name, None, present))
            continue
        kind, convert = _ENCODING[info.type]
        values = [convert(c) for c in cells if c]
        encoded.append(example_encoder.Column(info.name, kind, present, values))
    return example_encoder.encode(encoded)


@typehints.with_input_types(Pipeline)
@typehints.with_output_types(Any)  # List[bytes], or Tuple[List[bytes], List[bytes]] with split keys
class _CsvToExample(tfx_csv._CsvToExample):  # pylint: disable=protected-access
    """TFX's transform, with the header read by ``read_header`` and the records typed and
    encoded a batch at a time. Its elements are batches of serialized tf.Examples, or with
    ``split_keys`` (``csv_records.COPIES`` or a column's name) ``(records, split keys)``."""

    def __init__(self, exec_properties, split_pattern: str, split_keys: Optional[str] = None):
        super().__init__(exec_properties, split_pattern)
        self._required = drop_rows_without(exec_properties)
        self._split_keys = split_keys

    @property
    def csv_files(self) -> List[str]:
        return [os.fsdecode(p) for p in fileio.glob(self._csv_pattern)]

    def expand(self, pipeline: Pipeline):
        csv_files = self.csv_files
        if not csv_files:
            raise RuntimeError(f"Split pattern {self._csv_pattern} does not match any files.")
        column_names = read_header(csv_files[0])
        for path in csv_files[1:]:
            if read_header(path) != column_names:
                raise RuntimeError(f"Files in same split {self._csv_pattern} have different header.")
        # Two passes over the files: the column types (TFX infers them over every row), then the
        # records typed by them. One read feeding both held every row in memory between them (the
        # DirectRunner keeps a stage's output until the next stage runs; docs/scale.md).
        column_infos = pvalue.AsSingleton(
            pipeline
            | "CreateFilenamesForTypes" >> beam.Create(csv_files)
            | "ReadCsvForTypes" >> beam.ParDo(
                csv_records.ReadCsvBatches(column_names, required=self._required, count_dropped=False))
            | "InferColumnTypes" >> beam.CombineGlobally(_ColumnTypes(column_names, skip_blank_lines=True)))
        return (pipeline
                | "CreateFilenames" >> beam.Create(csv_files)
                | "ReadCsvBatches" >> beam.ParDo(csv_records.ReadCsvBatches(
                    column_names, required=self._required, split_keys=self._split_keys))
                | "ToTFExample" >> beam.ParDo(_EncodeBatch(), column_infos))


class Executor(tfx_csv.Executor):
    """TFX's CsvExampleGen executor, its records encoded by ``_CsvToExample`` and split and
    written a batch at a time by components/example_splits.py: each row where TFX puts it, but
    a repeated row's copies spread over the splits, or each group in one split (TFX's
    ``partition_feature_name``)."""

    def GetInputSourceToExamplePTransform(self) -> Callable[..., beam.PTransform]:
        return _CsvToExample  # TFX calls it with (exec_properties, split_pattern)

    def Do(self, input_dict, output_dict, exec_properties) -> None:
        self._log_startup(input_dict, output_dict, exec_properties)
        payload_format = exec_properties.get(standard_component_specs.OUTPUT_DATA_FORMAT_KEY)
        if payload_format not in (None, example_gen_pb2.FORMAT_TF_EXAMPLE):
            raise ValueError(f"CsvExampleGen writes tf.Examples; output_data_format "
                             f"{example_gen_pb2.PayloadFormat.Name(payload_format)} is not supported")
        input_config, output_config, examples, split_uris, buckets = example_splits.prepared_outputs(
            output_dict, exec_properties)
        # A row's split: the hash of its record and its copy number in its file (csv_records.COPIES),
        # or of its partition_feature_name column's value (data.split_key: a group stays in one
        # split). TFX hashes the record alone, which sends every copy of a row to the same split.
        split_keys = (output_config.split_config.partition_feature_name or csv_records.COPIES) if buckets else None
        sources = [_CsvToExample(exec_properties, split.pattern, split_keys) for split in input_config.splits]
        shards = example_splits.shard_count([p for source in sources for p in source.csv_files])
        pieces_dir = os.path.join(artifact_utils.get_single_uri(examples), example_splits.PIECES_DIR)
        fileio.makedirs(pieces_dir)
        try:
            with self._make_beam_pipeline() as pipeline:
                keyed = [pipeline
                         | f"InputToRecord[{split.name}]" >> source
                         | f"SplitData[{split.name}]" >> beam.ParDo(example_splits.SplitBatch(
                             shards, pieces_dir, buckets=buckets or None, split=None if buckets else index))
                         for index, (split, source) in enumerate(zip(input_config.splits, sources))]
                _ = (keyed | "Flatten" >> beam.Flatten()
                     | "GroupByShard" >> beam.GroupByKey()
                     | "WriteShards" >> beam.ParDo(example_splits.WriteShard(split_uris, shards)))
        finally:
            example_splits.remove_pieces(pieces_dir)
        example_splits.write_empty_splits(split_uris)
        dropped = pipeline.result.metrics().query(MetricsFilter().with_name(DROPPED))["counters"]
        for artifact in examples:
            if drop_rows_without(exec_properties):
                artifact.set_int_custom_property(
                    DROPPED, sum(c.attempted if c.committed is None else c.committed for c in dropped))
        example_splits.mark_written(examples)


class CsvExampleGen(TfxCsvExampleGen):
    """TFX's CsvExampleGen (same id, spec, outputs and driver) with ``Executor``, and the
    ``custom_config`` of TFX's file-based ExampleGens (``custom_config()``), which TFX's
    CsvExampleGen does not pass on."""

    EXECUTOR_SPEC = executor_spec.BeamExecutorSpec(Executor)

    def __init__(self, input_base=None, input_config=None, output_config=None, range_config=None,
                 custom_config: Optional[example_gen_pb2.CustomConfig] = None):
        FileBasedExampleGen.__init__(self, input_base=input_base, input_config=input_config,
                                     output_config=output_config, range_config=range_config,
                                     custom_config=custom_config)
