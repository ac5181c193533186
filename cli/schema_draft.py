"""Draft a schema from data with TFDV, to review against the curated one in schema/.

A CSV is drafted from the tf.Examples CsvExampleGen writes for it (components/csv_example_gen.py:
the same column types, an empty cell as an empty value list), not from TFDV's own CSV reader.
TFDV's reader turns an empty cell into a missing feature, from which ``infer_schema`` drafts
``value_count {min: 1}``; the pipeline's examples carry the feature with no value, so the run
then refused the very file the schema was drafted from ("Missing values"). Drafted from what the
pipeline reads, a column with empty cells is optional by construction, and the draft reads the
CSVs the pipeline reads (BOM, CRLF, quotes, gzip). tests/test_schema_draft.py checks, on
generated CSVs with empty cells, that the statistics of each file validate against its draft.
"""
from __future__ import annotations

import difflib
import os
from typing import List, Optional, Sequence, TextIO

from google.protobuf import text_format

from tfxline.pipeline.config import PipelineConfig
from tfxline.pipeline.data import source as data_source
from tfxline.pipeline.data.source import DataError
from tfxline.runs import files

ENCODE_ROWS = 20_000  # rows typed and encoded at a time (the ExampleGen's batch)


def csv_statistics(header: Sequence[str], columns: Sequence[Sequence[str]]):
    """TFDV statistics of the tf.Examples CsvExampleGen writes for these columns, computed in
    memory (StatisticsGen's generators, without Beam)."""
    import pyarrow as pa
    from tensorflow_data_validation.statistics import stats_impl, stats_options
    from tfx_bsl.coders import example_coder

    from tfxline.components import csv_example_gen

    cells = [[c.encode() for c in column] for column in columns]
    infos = [csv_example_gen.csv_decoder.ColumnInfo(name, csv_example_gen.column_type(column))
             for name, column in zip(header, cells)]
    decoder = example_coder.ExamplesToRecordBatchDecoder()
    batches = [decoder.DecodeBatch(csv_example_gen.encode_columns([c[start:start + ENCODE_ROWS] for c in cells], infos))
               for start in range(0, len(cells[0]), ENCODE_ROWS)]
    table = pa.Table.from_batches(batches).combine_chunks() if len(batches) > 1 else None
    batch = table.to_batches()[0] if table is not None else batches[0]
    return stats_impl.generate_statistics_in_memory(batch, stats_options.StatsOptions())


def csv_schema(header: Sequence[str], columns: Sequence[Sequence[str]], text_columns: Sequence[str] = ()):
    """TFDV's draft of the schema of CSV columns already read (``data_source.read_columns``), every
    column optional: no fixed shape and ``value_count {max: 1}`` (a cell holds one value or none).
    TFDV gives a column without empty cells a fixed shape, which makes it required when an example
    is parsed: the next day's CSV with one empty cell there was refused ("Feature shape dropped"),
    and a serving request without it failed in the model's ParseExample. As in schema/taxi.pbtxt,
    the model fills a missing value per transform; a column that must never be empty is made
    required by hand (``value_count {min: 1 max: 1}``) in review.

    ``text_columns`` (free text: cli/init_text.py) get TFDV's ``natural_language_domain``, never the
    string domain TFDV drafts for a column of at most 100 distinct values: a table of 100 reviews
    listed each one, and the next day's reviews were all out of its domain."""
    import tensorflow_data_validation as tfdv
    from tensorflow_metadata.proto.v0 import schema_pb2

    schema = tfdv.infer_schema(csv_statistics(header, columns), infer_feature_shape=False)
    for feature in schema.feature:
        feature.ClearField("shape")
        feature.value_count.Clear()
        feature.value_count.max = 1
        if feature.name in text_columns:
            if feature.HasField("domain"):
                kept = [d for d in schema.string_domain if d.name != feature.domain]
                del schema.string_domain[:]
                schema.string_domain.extend(kept)
            feature.natural_language_domain.CopyFrom(schema_pb2.NaturalLanguageDomain())
    return schema


def infer_schema(location: str, fmt: str = "csv", files: Optional[List[str]] = None):
    import tensorflow_data_validation as tfdv

    if fmt == "csv":
        return csv_schema(*data_source.read_columns(files or [location]))
    return tfdv.infer_schema(tfdv.generate_statistics_from_tfrecord(location))


def draft(cfg: PipelineConfig, out_path: Optional[str], diff: bool, stream: TextIO, force: bool = False) -> int:
    """Draft a schema from the config's data: print it, write it to ``out_path`` (an existing
    file only with ``force``: a curated schema's review would be lost), or diff it (``diff``)."""
    configured = _configured_schema(cfg)
    is_configured = bool(out_path and configured and os.path.abspath(out_path) == os.path.abspath(configured))
    if out_path and os.path.exists(out_path) and not force:
        which = " (the configured schema, data.schema)" if is_configured else ""
        raise DataError(f"{out_path}{which} exists; pass --force to replace it with the draft (what was reviewed "
                        "in it is lost), or --diff to see what the draft would change")
    found = data_source.locate(data_source.resolve_data_path(cfg.data.path), cfg.data.format, cfg.data.pattern)
    schema = infer_schema(found.files[0] if len(found.files) == 1 else os.path.join(found.root, found.read_pattern),
                          cfg.data.format, files=found.files)
    text = text_format.MessageToString(schema)
    if out_path:
        files.write_text_atomic(out_path, text)
        then = "the runs read it (data.schema)" if is_configured else "set data.schema to it"
        print(f"draft schema written to {out_path}; review it, then {then}", file=stream)
    if diff:
        current_path = configured
        current = (text_format.MessageToString(data_source.load_schema(current_path))
                   if current_path else "")
        lines = difflib.unified_diff(current.splitlines(), text.splitlines(),
                                     fromfile=current_path or "(no schema)", tofile="draft", lineterm="")
        print("\n".join(lines) or "draft equals the curated schema", file=stream)
    if not out_path and not diff:
        print(text, file=stream)
    return 0


def _configured_schema(cfg: PipelineConfig) -> Optional[str]:
    """The schema file the config names, None where it names none that exists."""
    try:
        return data_source.schema_path(cfg.data.schema)
    except DataError:
        return None
