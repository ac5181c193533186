"""End to end: the real pipeline (real TFX components, Beam, MLMD, TFMA) on a taxi slice.

One shared run (the session fixture ``pipeline_run``) serves every test that only reads
its outputs. Extra runs, each for a reason: the cache check re-runs the same inputs, and
the anomalies check needs data that violates the schema.
"""
import io
import json
import os

import numpy as np
import pytest
import tensorflow as tf

from pipeline import cli, data_source, local_runner
from pipeline.examples import read_csv_rows, serialize_rows
from pipeline.summary import collect_run, open_store
from tests.conftest import e2e_config, write_taxi_slice

pytestmark = pytest.mark.e2e

NODES = {"CsvExampleGen", "StatisticsGen", "ImportSchemaGen", "ExampleValidator", "AnomaliesGate",
         "Transform", "Trainer", "latest_blessed_model_resolver", "Evaluator", "Pusher"}


def test_every_component_completed_in_mlmd(pipeline_run):
    cfg, summary, _ = pipeline_run
    store = open_store(cfg.metadata_path)
    assert store.get_executions()  # the real SQLite MLMD store under the output root
    states = {c.node_id: c.state for c in summary.components}
    assert NODES - {"latest_blessed_model_resolver"} <= set(states)
    assert all(states[n] == "complete" for n in NODES if n in states), states


def test_model_is_blessed_and_beats_the_majority_baseline(pipeline_run):
    _, summary, out = pipeline_run
    assert summary.blessed is True, summary.failed_thresholds
    assert summary.metrics["auc"] > 0.8
    assert summary.metrics["binary_accuracy"] > 0.78
    assert "BLESSED" in out or summary.blessed


def test_progress_lines_for_each_component(pipeline_run):
    _, _, out = pipeline_run
    for node in NODES:
        assert f"[ start ] {node}" in out
        assert any(line.startswith("[ done  ] " + node) for line in out.splitlines()), node


def test_pushed_savedmodel_serves_raw_examples(pipeline_run, taxi_slice):
    cfg, summary, _ = pipeline_run
    assert summary.pushed and summary.pushed_to.startswith(cfg.serving_dir)
    versions = os.listdir(cfg.serving_dir)
    assert len(versions) == 1 and versions[0].isdigit()  # TF Serving's <base>/<int version>
    model = tf.saved_model.load(os.path.join(cfg.serving_dir, versions[0]))
    serve = model.signatures["serving_default"]
    schema = data_source.load_schema(data_source.schema_path(cfg.data.schema))
    rows = list(read_csv_rows(taxi_slice))[:64]
    # What a serving client sends: raw features, no label column (tips).
    examples = serialize_rows(rows, schema, cfg.features.serving_columns)
    probs = serve(examples=tf.constant(examples))["probabilities"].numpy()
    assert probs.shape == (64,) and probs.dtype == np.float32
    assert np.all((probs >= 0) & (probs <= 1))
    assert probs.std() > 0.01  # not a constant


def test_summary_json_written(pipeline_run):
    cfg, summary, _ = pipeline_run
    path = os.path.join(cfg.output_root, "runs", summary.run_id, "summary.json")
    with open(path) as f:
        data = json.load(f)
    assert data["blessed"] is True and data["metrics"]["auc"] == summary.metrics["auc"]
    assert {"payment_type=Cash", "payment_type=Credit Card"} <= set(data["slice_metrics"])


def test_second_run_with_unchanged_inputs_is_served_from_cache(pipeline_run):
    cfg, first, _ = pipeline_run
    out = io.StringIO()
    second = local_runner.run(cfg, stream=out)
    assert second.run_id != first.run_id
    states = {c.node_id: c.state for c in second.components}
    for node in ("CsvExampleGen", "StatisticsGen", "ExampleValidator", "Transform", "Trainer"):
        assert states[node] == "cached", states
    assert "[cached ] Trainer" in out.getvalue()


def test_schema_violations_stop_the_run_before_training(tmp_path, capsys):
    def unseen_payment(row):
        if row["trip_start_hour"] == "3":
            row["payment_type"] = "Bitcoin"  # not in the schema's payment_type domain
        return row

    data = write_taxi_slice(tmp_path / "d" / "t.csv", limit=600, mutate=unseen_payment)
    out_dir = tmp_path / "out"
    code = cli.main(["run", "--data", data, "--output", str(out_dir)])
    err = capsys.readouterr().err
    assert code == cli.EXIT_FAILED
    assert "violates the schema" in err and "payment_type" in err
    assert len([l for l in err.splitlines() if l.startswith("error:")]) == 1
    assert not (out_dir / "serving").exists()
    ran = {c.node_id for c in collect_run(str(out_dir / "metadata.sqlite"), "taxi").components}
    assert "Transform" not in ran and "Trainer" not in ran
