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
from tests.conftest import e2e_config

pytestmark = pytest.mark.e2e

NODES = {"CsvExampleGen", "StatisticsGen", "ImportSchemaGen", "ExampleValidator", "AnomaliesGate",
         "Transform", "Trainer", "ServingBaseline", "Evaluator", "Pusher"}


def test_every_component_completed_in_mlmd(pipeline_run):
    cfg, summary, _ = pipeline_run
    store = open_store(cfg.metadata_path)
    assert store.get_executions()  # the real SQLite MLMD store under the output root
    states = {c.node_id: c.state for c in summary.components}
    assert NODES <= set(states)
    assert all(states[n] == "complete" for n in NODES if n in states), states


def test_model_is_blessed_and_beats_the_majority_baseline(pipeline_run):
    from pipeline.report_text import format_summary

    _, summary, out = pipeline_run
    assert summary.blessed is True, summary.failed_thresholds
    # Nothing was serving: no baseline, so judged on the value thresholds alone.
    assert summary.baseline_version is None
    assert "baseline: none (nothing serving yet)" in format_summary(summary)
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


def test_schema_violations_stop_the_run_before_training(anomalies_run):
    out_dir, code, _, err = anomalies_run
    assert code == cli.EXIT_FAILED
    assert "violates the schema" in err and "payment_type" in err
    assert len([l for l in err.splitlines() if l.startswith("error:")]) == 1
    assert not (out_dir / "serving").exists()
    ran = {c.node_id for c in collect_run(str(out_dir / "metadata.sqlite"), "taxi").components}
    assert "Transform" not in ran and "Trainer" not in ran


def test_push_metadata_next_to_the_version(pipeline_run):
    from components import serving_push

    cfg, summary, _ = pipeline_run
    version = serving_push.versions(cfg.serving_dir)[0]
    meta = serving_push.read_metadata(cfg.serving_dir, version)
    assert meta["pipeline_run_id"] == summary.run_id
    assert meta["model_uri"] == summary.model_uri
    assert abs(meta["metrics"]["auc"] - summary.metrics["auc"]) < 1e-9
    assert "span" in meta["data"]


def test_slice_metrics_exist_for_every_configured_slice(pipeline_run):
    cfg, summary, _ = pipeline_run
    for feature in cfg.evaluation.slices:
        assert any(name.startswith(feature + "=") for name in summary.slice_metrics), feature


def test_predict_matches_the_serving_signature(pipeline_run, taxi_slice, tmp_path, capsys):
    import csv

    cfg, _, _ = pipeline_run
    rows = list(read_csv_rows(taxi_slice))[:40]
    for r in rows:
        r.pop("tips")  # prediction input carries no label
    rows[0]["company"] = "A Company Never Seen Before"  # unseen category -> OOV bucket
    src = tmp_path / "rows.csv"
    with open(src, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    out = tmp_path / "pred.csv"
    code = cli.main(["predict", "--output", cfg.output_root, "--set", f"data.path={taxi_slice}",
                     "--input", str(src), "--predictions", str(out)])
    assert code == 0, capsys.readouterr().err
    got = [float(r["probability"]) for r in read_csv_rows(str(out))]
    assert len(got) == len(rows) and all(0.0 <= p <= 1.0 for p in got)
    from components.serving_push import latest_version_dir

    serve = tf.saved_model.load(latest_version_dir(cfg.serving_dir)).signatures["serving_default"]
    schema = data_source.load_schema(data_source.schema_path(cfg.data.schema))
    direct = serve(examples=tf.constant(serialize_rows(rows, schema, cfg.features.serving_columns)))
    np.testing.assert_allclose(got, direct["probabilities"].numpy(), rtol=1e-6, atol=1e-7)
    jsonl = tmp_path / "pred.jsonl"
    assert cli.main(["predict", "--output", cfg.output_root, "--input", str(src),
                     "--predictions", str(jsonl)]) == 0
    assert len(open(jsonl).read().splitlines()) == len(rows)


def test_worse_candidate_is_not_pushed(pipeline_run, taxi_slice):
    """After the blessed baseline: a barely-trained model fails the gates, nothing moves."""
    from components import serving_push

    cfg, first, _ = pipeline_run
    before = {v: serving_push.read_metadata(cfg.serving_dir, v) for v in serving_push.versions(cfg.serving_dir)}
    worse = e2e_config(taxi_slice, cfg.output_root, "training.train_steps=1", "training.epochs=1",
                       "model.learning_rate=0.000001")
    result = local_runner.run(worse, stream=io.StringIO())
    assert result.blessed is False
    assert any(f.startswith("auc") for f in result.failed_thresholds), result.failed_thresholds
    assert result.pushed is False
    after = {v: serving_push.read_metadata(cfg.serving_dir, v) for v in serving_push.versions(cfg.serving_dir)}
    assert after == before
    model = tf.saved_model.load(os.path.join(cfg.serving_dir, str(max(before))))
    assert "serving_default" in model.signatures
    # Its report compares with the baseline (the first model, the one serving) and names the failure.
    with open(os.path.join(os.path.dirname(result.report_path), "report.json")) as f:
        report = json.load(f)
    assert report["evaluation"]["baseline_model_uri"] == first.model_uri
    assert report["evaluation"]["baseline_version"] == max(before)
    assert report["evaluation"]["baseline_diff"]["auc"] < 0
    assert report["serving"]["reason"].startswith("not blessed: auc")
    from pipeline.report_text import format_summary

    assert result.baseline_version == max(before)
    assert f"baseline: serving version {max(before)}" in format_summary(result)


def test_tensorboard_scalars_per_epoch_in_the_model_run_dir(pipeline_run):
    """loss, AUC and the learning rate, one point per epoch, where `tensorboard --logdir` looks."""
    cfg, summary, _ = pipeline_run
    run_dir = summary.model_uri.replace(os.sep + "model" + os.sep, os.sep + "model_run" + os.sep)
    points = {}
    for split in ("train", "validation"):
        for path in tf.io.gfile.glob(os.path.join(run_dir, split, "events*")):
            for event in tf.compat.v1.train.summary_iterator(path):
                for value in event.summary.value:
                    points.setdefault((split, value.tag), []).append(event.step)
    epochs = len(json.load(open(os.path.join(run_dir, "training_run.json")))["history"]["loss"])
    for key in [("train", "epoch_loss"), ("train", "epoch_auc"), ("train", "epoch_learning_rate"),
                ("validation", "epoch_loss"), ("validation", "epoch_auc")]:
        assert sorted(points.get(key, [])) == list(range(epochs)), key
