"""The CSVs people have, generated (hypothesis): one small table written every way a user's
tools write it (UTF-8 with or without a byte-order mark, CRLF or LF, spaces around header
names, a blank last line, gzip; fields holding commas, quotes and newlines), with or without
one fault (another delimiter, a Latin-1 byte, a duplicate header name, an integral float in an
integer column, a missing column). Each variant is either read with the clean file's values,
by the pre-flight check and by CsvExampleGen's transform (components/csv_example_gen.py), or
refused with one DataError that names its real cause; never another exception, never the wrong
column."""
import csv
import gzip
import io
import os

import apache_beam as beam
import pytest
import tensorflow as tf
from hypothesis import HealthCheck, example, given, settings, strategies as st
from tensorflow_metadata.proto.v0 import schema_pb2

from tfxline.components import csv_example_gen, csv_records
from tfxline.pipeline.data.source import DataError, check_csv
from tfxline.pipeline.data.examples import read_csv_rows

COLUMNS = ("trips", "fare", "company")
SCHEMA = schema_pb2.Schema(feature=[
    schema_pb2.Feature(name="trips", type=schema_pb2.INT),
    schema_pb2.Feature(name="fare", type=schema_pb2.FLOAT),
    schema_pb2.Feature(name="company", type=schema_pb2.BYTES)])
FAULTS = (None, "semicolons", "latin-1", "duplicate", "integral float", "missing column")
TEXT = st.text(alphabet=st.sampled_from('abcxyz ,"\n-Ü'), min_size=1, max_size=8).filter(lambda t: t.strip() == t)
ROW = st.tuples(st.integers(-5, 10_000), st.floats(0, 1e4, allow_nan=False).map(lambda x: round(x, 3)), TEXT)


@st.composite
def variants(draw):
    return {"rows": draw(st.lists(ROW, min_size=1, max_size=6)), "bom": draw(st.booleans()),
            "crlf": draw(st.booleans()), "header_spaces": draw(st.booleans()),
            "blank_last_line": draw(st.booleans()), "gzip": draw(st.booleans()),
            "fault": draw(st.sampled_from(FAULTS))}


def write(directory, v):
    header = list(COLUMNS)
    rows = [[str(t), repr(f), c] for t, f, c in v["rows"]]
    fault = v["fault"]
    if fault == "duplicate":
        header[2] = "fare"
    if fault == "missing column":
        header, rows = header[:2], [r[:2] for r in rows]
    if fault == "integral float":
        rows[-1][0] = f"{v['rows'][-1][0]}.0"
    if v["header_spaces"]:
        header = [f" {h} " for h in header]
    out = io.StringIO()
    terminator = "\r\n" if v["crlf"] else "\n"
    csv.writer(out, delimiter=";" if fault == "semicolons" else ",", lineterminator=terminator).writerows(
        [header] + rows)
    text = out.getvalue() + (terminator if v["blank_last_line"] else "")
    data = ("\ufeff" if v["bom"] else "").encode() + text.encode("utf-8")
    if fault == "latin-1":
        data = data.replace(b"\n", b"\n\xe9", 1)  # one Latin-1 byte at the start of line 2
    path = os.path.join(directory, "data.csv.gz" if v["gzip"] else "data.csv")
    with (gzip.open if v["gzip"] else open)(path, "wb") as f:
        f.write(data)
    return path


CAUSES = {"semicolons": "looks delimited by semicolons", "latin-1": "line 2 byte 1 (0xe9) is not UTF-8",
          "duplicate": "names column(s) fare more than once", "missing column": "lacks required column(s) company",
          "integral float": "column 'trips' is an integer column in the schema but holds"}


EVERYTHING = {"rows": [(1, 2.5, 'a,"b"\nc'), (7, 0.0, "Ü x")], "bom": True, "crlf": True, "header_spaces": True,
              "blank_last_line": True, "gzip": True, "fault": None}


def expected_rows(v):
    return [{"trips": str(t), "fare": repr(f), "company": c} for t, f, c in v["rows"]]


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(v=variants())
@example(v=EVERYTHING)
def test_the_pre_flight_check_reads_or_names_the_cause(tmp_path_factory, v):
    path = write(str(tmp_path_factory.mktemp("csv")), v)
    if v["fault"] is None:
        assert check_csv([path], SCHEMA, COLUMNS) == len(v["rows"])
        assert list(read_csv_rows(path)) == expected_rows(v)
        return
    with pytest.raises(DataError) as refused:
        check_csv([path], SCHEMA, COLUMNS)
    message = str(refused.value)
    assert CAUSES[v["fault"]] in message and "\n" not in message, message
    assert message.startswith(path), message


