"""DriftGate (components/drift_gate.py) on real TFDV statistics of taxi rows: the executor
called directly, the references found as the pipeline leaves them: the serving model's through
the serving directory (the Pusher's metadata), the previous span's through the span ledger."""
import json
import os

import pandas as pd
import pytest
import tensorflow_data_validation as tfdv
from tfx.types import artifact_utils, standard_artifacts

from tfxline.components import drift_gate as dg
from tfxline.serving.push import METADATA_FILE
from tfxline.pipeline.data import source as data_source
from tfxline.pipeline.config.load import load_config
from tfxline.pipeline.factory import drift_thresholds
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
    (serving / "7" / "saved_model.pb").write_bytes(b"pb")  # a complete version (serving/push.py)
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


def examples_of_span(span):
    examples = standard_artifacts.Examples()
    examples.uri = f"/examples/{span}"
    examples.set_int_custom_property("span", span)  # where ExampleGen puts it
    return examples


def gate(tmp_path, new, schema, serving_dir, cfg=None, span=0, ledger=None):
    out = standard_artifacts.ExampleAnomalies()
    out.uri = str(tmp_path / f"out-{span}")
    dg.Executor().Do({"statistics": [new], "schema": [schema], "examples": [examples_of_span(span)]},
                     {"drift_anomalies": [out]},
                     {"serving_dir": serving_dir, "span_ledger": str(ledger or tmp_path / "spans"),
                      "thresholds": json.dumps(drift_thresholds(cfg or load_config()))})
    return out


def test_fare_times_fifty_is_stopped_and_named(taxi, tmp_path):
    old, new, schema = taxi
    drifted = new.assign(fare=new["fare"] * 50)
    serving = serving_with_reference(tmp_path, statistics(tmp_path, "ref", old))
    with pytest.raises(dg.DataDriftError) as err:
        gate(tmp_path, statistics(tmp_path, "new", drifted), schema, serving)
    message = str(err.value)
    assert message.startswith("the new data drifted (fare: Jensen-Shannon divergence ")
    assert "vs serving version 7's training data > 0.2" in message
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


def test_previous_span_from_the_ledger(taxi, tmp_path):
    old, new, schema = taxi
    nothing_serving = str(tmp_path / "empty-serving")
    first = gate(tmp_path, statistics(tmp_path, "s1", old), schema, nothing_serving, span=1)
    assert first.get_string_custom_property("compared_with") == "nothing to compare with: nothing serving yet"
    record = json.loads((tmp_path / "spans" / "1.json").read_text())
    assert record["span"] == 1 and record["statistics_uri"] == str(tmp_path / "s1")
    same = gate(tmp_path, statistics(tmp_path, "s2", new), schema, nothing_serving, span=2)
    assert same.get_string_custom_property("compared_with") == "the previous span (span 1)"
    assert same.get_int_custom_property("drifted") == 0
    with pytest.raises(dg.DataDriftError) as err:  # span 3 = span 2 with fare x 50: compared with span 2
        gate(tmp_path, statistics(tmp_path, "s3", new.assign(fare=new["fare"] * 50)), schema, nothing_serving, span=3)
    assert "fare: Jensen-Shannon divergence" in str(err.value)
    assert "vs the previous span (span 2) > 0.2" in str(err.value)
    # A re-run of span 2 (a new version of it) still compares with span 1, not with span 3.
    again = gate(tmp_path / "again", statistics(tmp_path, "s2b", new), schema, nothing_serving, span=2,
                 ledger=tmp_path / "spans")
    assert again.get_string_custom_property("compared_with") == "the previous span (span 1)"
    assert sorted(os.listdir(tmp_path / "spans")) == ["1.json", "2.json", "3.json"]  # no partial files left


