"""DriftGate (components/drift_gate.py) on real TFDV statistics of taxi rows: the executor
called directly, the reference found through a serving directory as the Pusher leaves it."""
import json
import os

import pandas as pd
import pytest
import tensorflow_data_validation as tfdv
from tfx.types import artifact_utils, standard_artifacts

from components import drift_gate as dg
from components.serving_push import METADATA_FILE
from pipeline import data_source
from pipeline.config_loader import load_config
from pipeline.factory import drift_thresholds
from tests.conftest import write_taxi_slice


def statistics(tmp_path, name, rows):
    """A StatisticsGen-like artifact directory holding TFDV statistics of ``rows`` (train split)."""
    stats = tfdv.generate_statistics_from_dataframe(rows)
    uri = tmp_path / name
    os.makedirs(uri / "Split-train")
    (uri / "Split-train" / "FeatureStats.pb").write_bytes(stats.SerializeToString())
    artifact = standard_artifacts.ExampleStatistics()
    artifact.uri, artifact.split_names = str(uri), artifact_utils.encode_split_names(["train"])
    return artifact


def serving_with_reference(tmp_path, reference):
    serving = tmp_path / "serving"
    os.makedirs(serving / "7")
    (serving / "7" / METADATA_FILE).write_text(json.dumps({"data": {"statistics_uri": reference.uri}}))
    return str(serving)


@pytest.fixture(scope="module")
def taxi(tmp_path_factory):
    root = tmp_path_factory.mktemp("drift")
    frame = lambda offset: pd.read_csv(write_taxi_slice(root / f"{offset}.csv", every=5 + offset))  # noqa: E731
    schema = standard_artifacts.Schema()
    schema.uri = str(root / "schema")
    os.makedirs(schema.uri)
    with open(data_source.schema_path("taxi")) as src, open(os.path.join(schema.uri, "schema.pbtxt"), "w") as dst:
        dst.write(src.read())
    return frame(0), frame(2), schema


def gate(tmp_path, new, schema, serving_dir, cfg=None):
    out = standard_artifacts.ExampleAnomalies()
    out.uri = str(tmp_path / "out")
    dg.Executor().Do({"statistics": [new], "schema": [schema]}, {"drift_anomalies": [out]},
                     {"serving_dir": serving_dir, "thresholds": json.dumps(drift_thresholds(cfg or load_config()))})
    return out


def test_fare_times_fifty_is_stopped_and_named(taxi, tmp_path):
    old, new, schema = taxi
    drifted = new.assign(fare=new["fare"] * 50)
    serving = serving_with_reference(tmp_path, statistics(tmp_path, "ref", old))
    with pytest.raises(dg.DataDriftError) as err:
        gate(tmp_path, statistics(tmp_path, "new", drifted), schema, serving)
    message = str(err.value)
    assert "drifted from serving version 7's training data" in message
    assert "fare: Jensen-Shannon divergence" in message and "> 0.2" in message
    assert "payment_type" not in message  # only what moved is named
    assert "--set drift.enabled=false" in message


def test_same_distribution_passes_and_says_what_it_compared(taxi, tmp_path):
    old, new, schema = taxi
    serving = serving_with_reference(tmp_path, statistics(tmp_path, "ref", old))
    out = gate(tmp_path, statistics(tmp_path, "new", new), schema, serving)
    assert out.get_string_custom_property("compared_with") == "serving version 7's training data"
    assert out.get_int_custom_property("drifted") == 0


def test_per_feature_threshold_and_switch(taxi, tmp_path):
    old, new, schema = taxi
    drifted = new.assign(fare=new["fare"] * 50)
    serving = serving_with_reference(tmp_path, statistics(tmp_path, "ref", old))
    loose = load_config(overrides=["drift.features={fare: 0}"])  # fare not checked
    assert gate(tmp_path, statistics(tmp_path, "n1", drifted), schema, serving, loose) \
        .get_int_custom_property("drifted") == 0
    off = gate(tmp_path / "off", statistics(tmp_path, "n2", drifted), schema, serving,
               load_config(overrides=["drift.enabled=false"]))
    assert off.get_string_custom_property("compared_with") == "not checked: drift.enabled is false"


def test_first_run_has_nothing_to_compare_with(taxi, tmp_path):
    _, new, schema = taxi
    out = gate(tmp_path, statistics(tmp_path, "new", new), schema, str(tmp_path / "empty-serving"))
    assert out.get_string_custom_property("compared_with") == "nothing to compare with: nothing serving yet"
