"""The pre-flight check of the input (pipeline/data/source.py finds it): the common mistakes
(missing column, text in a numeric column, a file that is not TFRecord, an empty file, bytes that
are not UTF-8, another delimiter) become one-line errors that name the file, line and fix, before
any component runs. Anything subtler is ExampleValidator's job inside the pipeline. Also how the
CLI reads a CSV's columns (``read_columns``), as CsvExampleGen reads them."""
from __future__ import annotations

import csv
import gzip
import os
from typing import TYPE_CHECKING, Dict, Iterator, List, Optional, Sequence, Tuple

from tensorflow_metadata.proto.v0 import schema_pb2

if TYPE_CHECKING:
    from tfxline.pipeline.data.labels import LabelValues

_TFRECORD_FIX = "data.format tfrecord expects TFRecords of tf.Example, GZIP-compressed when the name ends in .gz"


class DataError(ValueError):
    """The input data cannot be used as it is."""


def csv_lines(path: str) -> Iterator[str]:
    """The text lines of a CSV file as CsvExampleGen reads them (components/csv_example_gen.py):
    UTF-8 with or without a byte-order mark, any line ends, gzip when the name ends in .gz. A
    byte that is not UTF-8 is a DataError naming the line and the byte."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        for line_no, raw in enumerate(f, start=1):
            try:
                yield raw.decode("utf-8-sig" if line_no == 1 else "utf-8")
            except UnicodeDecodeError as e:
                bad = raw[e.start]
                raise DataError(
                    f"{path} line {line_no} byte {e.start + 1} (0x{bad:02x}) is not UTF-8; save the file as UTF-8 "
                    "(from Latin-1 / Windows-1252: iconv -f cp1252 -t utf-8 IN > OUT)") from None


def csv_reader(path: str):
    """(header, reader of the rows): ``csv`` over ``csv_lines``, the header's names stripped of
    surrounding spaces. A file that cannot name its columns is a DataError saying why: empty,
    duplicate names, or another delimiter."""
    reader = csv.reader(csv_lines(path))
    try:
        header = [name.strip() for name in next(reader)]
    except StopIteration:
        raise DataError(f"{path} is empty; it needs a header line and at least one data row") from None
    except csv.Error as e:
        raise unreadable(path, e) from None
    if len(header) == 1:
        for delimiter, name in ((";", "semicolons"), ("\t", "tabs"), ("|", "pipes")):
            if delimiter in header[0]:
                raise DataError(f"{path} looks delimited by {name}, not commas (its header is one column, "
                                f"{header[0][:60]!r}); save it comma-separated")
    seen: set = set()
    duplicates = sorted({n for n in header if n in seen or seen.add(n)})
    if duplicates:
        raise DataError(f"{path}: the header names column(s) {', '.join(duplicates)} more than once; "
                        "rename them so every column has its own name")
    return header, reader


def unreadable(path: str, error: csv.Error) -> DataError:
    """The one line for a CSV Python's csv module cannot read. A carriage return inside an
    unquoted field (old Mac line ends, or text pasted from one: csv's "new-line character seen in
    unquoted field") is named by its first line and count, with a command that removes them."""
    found = bare_carriage_returns(path)
    if found:
        first, count = found
        fix = f"sed -e 's/\\r$//' -e 's/\\r/ /g' {path} > fixed.csv"
        return DataError(f"{path} line {first} has a carriage return inside an unquoted field ({count} such "
                         "carriage return(s) in the file, none followed by a new line), which a CSV reader takes for "
                         f"a line end (CsvExampleGen refuses the row). Replace them with spaces: {fix}, or quote "
                         "the fields that hold them")
    return DataError(f"{path} is not a readable CSV ({error}); fix the file")


def bare_carriage_returns(path: str) -> Optional[Tuple[int, int]]:
    """(the first line holding one, how many) of the carriage returns not followed by a new line
    (lines counted by new lines), or None."""
    opener = gzip.open if path.endswith(".gz") else open
    first, count = 0, 0
    with opener(path, "rb") as f:
        for line_no, raw in enumerate(f, start=1):
            bare = raw.count(b"\r") - (1 if raw.endswith(b"\r\n") else 0)
            if bare > 0:
                first = first or line_no
                count += bare
    return (first, count) if count else None


def read_columns(files: Sequence[str]) -> Tuple[List[str], List[List[str]]]:
    """(header, each column's cells) of CSV files with one header, as CsvExampleGen reads them
    (BOM, CRLF, quotes, gzip; blank lines skipped). Ragged rows and files whose headers differ
    are a DataError."""
    header: List[str] = []
    columns: List[List[str]] = []
    for path in files:
        names, reader = csv_reader(path)
        if not header:
            header, columns = names, [[] for _ in names]
        elif names != header:
            raise DataError(f"{path}'s header differs from {files[0]}'s; give every file of the data the same columns")
        try:
            for row in reader:
                if not row or row == [""]:
                    continue
                if len(row) != len(header):
                    raise DataError(f"{path} line {reader.line_num} has {len(row)} fields, the header has "
                                    f"{len(header)}; fix the row (quote values that contain commas)")
                for column, cell in zip(columns, row):
                    column.append(cell)
        except csv.Error as e:
            raise unreadable(path, e) from None
    if not columns or not columns[0]:
        raise DataError(f"{', '.join(files)}: a header but no data rows; add rows or point --data elsewhere")
    return header, columns


def path_column(header: Sequence[str], columns: Sequence[Sequence[str]], is_member) -> Optional[str]:
    """A CSV's column of file paths (``read_columns``'): the first whose filled cells, 90 % or more of
    them, ``is_member`` takes for the files it reads (image names, ``.txt`` names); else None."""
    for name, cells in zip(header, columns):
        filled = [c for c in cells if c]
        if filled and sum(map(is_member, filled)) >= 0.9 * len(filled):
            return name
    return None


def check_csv(files: Sequence[str], schema: schema_pb2.Schema, required: Sequence[str],
              label: Optional["LabelValues"] = None) -> int:
    """Check header, required columns and numeric values; return the number of rows. ``label``:
    fed every row's cell of its column (pipeline/data/labels.py checks what it saw)."""
    numeric = {f.name: f.type for f in schema.feature
               if f.type in (schema_pb2.INT, schema_pb2.FLOAT)}
    rows = 0
    for path in files:
        if os.path.getsize(path) == 0:
            raise DataError(f"{path} is empty; it needs a header line and at least one data row")
        header, reader = csv_reader(path)
        missing = [c for c in required if c not in header]
        if missing:
            raise DataError(
                f"{path} lacks required column(s) {', '.join(missing)}; add them, or "
                "change the features in the config and the schema")
        checks: Dict[int, Tuple[str, int]] = {
            i: (name, numeric[name]) for i, name in enumerate(header) if name in numeric}
        label_at = header.index(label.column) if label is not None and label.column in header else None
        file_rows = 0
        try:
            for row in reader:
                line_no = reader.line_num
                if not row or row == [""]:
                    continue
                if len(row) != len(header):
                    raise DataError(
                        f"{path} line {line_no} has {len(row)} fields, the header has "
                        f"{len(header)}; fix the row (quote values that contain commas)")
                for i, (name, kind) in checks.items():
                    value = row[i].strip()
                    if value and not _parses(value, kind):
                        raise DataError(f"{path} line {line_no}: column {name!r} {_type_problem(value, kind)}")
                if label is not None and label_at is not None:
                    label.add(row[label_at])
                file_rows += 1
        except csv.Error as e:
            raise unreadable(path, e) from None
        if file_rows == 0:
            raise DataError(f"{path} has a header but no data rows; add rows or point --data elsewhere")
        rows += file_rows
    return rows


def _type_problem(value: str, kind: int) -> str:
    """Why a value does not fit its schema type, and the fix."""
    if kind == schema_pb2.INT and _parses(value, schema_pb2.FLOAT) and float(value).is_integer():
        return (f"is an integer column in the schema but holds {value!r}, an integral float (as pandas writes "
                "integer columns with missing values); write it as an integer, or make the column "
                "'type: FLOAT' in the schema")
    expected = "an integer" if kind == schema_pb2.INT else "a number"
    return f"needs {expected}, got {value!r}; fix the value or leave it empty (missing)"


_KINDS = {schema_pb2.INT: "int64_list", schema_pb2.FLOAT: "float_list", schema_pb2.BYTES: "bytes_list"}


def check_tfrecords(files: Sequence[str], schema: schema_pb2.Schema, required: Sequence[str],
                    sample: int = 1000) -> int:
    """Check the first ``sample`` records of each file: TFRecord framing, tf.Example
    payload, value types against the schema, required features present. Returns the
    number of records read."""
    import tensorflow as tf
    from google.protobuf.message import DecodeError

    expected = {f.name: _KINDS[f.type] for f in schema.feature if f.type in _KINDS}
    seen: set = set()
    records = 0
    for path in files:
        if os.path.getsize(path) == 0:
            raise DataError(f"{path} is empty; it needs at least one tf.Example record")
        compression = "GZIP" if path.endswith(".gz") else ""
        index = 0
        try:
            for index, record in enumerate(
                    tf.data.TFRecordDataset(path, compression_type=compression).take(sample), start=1):
                example = tf.train.Example.FromString(record.numpy())
                for name, feature in example.features.feature.items():
                    kind = feature.WhichOneof("kind")
                    if kind and name in expected and kind != expected[name]:
                        raise DataError(
                            f"{path} record {index}: feature {name!r} holds {kind}, the schema "
                            f"says {expected[name]}; fix the data or the schema")
                    seen.add(name)
                records += 1
        except tf.errors.OpError as e:
            raise DataError(
                f"{path} is not a readable {'GZIP ' if compression else ''}TFRecord file "
                f"({e.message.splitlines()[0]}); {_TFRECORD_FIX}") from None
        except DecodeError:
            raise DataError(f"{path} record {index} is not a tf.Example; {_TFRECORD_FIX}") from None
    if records == 0:
        raise DataError(f"no complete record in {', '.join(files)}; {_TFRECORD_FIX}")
    missing = [c for c in required if c not in seen]
    if missing:
        raise DataError(
            f"no tf.Example in the first {sample} records of each file has feature(s) "
            f"{', '.join(missing)}; add them, or change the features in the config and the schema")
    return records


def _parses(value: str, kind: int) -> bool:
    try:
        if kind == schema_pb2.INT:
            int(value)
        else:
            float(value)
        return True
    except ValueError:
        return False