def examples_from(path):
    """CsvExampleGen's transform on one file, in Beam: {column: [values]} per example. The
    examples go through files: a Beam runner may run its workers on pickled copies (Beam 2.77
    does), so nothing is collected from a closure."""
    # The FnApiRunner, as the pipeline's local runs pin it (pipeline/beam/stack_compat.py): Beam
    # 2.68+'s default DirectRunner tries Prism first.
    from apache_beam.runners.portability.fn_api_runner import fn_runner

    directory, name = os.path.split(path)
    prefix = os.path.join(directory, "examples")
    with beam.Pipeline(runner=fn_runner.FnApiRunner()) as p:
        _ = (p | csv_example_gen._CsvToExample({"input_base": directory}, name)
             | beam.FlatMap(lambda batch: batch)  # batches of serialized tf.Examples
             | beam.io.WriteToTFRecord(prefix))
    files = tf.io.gfile.glob(prefix + "*")
    records = [r.numpy() for r in tf.data.TFRecordDataset(files)] if files else []
    return [{k: _values(f) for k, f in tf.train.Example.FromString(r).features.feature.items()} for r in records]


def _values(feature: tf.train.Feature):
    kind = feature.WhichOneof("kind")
    values = list(getattr(feature, kind).value) if kind else []
    return [v.decode() if isinstance(v, bytes) else v for v in values]


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(v=variants().filter(lambda v: v["fault"] is None))
@example(v=EVERYTHING)
def test_csv_example_gen_reads_every_clean_variant_like_the_clean_file(tmp_path_factory, v):
    """The header through components/csv_records.read_header, the records through TFX's reader:
    the column names without BOM or spaces, the values as written (TFX infers each column's type
    from its values, as for any CSV)."""
    got = examples_from(write(str(tmp_path_factory.mktemp("csv")), v))
    want = expected_rows(v)
    assert len(got) == len(want)
    assert all(set(e) == set(COLUMNS) for e in got)  # no BOM glued to a name, no stray spaces
    assert sorted(str(e["company"][0]) for e in got) == sorted(r["company"] for r in want)
    assert sorted(e["trips"][0] for e in got) == sorted(int(r["trips"]) for r in want)
    for e in got:
        assert e["fare"][0] == pytest.approx(float(next(r["fare"] for r in want
                                                           if int(r["trips"]) == e["trips"][0]
                                                           and r["company"] == e["company"][0])), rel=1e-6)


def test_a_duplicate_header_is_refused_by_csv_example_gen_too(tmp_path):
    path = tmp_path / "dup.csv"
    path.write_text("a,b,a\n1,2,3\n")
    with pytest.raises(csv_records.CsvHeaderError, match="names column\\(s\\) a more than once"):
        csv_records.read_header(str(path))


def test_bare_carriage_returns_are_named_by_line_and_count_with_a_fix_that_works(tmp_path):
    """Carriage returns inside unquoted fields (a message table's text, pasted from an old Mac
    file): csv's own error ("new-line character seen in unquoted field ... universal-newline
    mode?") names no line and no fix. The pre-flight names the first line and the count, and the
    sed command it prints makes a file both the pre-flight and CsvExampleGen read."""
    import re
    import subprocess

    path = tmp_path / "messages.csv"
    path.write_bytes(b"trips,fare,company\r\n1,2.5,Flash\r\n2,3.0,Cab\rCo\r\n3,1.0,A\rB\rC\r\n")
    with pytest.raises(DataError) as refused:
        check_csv([str(path)], SCHEMA, COLUMNS)
    message = str(refused.value)
    assert f"{path} line 3 has a carriage return inside an unquoted field (3 such" in message and "\n" not in message
    with pytest.raises(Exception, match="new-line character seen in unquoted field"):  # CsvExampleGen refuses it too
        examples_from(str(path))
    command = re.search(r"Replace them with spaces: (sed .*) > fixed\.csv", message).group(1)
    fixed = tmp_path / "fixed" / "messages.csv"
    fixed.parent.mkdir()
    fixed.write_bytes(subprocess.run(command, shell=True, check=True, capture_output=True).stdout)
    assert check_csv([str(fixed)], SCHEMA, COLUMNS) == 3
    assert sorted(e["company"][0] for e in examples_from(str(fixed))) == ["A B C", "Cab Co", "Flash"]
