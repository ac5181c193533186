"""A drafted schema accepts the file it was drafted from (issue #48): on generated CSVs with
empty cells (hypothesis), the statistics of the examples CsvExampleGen's own Beam transform
writes for the file validate against the schema ``tfxline schema draft`` drafts from it, with
no anomaly. The old draft (TFDV's CSV reader) made every column with an empty cell required
(``value_count {min: 1}``), and the run refused its own data ("Missing values")."""
import csv
import io

import apache_beam as beam
import pytest
import tensorflow_data_validation as tfdv
from hypothesis import HealthCheck, given, settings, strategies as st
from tensorflow_metadata.proto.v0 import schema_pb2

from tfxline.components import csv_example_gen
from tfxline.cli import schema_draft as schema_tools
from tfxline.pipeline.data.source import DataError

NUMBER = st.one_of(st.integers(-1000, 10**6).map(str), st.floats(-1e5, 1e5, allow_nan=False).map(lambda x: repr(round(x, 3))),
                   st.integers(0, 99).map(lambda i: f"{i}.0"))  # integers as pandas writes them beside empty cells
WORD = st.sampled_from(["yes", "no", "Credit Card", "a,b", 'say "hi"', "Ü", "x y"])
CELL = {"number": NUMBER, "word": WORD}


@st.composite
def tables(draw):
    kinds = draw(st.lists(st.sampled_from(["number", "word", "empty"]), min_size=1, max_size=4))
    n = draw(st.integers(1, 25))
    columns = []
    for kind in kinds:
        if kind == "empty":  # a column empty in every row
            columns.append([""] * n)
            continue
        share = draw(st.sampled_from([0.0, 0.2, 0.9]))  # how many of its cells are empty
        cells = [draw(CELL[kind]) for _ in range(n)]
        columns.append(["" if (i * 7 % 10) < share * 10 else c for i, c in enumerate(cells)])
    # a row of empty cells only is a blank line, which CSV readers skip: every row holds a value
    columns.append([draw(WORD) for _ in range(n)])
    return [f"c{i}" for i in range(len(columns))], columns, draw(st.booleans())


def write(path, header, columns, excel):
    out = io.StringIO()
    csv.writer(out, lineterminator="\r\n" if excel else "\n").writerows([header] + [list(r) for r in zip(*columns)])
    path.write_bytes(("\ufeff" if excel else "").encode() + out.getvalue().encode())
    return str(path)


def pipeline_statistics(path):
    """Statistics of the examples CsvExampleGen's transform writes (its Beam transform, run)."""
    import tensorflow as tf
    from tensorflow_data_validation.statistics import stats_impl, stats_options
    from tfx_bsl.coders import example_coder

    prefix = str(path.parent / "examples")
    with beam.Pipeline() as p:
        _ = (p | csv_example_gen._CsvToExample({"input_base": str(path.parent)}, path.name)
             | beam.FlatMap(lambda batch: batch) | beam.io.WriteToTFRecord(prefix))
    records = [r.numpy() for r in tf.data.TFRecordDataset(tf.io.gfile.glob(prefix + "*"))]
    assert len(records) == len(path.read_text(encoding="utf-8-sig").strip().splitlines()) - 1
    batch = example_coder.ExamplesToRecordBatchDecoder().DecodeBatch(records)
    return stats_impl.generate_statistics_in_memory(batch, stats_options.StatsOptions())


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(table=tables())
def test_a_draft_accepts_its_own_csv(tmp_path, table):
    header, columns, excel = table
    path = tmp_path / "data.csv"
    write(path, header, columns, excel)
    schema = schema_tools.infer_schema(str(path))
    anomalies = tfdv.validate_statistics(pipeline_statistics(path), schema)
    assert not anomalies.anomaly_info, {k: v.description for k, v in anomalies.anomaly_info.items()}
    for name, column in zip(header, columns):
        if any(column) and not all(column):  # a column with empty cells is optional in the draft
            feature = next(f for f in schema.feature if f.name == name)
            assert feature.value_count.min == 0


def test_a_draft_accepts_the_next_files_empty_cells_and_serving_requests_without_them(tmp_path):
    """Every drafted column is optional (no fixed shape, at most one value): a column full on the
    first day may have empty cells on the next (the AnomaliesGate validates them against the draft),
    and the model's parse spec, which the schema makes, takes a request that omits it."""
    from tensorflow_transform.tf_metadata import schema_utils

    header = ["n", "word", "x"]
    full = [[str(i) for i in range(40)], ["yes", "no"] * 20, [f"{i / 3:.2f}" for i in range(40)]]
    day1 = tmp_path / "day1"
    day1.mkdir()
    schema = schema_tools.infer_schema(write(day1 / "data.csv", header, full, False))
    assert all(not f.HasField("shape") and (f.value_count.min, f.value_count.max) == (0, 1) for f in schema.feature)
    day2 = tmp_path / "day2"
    day2.mkdir()
    gaps = [["" if i % 5 == k else c for i, c in enumerate(column)] for k, column in enumerate(full)]
    write(day2 / "data.csv", header, gaps, False)
    anomalies = tfdv.validate_statistics(pipeline_statistics(day2 / "data.csv"), schema)
    assert not anomalies.anomaly_info, {k: v.description for k, v in anomalies.anomaly_info.items()}
    spec = schema_utils.schema_as_feature_spec(schema).feature_spec
    assert all(type(f).__name__ == "VarLenFeature" for f in spec.values()), spec


def test_the_draft_reads_the_csvs_people_have(tmp_path):
    """BOM, CRLF, quoted commas, gzip: the column names and types CsvExampleGen gives."""
    import gzip

    text = '\ufeffage,name,label\r\n81.0,"Doe, J",yes\r\n,Roe,no\r\n40.0,,\r\n'
    path = tmp_path / "t.csv.gz"
    path.write_bytes(gzip.compress(text.encode()))
    schema = schema_tools.infer_schema(str(path))
    types = {f.name: f.type for f in schema.feature}
    assert types == {"age": schema_pb2.FLOAT, "name": schema_pb2.BYTES, "label": schema_pb2.BYTES}


def test_a_ragged_csv_is_refused_in_one_line(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("a,b\n1,2\n3\n")
    with pytest.raises(DataError, match=r"line 3 has 1 fields, the header has 2; fix the row"):
        schema_tools.infer_schema(str(path))


def test_a_draft_replaces_a_schema_only_with_force(tmp_path):
    """--schema-output onto the configured schema (a new user adopting a draft) refuses without
    --force, before drafting, and leaves the file as it was; with --force it writes the draft."""
    from tests.conftest import tfxline

    data = tmp_path / "t.csv"
    data.write_text("age,name,label\n81.0,Doe,yes\n40.0,Roe,no\n")
    schema = tmp_path / "schema.pbtxt"
    curated = '# reviewed by hand\nfeature { name: "age" type: FLOAT }\n'
    schema.write_text(curated)
    args = ("schema", "draft", "--data", str(data), "--set", f"data.schema={schema}", "--schema-output", str(schema))
    refused = tfxline(*args)
    assert refused.returncode == 2 and schema.read_text() == curated
    assert refused.stderr.strip().splitlines()[-1] == (
        f"error: {schema} (the configured schema, data.schema) exists; pass --force to replace it with the draft "
        "(what was reviewed in it is lost), or --diff to see what the draft would change")
    replaced = tfxline(*args, "--force")
    assert replaced.returncode == 0, replaced.stderr
    assert "review it, then the runs read it (data.schema)" in replaced.stdout
    assert {f.name for f in schema_tools.data_source.load_schema(str(schema)).feature} == {"age", "name", "label"}
