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

import array
import csv
import hashlib
import io
from typing import List, Optional, Sequence, Tuple

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems
from apache_beam.metrics.metric import Metrics
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
    with FileSystems.open(path) as f:
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
    rows = [[cell.encode() for cell in row] for row in csv.reader(records) if row]
    for row in rows:
        if len(row) != len(column_names):
            raise ValueError(f"Columns do not match specified csv headers: {column_names} -> {row}")
    kept = [row for row in rows if all(row[i] for i in required)] if required else rows
    return (list(zip(*kept)) if kept else [() for _ in column_names]), len(rows) - len(kept)


COPIES = ""  # ReadCsvBatches(split_keys=COPIES): each row's count of earlier equal rows in its file
COPY_SLOTS = 1 << 25  # Copies' table: 2 bytes a slot, 64 MB a file being read, whatever its rows


class Copies:
    """How many earlier rows of a file were equal to each row: a fixed table of counters indexed
    by a hash of the row, so memory stays flat at any row count. Two different rows that share a
    slot (about rows / 2^26 of them: 1.5 % at a million rows) count as copies of each other;
    either way the count is the same on every read of the same file, and of any file that
    starts with the same rows (a file grown at its end)."""

    def __init__(self):
        self._counts = array.array("H", bytes(2 * COPY_SLOTS))

    def of(self, columns: Sequence[Sequence[bytes]]) -> List[int]:
        out = []
        counts = self._counts
        for row in zip(*columns):
            slot = int.from_bytes(hashlib.blake2b(b"\x1f".join(row), digest_size=8).digest(), "big") % COPY_SLOTS
            n = counts[slot]
            out.append(n)
            counts[slot] = min(n + 1, 65535)
        return out


class ReadCsvBatches(beam.DoFn):
    """TFX's record reader (``_ReadCsvRecordsFromTextFile``: the lines after the header, joined
    while a quoted field spans lines), reading lines with ``readline``: it iterated the file,
    which Beam's gzip reader (CompressedFile) does not support ("'CompressedFile' object is not
    iterable"), so a .csv.gz failed. Found by tests/test_csv_input.py. Yields the records
    ``BATCH_ROWS`` at a time, parsed into columns."""

    def __init__(self, column_names: List[str], batch_rows: Optional[int] = None, required: Sequence[str] = (),
                 count_dropped: bool = True, split_keys: Optional[str] = None):
        self._column_names, self._batch_rows = column_names, batch_rows or BATCH_ROWS
        # None: yield the columns; COPIES or a column's name: (columns, each row's split hint): its
        # count of earlier equal rows (int), or its group's value (bytes; a row without one: its count)
        self._split_keys = split_keys
        if split_keys not in (None, COPIES) and split_keys not in column_names:
            raise ValueError(f"the CSV lacks column {split_keys!r}, which data.split_key names")
        self._count_dropped = count_dropped  # False: a second pass over the same files (column types)
        missing = [c for c in required if c not in column_names]
        if missing:
            raise ValueError(f"the CSV lacks column(s) {', '.join(missing)}, whose empty cells leave rows out")
        self._required = [column_names.index(c) for c in required]
        self._dropped = Metrics.counter(COUNTER_NAMESPACE, DROPPED)

    def _parse(self, records: List[str], copies: Optional[Copies]):
        columns, dropped = parse_records(records, self._column_names, self._required)
        if dropped and self._count_dropped:
            self._dropped.inc(dropped)
        if copies is None or self._split_keys is None:  # one is None when the other is
            return columns
        counts = copies.of(columns)
        if self._split_keys == COPIES:
            return columns, counts
        group = columns[self._column_names.index(self._split_keys)]
        return columns, [cell or n for cell, n in zip(group, counts)]

    def process(self, csv_filepath: str):
        records = []
        copies = Copies() if self._split_keys is not None else None
        with FileSystems.open(csv_filepath) as f:
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
                    yield self._parse(records, copies)
                    records = []
            if not buffer.is_empty():
                raise ValueError(f"Csv record had unbalanced quotes. File: {csv_filepath}")
        if records:
            yield self._parse(records, copies)


def split_key(record: bytes, hint) -> bytes:
    """The bytes a record's split is hashed from: its group's value (bytes), else the record
    itself for its first copy in its file (TFX's key: a row that appears once lands where TFX's
    CsvExampleGen puts it) and the record with its copy number for the others, so copies of a row
    spread over the splits as different rows do."""
    if isinstance(hint, bytes):
        return hint
    return record if not hint else record + b"\x00copy %d" % hint
