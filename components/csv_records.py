"""CsvExampleGen's reading of the CSV files people have (components/csv_example_gen.py): the
header read as a CSV line should be, the records by TFX's reader, a batch at a time.

TFX's executor takes the column names from ``first_line.strip().split(',')``
(``tfx.utils.io_utils.load_csv_column_names``), read as bytes straight from the file, so

- a UTF-8 byte-order mark (what Excel's "CSV UTF-8" writes) is glued to the first name, and
  the first column goes missing downstream ("lacks required column pickup_community_area");
- stray spaces around names stay in them; a quoted name holding a comma splits in two;
- a gzip-compressed CSV's header is read compressed, and its records fail to read at all.

``read_header`` reads the header through Beam's file systems (gzip by extension, as the records
are), decodes it as UTF-8 with or without a BOM, parses it with ``csv``, strips each name, and
refuses duplicate names in one line. The records go through TFX's reader and parser (CRLF line
ends, quoted fields holding commas, quotes and newlines, blank lines), read line by line so that
gzip works too (TFX's reader iterated the file, which Beam's gzip reader cannot).
"""
from __future__ import annotations

import csv
import hashlib
import io
from typing import List, Optional, Sequence, Tuple

import apache_beam as beam
from tfx.components.example_gen.csv_example_gen import executor as tfx_csv

# the examples' count of rows left out for an empty required cell: a Beam counter while the
# component runs (under the component's namespace, where it has always been), then the examples'
# custom property
DROPPED = "rows_without_label"
COUNTER_NAMESPACE = "components.csv_example_gen"


class CsvHeaderError(ValueError):
    """A CSV file's header cannot name the columns."""


def read_header(path: str) -> List[str]:
    """The column names of a CSV file, as ``csv`` reads its first line (BOM and surrounding
    spaces removed; gzip by extension)."""
    with beam.io.filesystems.FileSystems.open(path) as f:
        first = f.readline()
        while first.count(b'"') % 2:  # a quoted name holding a newline
            more = f.readline()
            if not more:
                break
            first += more
    text = first.decode("utf-8-sig")
    names = [name.strip() for name in next(csv.reader(io.StringIO(text)), [])]
    seen = set()
    duplicates = sorted({n for n in names if n in seen or seen.add(n)})
    if duplicates:
        raise CsvHeaderError(f"{path}: the header names column(s) {', '.join(duplicates)} more than once; "
                             "rename them so every column has its own name")
    return names


BATCH_ROWS = 20_000  # records per batch: parsed, typed and encoded together


def parse_records(records: List[str], column_names: List[str],
                  required: Sequence[int] = ()) -> Tuple[List[Tuple[bytes, ...]], int]:
    """(the cells of a batch of CSV records as columns (bytes, as TFX's ``ParseCSVLine`` gives
    them), the number of rows left out because a ``required`` column's cell is empty); blank
    records are skipped, as TFX's CsvExampleGen does."""
    columns, dropped, _ = parse_numbered(records, column_names, required)
    return columns, dropped


def parse_numbered(records: List[str], column_names: List[str], required: Sequence[int] = (),
                   first: int = 0) -> Tuple[List[Tuple[bytes, ...]], int, List[int]]:
    """``parse_records``, and the row number of each row kept: its place among the file's
    non-blank records, counted from ``first`` (the rows of the batches before this one); the
    batch's rows are numbered ``first`` to ``first + len(columns[0]) + dropped - 1``."""
    rows = [[cell.encode() for cell in row] for row in csv.reader(records) if row]
    for row in rows:
        if len(row) != len(column_names):
            raise ValueError(f"Columns do not match specified csv headers: {column_names} -> {row}")
    numbers = [first + i for i, row in enumerate(rows) if not required or all(row[j] for j in required)]
    kept = [rows[n - first] for n in numbers] if required else rows
    return (list(zip(*kept)) if kept else [() for _ in column_names]), len(rows) - len(kept), numbers


class ReadCsvBatches(beam.DoFn):
    """TFX's record reader (``_ReadCsvRecordsFromTextFile``: the lines after the header, joined
    while a quoted field spans lines), reading lines with ``readline``: it iterated the file,
    which Beam's gzip reader (CompressedFile) does not support ("'CompressedFile' object is not
    iterable"), so a .csv.gz failed. Found by tests/test_csv_input.py. Yields the records
    ``BATCH_ROWS`` at a time, parsed into columns."""

    def __init__(self, column_names: List[str], batch_rows: Optional[int] = None, required: Sequence[str] = (),
                 count_dropped: bool = True, split_keys: Optional[str] = None):
        self._column_names, self._batch_rows = column_names, batch_rows or BATCH_ROWS
        # None: yield the columns; POSITION or a column's name: yield (columns, each row's split key)
        self._split_keys = split_keys
        if split_keys not in (None, POSITION) and split_keys not in column_names:
            raise ValueError(f"the CSV lacks column {split_keys!r}, which data.split_key names")
        self._count_dropped = count_dropped  # False: a second pass over the same files (column types)
        missing = [c for c in required if c not in column_names]
        if missing:
            raise ValueError(f"the CSV lacks column(s) {', '.join(missing)}, whose empty cells leave rows out")
        self._required = [column_names.index(c) for c in required]
        self._dropped = beam.metrics.Metrics.counter(COUNTER_NAMESPACE, DROPPED)

    def _parse(self, records: List[str], first: int, file_key: bytes):
        """(what the batch yields, the number of rows it parsed)"""
        columns, dropped, numbers = parse_numbered(records, self._column_names, self._required, first)
        if dropped and self._count_dropped:
            self._dropped.inc(dropped)
        parsed = len(numbers) + dropped
        if self._split_keys is None:
            return columns, parsed
        if self._split_keys == POSITION:
            return (columns, [file_key + str(n).encode() for n in numbers]), parsed
        group = columns[self._column_names.index(self._split_keys)]
        # a row without a group value is a group of its own (its position)
        return (columns, [cell or file_key + str(n).encode() for cell, n in zip(group, numbers)]), parsed

    def process(self, csv_filepath: str):
        records, first = [], 0
        # A row's split key names its place: the file's content and the row's number in it. The
        # same files split the same way on every run; copies of a row are rows of their own.
        file_key = (file_digest(csv_filepath) + ":").encode() if self._split_keys is not None else b""
        with beam.io.filesystems.FileSystems.open(csv_filepath) as f:
            f.readline()  # the header
            buffer = tfx_csv._CsvLineBuffer()  # pylint: disable=protected-access
            for line in iter(f.readline, b""):
                text = line.decode("utf-8")
                if buffer.is_empty() and '"' not in text:
                    records.append(text)  # the common case: a record on one line
                else:
                    buffer.write(text)
                    if buffer.is_complete_line():
                        records.append(buffer.read())
                if len(records) >= self._batch_rows:
                    batch, parsed = self._parse(records, first, file_key)
                    yield batch
                    first += parsed
                    records = []
            if not buffer.is_empty():
                raise ValueError(f"Csv record had unbalanced quotes. File: {csv_filepath}")
        if records:
            yield self._parse(records, first, file_key)[0]


POSITION = ""  # ReadCsvBatches(split_keys=POSITION): each row's key is its place in its file


def file_digest(path: str) -> str:
    """The sha256 of a file's bytes (as stored: a .gz file's compressed bytes)."""
    digest = hashlib.sha256()
    with beam.io.filesystems.FileSystems.open(
            path, compression_type=beam.io.filesystem.CompressionTypes.UNCOMPRESSED) as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()[:32]
