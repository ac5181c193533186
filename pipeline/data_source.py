"""Where the data and schema are, and a fast pre-flight check of the CSV input.

The pre-flight check turns the common mistakes (missing path, empty file, missing column,
text in a numeric column) into one-line errors that name the file, line and fix, before
any component runs. Anything subtler is ExampleValidator's job inside the pipeline.
"""
from __future__ import annotations

import csv
import glob
import os
from importlib import resources
from typing import Dict, List, Sequence, Tuple

from tensorflow_metadata.proto.v0 import schema_pb2
from google.protobuf import text_format


class DataError(ValueError):
    """The input data cannot be used as it is."""


def default_data_path() -> str:
    """The Chicago taxi CSV shipped inside the installed tfx package."""
    path = resources.files("tfx") / "examples" / "chicago_taxi_pipeline" / "data" / "simple" / "data.csv"
    if not path.is_file():
        raise DataError(f"the taxi CSV is not in the installed tfx package ({path}); "
                        "reinstall tfx 1.16 or pass --data PATH")
    return str(path)


def split_data_path(path: str) -> Tuple[str, str]:
    """(input_base directory, file pattern) for CsvExampleGen from a file or directory."""
    if os.path.isdir(path):
        return path, "*.csv"
    return os.path.dirname(path), os.path.basename(path)


def csv_files(path: str) -> List[str]:
    if not os.path.exists(path):
        raise DataError(f"data path {path} does not exist; pass an existing CSV file or directory with --data")
    if os.path.isdir(path):
        files = sorted(glob.glob(os.path.join(path, "*.csv")))
        if not files:
            raise DataError(f"data directory {path} holds no *.csv files; point --data at a CSV file or a directory of them")
        return files
    return [path]


def schema_path(name_or_path: str) -> str:
    if name_or_path.endswith(".pbtxt") or os.sep in name_or_path:
        path = name_or_path
    else:
        path = str(resources.files("schema") / f"{name_or_path}.pbtxt")
    if not os.path.isfile(path):
        raise DataError(
            f"schema {path} does not exist; draft one from the data with "
            f"'tfxline schema draft --data PATH --output {path}', review it, and commit it")
    return path


def load_schema(path: str) -> schema_pb2.Schema:
    with open(path) as f:
        return text_format.Parse(f.read(), schema_pb2.Schema())


def check_csv(files: Sequence[str], schema: schema_pb2.Schema, required: Sequence[str]) -> int:
    """Check header, required columns and numeric values; return the number of rows."""
    numeric = {f.name: f.type for f in schema.feature
               if f.type in (schema_pb2.INT, schema_pb2.FLOAT)}
    rows = 0
    for path in files:
        if os.path.getsize(path) == 0:
            raise DataError(f"{path} is empty; it needs a header line and at least one data row")
        with open(path, newline="") as f:
            reader = csv.reader(f)
            try:
                header = next(reader)
            except StopIteration:
                raise DataError(f"{path} is empty; it needs a header line and at least one data row") from None
            except csv.Error as e:
                raise DataError(f"{path} is not a readable CSV ({e}); fix the file") from None
            missing = [c for c in required if c not in header]
            if missing:
                raise DataError(
                    f"{path} lacks required column(s) {', '.join(missing)}; add them, or "
                    "change the features in the config and the schema")
            checks: Dict[int, Tuple[str, int]] = {
                i: (name, numeric[name]) for i, name in enumerate(header) if name in numeric}
            file_rows = 0
            try:
                for line_no, row in enumerate(reader, start=2):
                    if not row:
                        continue
                    if len(row) != len(header):
                        raise DataError(
                            f"{path} line {line_no} has {len(row)} fields, the header has "
                            f"{len(header)}; fix the row (quote values that contain commas)")
                    for i, (name, kind) in checks.items():
                        value = row[i]
                        if value and not _parses(value, kind):
                            expected = "an integer" if kind == schema_pb2.INT else "a number"
                            raise DataError(
                                f"{path} line {line_no}: column {name!r} needs {expected}, got "
                                f"{value!r}; fix the value or leave it empty (missing)")
                    file_rows += 1
            except csv.Error as e:
                raise DataError(f"{path} is not a readable CSV ({e}); fix the file") from None
            if file_rows == 0:
                raise DataError(f"{path} has a header but no data rows; add rows or point --data elsewhere")
            rows += file_rows
    return rows


def _parses(value: str, kind: int) -> bool:
    try:
        if kind == schema_pb2.INT:
            int(value)
        else:
            float(value)
        return True
    except ValueError:
        return False