def test_previous_span_and_serving_model_both_compared(taxi, tmp_path):
    old, new, schema = taxi
    reference = statistics(tmp_path, "ref", old)
    serving = serving_with_reference(tmp_path, reference)
    gate(tmp_path, statistics(tmp_path, "s4", old), schema, serving, span=4)
    out = gate(tmp_path, statistics(tmp_path, "s5", new), schema, serving, span=5)
    assert out.get_string_custom_property("compared_with") == (
        "the previous span (span 4) and serving version 7's training data")
    # The serving model trained on the previous span: one comparison, not two of the same.
    (tmp_path / "serving" / "7" / METADATA_FILE).write_text(
        json.dumps({"data": {"statistics_uri": str(tmp_path / "s5")}}))
    out = gate(tmp_path, statistics(tmp_path, "s6", new), schema, serving, span=6)
    assert out.get_string_custom_property("compared_with") == "the previous span (span 5)"


def test_two_runs_recording_a_span_at_once(tmp_path, monkeypatch):
    """Runs on a shared store record the same span at once: one writer's rename lands between
    the other's write and rename (a fixed temporary name made the second rename fail:
    NotFoundError on spans/0.json.partial). Both succeed; no temporary file is left."""
    ledger = str(tmp_path / "spans")
    rename, calls = dg.fileio.rename, []

    def the_other_run_records_meanwhile(src, dst, overwrite=False):
        calls.append(src)
        if len(calls) == 1:
            dg.record_span(ledger, examples_of_span(0), "/stats/b", "run-b")
        rename(src, dst, overwrite=overwrite)

    monkeypatch.setattr(dg.fileio, "rename", the_other_run_records_meanwhile)
    dg.record_span(ledger, examples_of_span(0), "/stats/a", "run-a")
    assert len(calls) == 2 and calls[0] != calls[1]
    assert os.listdir(ledger) == ["0.json"]
    assert dg.previous_span(ledger, 1)["pipeline_run_id"] == "run-a"  # the later rename wins


def test_a_compiled_runs_drift_stop_reports_the_run_with_its_scores(taxi, tmp_path, monkeypatch):
    """In a compiled run nothing after the DriftGate runs, the Pusher neither: with the
    pushgateway_url parameter the gate itself reports the run (run_success 0, reason drift, the
    drift scores, what serves) before it stops it; without it, it pushes nothing."""
    from tfxline.components import run_metrics

    sent = []
    monkeypatch.setattr(run_metrics, "publish", lambda samples, job, **kw: sent.append((job, samples, kw)) or [])
    old, new, schema = taxi
    serving = serving_with_reference(tmp_path, statistics(tmp_path, "ref", old))
    drifted = statistics(tmp_path, "new", new.assign(fare=new["fare"] * 50))
    out = standard_artifacts.ExampleAnomalies()
    out.uri = str(tmp_path / "out")
    props = {"serving_dir": serving, "span_ledger": str(tmp_path / "spans"),
             "thresholds": json.dumps(drift_thresholds(load_config())),
             **run_metrics.task_properties(load_config(overrides=["monitoring.labels={env: prod}"]).monitoring,
                                           "taxi", "http://gateway:9091")}
    with pytest.raises(dg.DataDriftError):
        dg.Executor().Do({"statistics": [drifted], "schema": [schema], "examples": [examples_of_span(0)]},
                         {"drift_anomalies": [out]}, props)
    (job, samples, kw), = sent
    got = {(s.name, tuple(sorted(s.labels.items()))): s.value for s in samples}
    assert job == "taxi" and kw["labels"] == {"env": "prod"} and kw["pushgateway_url"] == "http://gateway:9091"
    assert got[("tfxline_run_success", (("component", "DriftGate"), ("reason", "drift")))] == 0.0
    assert got[("tfxline_drift_stopped_run", ())] == 1.0 and got[("tfxline_serving_version", ())] == 7.0
    assert got[("tfxline_drift_score", (("feature", "fare"),))] > got[("tfxline_drift_threshold", (("feature", "fare"),))]
    assert got[("tfxline_no_run_alert_seconds", ())] == 26 * 3600.0

    sent.clear()
    with pytest.raises(dg.DataDriftError):
        gate(tmp_path, drifted, schema, serving, span=1)  # a local run's gate: the runner reports
    assert sent == []
