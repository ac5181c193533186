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
    rows = [[cell.encode() for cell in row] for row in csv.reader(records) if row]
    for row in rows:
        if len(row) != len(column_names):
            raise ValueError(f"Columns do not match specified csv headers: {column_names} -> {row}")
    kept = [row for row in rows if all(row[i] for i in required)] if required else rows
    return (list(zip(*kept)) if kept else [() for _ in column_names]), len(rows) - len(kept)


class ReadCsvBatches(beam.DoFn):
    """TFX's record reader (``_ReadCsvRecordsFromTextFile``: the lines after the header, joined
    while a quoted field spans lines), reading lines with ``readline``: it iterated the file,
    which Beam's gzip reader (CompressedFile) does not support ("'CompressedFile' object is not
    iterable"), so a .csv.gz failed. Found by tests/test_csv_input.py. Yields the records
    ``BATCH_ROWS`` at a time, parsed into columns."""

    def __init__(self, column_names: List[str], batch_rows: Optional[int] = None, required: Sequence[str] = (),
                 count_dropped: bool = True):
        self._column_names, self._batch_rows = column_names, batch_rows or BATCH_ROWS
        self._count_dropped = count_dropped  # False: a second pass over the same files (column types)
        missing = [c for c in required if c not in column_names]
        if missing:
            raise ValueError(f"the CSV lacks column(s) {', '.join(missing)}, whose empty cells leave rows out")
        self._required = [column_names.index(c) for c in required]
        self._dropped = beam.metrics.Metrics.counter(COUNTER_NAMESPACE, DROPPED)

    def _parse(self, records: List[str]):
        columns, dropped = parse_records(records, self._column_names, self._required)
        if dropped and self._count_dropped:
            self._dropped.inc(dropped)
        return columns

    def process(self, csv_filepath: str):
        records = []
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
                    yield self._parse(records)
                    records = []
            if not buffer.is_empty():
                raise ValueError(f"Csv record had unbalanced quotes. File: {csv_filepath}")
        if records:
            yield self._parse(records)
