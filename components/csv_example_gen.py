"""CsvExampleGen for the CSV files people have: TFX's own component and record reader, with the
header read as a CSV line should be.

TFX's executor takes the column names from ``first_line.strip().split(',')``
(``tfx.utils.io_utils.load_csv_column_names``), read as bytes straight from the file, so

- a UTF-8 byte-order mark (what Excel's "CSV UTF-8" writes) is glued to the first name, and
  the first column goes missing downstream ("lacks required column pickup_community_area");
- stray spaces around names stay in them; a quoted name holding a comma splits in two;
- a gzip-compressed CSV's header is read compressed, and its records fail to read at all.

This executor reads the header through Beam's file systems (gzip by extension, as the
records are), decodes it as UTF-8 with or without a BOM, parses it with ``csv``, strips each
name, and refuses duplicate names in one line. The records go through TFX's reader and parser
(CRLF line ends, quoted fields holding commas, quotes and newlines, blank lines), read line by
line so that gzip works too (TFX's reader iterated the file, which Beam's gzip reader cannot).
"""
from __future__ import annotations

import csv
import io
from typing import List

import apache_beam as beam
from tfx.components.example_gen.csv_example_gen import executor as tfx_csv
from tfx.dsl.components.base import executor_spec
from tfx.dsl.io import fileio
from tfx.v1.components import CsvExampleGen as TfxCsvExampleGen
from tfx_bsl.coders import csv_decoder


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


class _ReadCsvRecords(beam.DoFn):
    """TFX's record reader (``_ReadCsvRecordsFromTextFile``: the lines after the header, joined
    while a quoted field spans lines), reading lines with ``readline``: it iterated the file,
    which Beam's gzip reader (CompressedFile) does not support ("'CompressedFile' object is not
    iterable"), so a .csv.gz failed. Found by tests/test_csv_input.py."""

    def process(self, csv_filepath: str):
        with beam.io.filesystems.FileSystems.open(csv_filepath) as f:
            f.readline()  # the header
            buffer = tfx_csv._CsvLineBuffer()  # pylint: disable=protected-access
            for line in iter(f.readline, b""):
                buffer.write(line.decode("utf-8"))
                if buffer.is_complete_line():
                    yield buffer.read()
            if not buffer.is_empty():
                raise ValueError(f"Csv record had unbalanced quotes. File: {csv_filepath}")


class _CsvToExample(tfx_csv._CsvToExample):  # pylint: disable=protected-access
    """TFX's transform, with the header read by ``read_header``."""

    def expand(self, pipeline: beam.Pipeline):
        csv_files = fileio.glob(self._csv_pattern)
        if not csv_files:
            raise RuntimeError(f"Split pattern {self._csv_pattern} does not match any files.")
        column_names = read_header(csv_files[0])
        for path in csv_files[1:]:
            if read_header(path) != column_names:
                raise RuntimeError(f"Files in same split {self._csv_pattern} have different header.")
        parsed = (pipeline
                  | "CreateFilenames" >> beam.Create(csv_files)
                  | "ReadFromText" >> beam.ParDo(_ReadCsvRecords())
                  | "ParseCSVLine" >> beam.ParDo(csv_decoder.ParseCSVLine(delimiter=","))
                  | "ExtractParsedCSVLines" >> beam.Keys())
        column_infos = beam.pvalue.AsSingleton(
            parsed | "InferColumnTypes" >> beam.CombineGlobally(
                csv_decoder.ColumnTypeInferrer(column_names, skip_blank_lines=True)))
        return parsed | "ToTFExample" >> beam.ParDo(tfx_csv._ParsedCsvToTfExample(), column_infos)  # pylint: disable=protected-access


class Executor(tfx_csv.Executor):
    def GetInputSourceToExamplePTransform(self) -> beam.PTransform:
        return _CsvToExample


class CsvExampleGen(TfxCsvExampleGen):
    """TFX's CsvExampleGen (same id, spec, outputs and driver) with ``Executor``."""

    EXECUTOR_SPEC = executor_spec.BeamExecutorSpec(Executor)
