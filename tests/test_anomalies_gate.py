"""The AnomaliesGate's executor on artifacts laid out as StatisticsGen and ExampleValidator
write them: schema anomalies, and the empty split TFDV does not report."""
import pytest
from tensorflow_metadata.proto.v0 import anomalies_pb2, statistics_pb2
from tfx.types import artifact_utils, standard_artifacts

from tfxline.components import anomalies_gate as gate

SPLITS = ("train", "validation", "eval")


def statistics(tmp_path, rows):
    artifact = standard_artifacts.ExampleStatistics()
    artifact.uri = str(tmp_path / "statistics")
    artifact.split_names = artifact_utils.encode_split_names(list(rows))
    for split, n in rows.items():
        folder = tmp_path / "statistics" / f"Split-{split}"
        folder.mkdir(parents=True)
        stats = statistics_pb2.DatasetFeatureStatisticsList(
            datasets=[statistics_pb2.DatasetFeatureStatistics(num_examples=n)])
        (folder / "FeatureStats.pb").write_bytes(stats.SerializeToString())
    return artifact


def anomalies(tmp_path, found=None):
    """An ExampleAnomalies artifact; ``found``: {split: feature} anomalies."""
    artifact = standard_artifacts.ExampleAnomalies()
    artifact.uri = str(tmp_path / "anomalies")
    artifact.split_names = artifact_utils.encode_split_names(list(SPLITS))
    for split in SPLITS:
        proto = anomalies_pb2.Anomalies()
        if found and split in found:
            proto.anomaly_info[found[split]].short_description = "Unexpected string values"
        folder = tmp_path / "anomalies" / f"Split-{split}"
        folder.mkdir(parents=True)
        (folder / gate.ANOMALIES_FILE).write_bytes(proto.SerializeToString())
    return artifact


def run(anomalies_artifact, statistics_artifact=None):
    inputs = {gate.ANOMALIES_KEY: [anomalies_artifact]}
    if statistics_artifact is not None:
        inputs[gate.STATISTICS_KEY] = [statistics_artifact]
    gate.Executor().Do(inputs, {}, {})


def test_split_sizes_read_what_statisticsgen_wrote(tmp_path):
    sizes = gate.split_sizes(statistics(tmp_path, {"train": 9, "validation": 0, "eval": 6}))
    assert sizes == {"train": 9, "validation": 0, "eval": 6}


def test_an_empty_split_stops_the_run_naming_it_and_the_fix(tmp_path):
    with pytest.raises(gate.DataAnomaliesError) as e:
        run(anomalies(tmp_path), statistics(tmp_path, {"train": 9, "validation": 0, "eval": 6}))
    message = str(e.value)
    assert message.startswith("the validation split holds no rows (the data has 15 rows, "
                              "hash-split train 9, validation 0, eval 6)")
    assert "data.validation_buckets" in message and "\n" not in message


def test_two_empty_splits_are_both_named(tmp_path):
    message = gate.empty_split_message({"train": 3, "validation": 0, "eval": 0})
    assert message.startswith("the validation split and the eval split hold no rows")


def test_an_empty_split_is_reported_before_the_anomalies_it_hides(tmp_path):
    """An empty split has no feature statistics, so ExampleValidator finds nothing wrong in it;
    the other splits' anomalies would only half-explain the data."""
    with pytest.raises(gate.DataAnomaliesError, match="the eval split holds no rows"):
        run(anomalies(tmp_path, {"train": "payment_type"}), statistics(tmp_path, {"train": 20, "validation": 3, "eval": 0}))


def test_rows_in_every_split_and_no_anomalies_pass(tmp_path):
    run(anomalies(tmp_path), statistics(tmp_path, {"train": 20, "validation": 3, "eval": 5}))
    run(anomalies(tmp_path / "no_statistics"))  # the statistics input is optional


def test_anomalies_are_named_by_split_and_feature(tmp_path):
    with pytest.raises(gate.DataAnomaliesError) as e:
        run(anomalies(tmp_path, {"eval": "payment_type"}), statistics(tmp_path, {"train": 20, "validation": 3, "eval": 5}))
    assert "(1 anomalies: eval: payment_type: Unexpected string values)" in str(e.value)


def test_an_anomaly_names_the_values_tfdv_found(tmp_path):
    """TFDV's description names the unexpected values; the error line carries it, and the way to
    see the schema change with this run's data."""
    artifact = anomalies(tmp_path, {"train": "payment_type"})
    path = tmp_path / "anomalies" / "Split-train" / gate.ANOMALIES_FILE
    proto = anomalies_pb2.Anomalies.FromString(path.read_bytes())
    proto.anomaly_info["payment_type"].description = "Examples contain values missing from the schema: Bitcoin (~2%)."
    path.write_bytes(proto.SerializeToString())
    with pytest.raises(gate.DataAnomaliesError) as e:
        run(artifact, statistics(tmp_path, {"train": 20, "validation": 3, "eval": 5}))
    assert ("train: payment_type: Unexpected string values (Examples contain values missing from the schema: "
            "Bitcoin (~2%))") in str(e.value)
    assert "tfxline schema draft --config CONFIG --data DATA --diff" in str(e.value)


def test_a_long_anomaly_description_is_shortened_to_one_readable_line():
    """TFDV lists every unexpected value; a text column's values are documents (a 100-review
    table's refusal was one 60,000-character line). The line keeps the start and says how long."""
    from tfxline.components.anomalies_gate import MAX_DESCRIPTION, _what

    long = "Examples contain values missing from the schema: " + ", ".join(["a whole review " * 20] * 30)
    line = _what("Unexpected string values", long)
    assert line.startswith("Unexpected string values (Examples contain values missing from the schema: a whole")
    assert len(line) < MAX_DESCRIPTION + 80 and line.endswith(f"... ({len(long.strip())} characters))")
    assert _what("Missing values", "Short.") == "Missing values (Short)"
