"""End to end: the real pipeline (real TFX components, Beam, MLMD, TFMA) on a taxi slice.

One shared run (the session fixture ``pipeline_run``) serves every test that only reads
its outputs. Extra runs, each for a reason: the cache check re-runs the same inputs (other Beam flags), the
anomalies check needs data that violates the schema (``anomalies_run``), and the empty-split
check data too small for its hash split. The worse candidate and the drift stop are the
session's ``worse_candidate_run`` and ``drift_stop_run``, which test_alerting reads too
(tests/conftest.py lists every run and its readers).
"""
import glob
import io
import json
import os
import re

import numpy as np
import pytest
import tensorflow as tf

from tfxline.pipeline.data import source as data_source
from tfxline.cli import main as cli
from tfxline.local import runner as local_runner
from tfxline.pipeline.data.examples import read_csv_rows, serialize_rows
from tfxline.runs.store import open_store
from tfxline.runs.summary import collect_run
from tests.conftest import e2e_config, write_taxi_slice

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
    from tfxline.runs.console import format_summary

    _, summary, out = pipeline_run
    assert summary.blessed is True, summary.failed_thresholds
    # Nothing was serving: no baseline, so judged on the value thresholds alone.
    assert summary.baseline_version is None
    assert "baseline: none (nothing serving yet)" in format_summary(summary)
    assert summary.drift == "nothing to compare with: nothing serving yet"
    assert summary.metrics["auc"] > 0.8
    assert summary.metrics["binary_accuracy"] > 0.78
    assert "BLESSED" in out or summary.blessed


def test_progress_lines_for_each_component(pipeline_run):
    _, _, out = pipeline_run
    for node in NODES:
        assert f"[ start ] {node}" in out
        assert any(line.startswith("[ done  ] " + node) for line in out.splitlines()), node


def test_beam_components_build_no_tfx_sdist(pipeline_run):
    """On the local runner TFX's executors skip their sdist of TFX (patches/tfx_packaging.py):
    49 MB left in /tmp and 3.4 s per Beam component otherwise."""
    cfg, _, _ = pipeline_run
    logs = [open(p).read() for p in glob.glob(os.path.join(cfg.output_root, "logs", "*.log"))]
    assert logs and all("INFO apache_beam" in log for log in logs)  # Beam's INFO lines reach the log
    assert not [log for log in logs if "Attempting to infer TFX Python dependency" in log]


def test_pushed_savedmodel_serves_raw_examples(pipeline_run, taxi_slice):
    cfg, summary, _ = pipeline_run
    assert summary.pushed and summary.pushed_to.startswith(cfg.serving_dir)
    entries = [v for v in os.listdir(cfg.serving_dir) if not v.startswith(".")]
    versions = [v for v in entries if v.isdigit()]  # TF Serving's <base>/<int version>
    assert len(versions) == 1 and set(entries) - set(versions) <= {"release", "kserve"}  # names it skips
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


def test_second_run_with_unchanged_inputs_and_other_beam_flags_is_served_from_cache(pipeline_run):
    """Other Beam flag values (two in-memory workers, where the first run had the auto mode's one)
    cannot change an output: the Beam components and the Trainer are served from the cache
    (local/beam_flags.py keeps the flags out of TFX's cache key)."""
    import dataclasses

    cfg, first, _ = pipeline_run
    out = io.StringIO()
    flags = dataclasses.replace(cfg.beam, direct_running_mode="in_memory", direct_num_workers=2)
    second = local_runner.run(dataclasses.replace(cfg, beam=flags), stream=out)
    assert second.run_id != first.run_id
    states = {c.node_id: c.state for c in second.components}
    for node in ("CsvExampleGen", "StatisticsGen", "ExampleValidator", "Transform", "Trainer"):
        assert states[node] == "cached", states
    assert "[cached ] Trainer" in out.getvalue()


def test_schema_violations_stop_the_run_before_training(anomalies_run):
    out_dir, code, out, err = anomalies_run
    assert code == cli.EXIT_FAILED
    assert "violates the schema" in err and "payment_type" in err
    assert [line for line in out.splitlines() if line.startswith("[failed ]")][0].startswith("[failed ] AnomaliesGate (")
    assert len([l for l in err.splitlines() if l.startswith("error:")]) == 1
    assert not (out_dir / "serving").exists()
    ran = {c.node_id for c in collect_run(str(out_dir / "metadata.sqlite"), "taxi").components}
    assert "Transform" not in ran and "Trainer" not in ran


def test_data_too_small_for_its_split_stops_the_run_before_training(tmp_path, capsys):
    """15 rows that hash to no validation row (9 train, 6 eval): TFDV reports nothing, and
    Keras would train on without validation or early stopping; the AnomaliesGate stops it."""
    data = write_taxi_slice(tmp_path / "d" / "t.csv", every=1000, offset=6, limit=15)
    out_dir = tmp_path / "out"
    code = cli.main(["run", "--data", data, "--output", str(out_dir)], stream=io.StringIO())
    errors = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error:")]
    assert code == cli.EXIT_FAILED
    assert len(errors) == 1 and "the validation split holds no rows (the data has 15 rows, " in errors[0], errors
    assert "data.validation_buckets" in errors[0]
    ran = {c.node_id for c in collect_run(str(out_dir / "metadata.sqlite"), "taxi").components}
    assert "AnomaliesGate" in ran and "Transform" not in ran and "Trainer" not in ran
    assert not (out_dir / "serving").exists()


def test_push_metadata_next_to_the_version(pipeline_run):
    from tfxline.serving import push as serving_push

    cfg, summary, _ = pipeline_run
    version = serving_push.versions(cfg.serving_dir)[0]
    meta = serving_push.read_metadata(cfg.serving_dir, version)
    assert meta["pipeline_run_id"] == summary.run_id
    assert meta["model_uri"] == summary.model_uri
    assert abs(meta["metrics"]["auc"] - summary.metrics["auc"]) < 1e-9
    assert "span" in meta["data"]


def test_the_push_writes_the_release_tf_serving_reads(pipeline_run):
    """Every push writes models.config (the pushed version loaded; the stable label moves onto it
    once TF Serving has loaded it: 'tfxline serving settle'), batching parameters chosen from the
    pushed model's measured latency, monitoring.config and the KServe manifest."""
    from google.protobuf import text_format
    from tensorflow_serving.config import model_server_config_pb2

    from tfxline.serving import push as serving_push
    from tfxline.serving import release as serving_release
    from tests.test_serving_release import tf_serving_message

    cfg, _, _ = pipeline_run
    (version,) = serving_push.versions(cfg.serving_dir)
    release = serving_release.read(cfg.serving_dir)
    assert release.target[:2] == (version, None) and release.pending["event"] == "push"
    summary = pipeline_run[1]  # the run's summary says what the push did, in a few words beside its path
    assert summary.release == "stable: predict and the next run's baseline use it"
    measured = serving_push.read_metadata(cfg.serving_dir, version)["batching"]
    assert set(measured["latency_ms"]) == {"1", "8", "32", "128", "512"}
    assert all(ms > 0 for ms in measured["latency_ms"].values())
    folder = serving_release.release_dir(cfg.serving_dir)
    config = text_format.Parse(open(os.path.join(folder, "models.config")).read(),
                               model_server_config_pb2.ModelServerConfig()).model_config_list.config[0]
    assert config.name == cfg.name and list(config.model_version_policy.specific.versions) == [version]
    assert not config.version_labels  # a label may only name a version TF Serving has loaded
    batching = text_format.Parse(open(os.path.join(folder, "batching_parameters.txt")).read(),
                                 tf_serving_message("tensorflow.serving.BatchingParameters")())
    assert batching.max_batch_size.value in (1, 8, 32, 128, 512)
    assert list(batching.allowed_batch_sizes)[-1] == batching.max_batch_size.value
    assert os.path.isfile(os.path.join(folder, "inferenceservice.yaml"))


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
    from tfxline.serving.release import serving_version_dir

    serve = tf.saved_model.load(serving_version_dir(cfg.serving_dir)).signatures["serving_default"]
    schema = data_source.load_schema(data_source.schema_path(cfg.data.schema))
    direct = serve(examples=tf.constant(serialize_rows(rows, schema, cfg.features.serving_columns)))
    np.testing.assert_allclose(got, direct["probabilities"].numpy(), rtol=1e-6, atol=1e-7)
    jsonl = tmp_path / "pred.jsonl"
    assert cli.main(["predict", "--output", cfg.output_root, "--input", str(src),
                     "--predictions", str(jsonl)]) == 0
    assert len(open(jsonl).read().splitlines()) == len(rows)
    # "-": the CSV on stdout (for a pipe), the summary line on stderr, no file named "-"
    capsys.readouterr()
    assert cli.main(["predict", "--output", cfg.output_root, "--input", str(src), "--predictions", "-"]) == 0
    piped = capsys.readouterr()
    assert [float(r["probability"]) for r in csv.DictReader(io.StringIO(piped.out))] == got
    assert f"{len(rows)} predictions from " in piped.err and "-> stdout;" in piped.err
    assert not os.path.exists("-")


def test_worse_candidate_is_not_pushed(pipeline_run, worse_candidate_run):
    """After the blessed baseline: a barely-trained model fails the gates, nothing moves.
    Its data is another slice of the same taxi rows, so the drift gate compares for real
    (with the serving model's training data) and passes. The run is the session's
    ``worse_candidate_run``, on a copy of the shared run's output root."""
    from tfxline.runs.console import format_summary

    _, first, _ = pipeline_run
    _, cfg, before, result, _, after = worse_candidate_run
    assert result.drift == f"serving version {max(before)}'s training data"
    assert "drift: none vs serving version" in format_summary(result)
    assert result.blessed is False
    assert any(f.startswith("auc") for f in result.failed_thresholds), result.failed_thresholds
    assert result.pushed is False
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
    assert result.baseline_version == max(before)
    assert f"baseline: serving version {max(before)}" in format_summary(result)
    # The report's history: the main metric of the runs so far, oldest first, this run last.
    history = report["evaluation"]["history"]
    assert report["evaluation"]["history_metric"] == "auc" and len(history) >= 2
    assert history[-1] == {"run_id": result.run_id, "value": result.metrics["auc"]}
    assert history[0]["run_id"] == first.run_id
    assert "auc over the last" in open(result.report_path).read()


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


def test_runs_lists_the_mlmd_runs_newest_first(pipeline_run, capsys):
    from tfxline.runs.store import run_ids

    cfg, first, _ = pipeline_run
    ids = run_ids(open_store(cfg.metadata_path), cfg.name)
    assert cli.main(["runs", "--output", cfg.output_root]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:3] == ["run", "started", "spans"]
    assert [line.split()[0] for line in lines[1:]] == ids  # every run, newest first
    row = next(line for line in lines[1:] if line.startswith(first.run_id))
    assert f"auc {first.metrics['auc']:.4f}" in row and " complete " in row
    assert os.path.basename(first.pushed_to) in row and row.endswith("  yes")
    assert cli.main(["runs", "--output", cfg.output_root, "show", first.run_id]) == 0
    shown = capsys.readouterr().out
    assert shown.startswith(f"run {first.run_id}:") and "BLESSED" in shown
    assert f"report: {os.path.join(cfg.output_root, 'runs', first.run_id, 'report.html')}" in shown
    assert cli.main(["runs", "show", "no-such-run", "--output", cfg.output_root]) == cli.EXIT_BAD_INPUT
    assert "'tfxline runs' lists the recorded runs" in capsys.readouterr().err


def test_drifted_data_stops_the_run_before_training(drift_stop_run):
    """fare x 50 passes the schema (no upper bound on fare) but not the drift gate: the run
    stops before Transform with the feature, the distance and the threshold in one line. The
    run is the session's ``drift_stop_run``, on a copy of the shared run's output root."""
    run = drift_stop_run
    before = run["versions"]
    assert run["code"] == cli.EXIT_FAILED
    errors = [line for line in run["err"].splitlines() if line.startswith("error:")]
    assert len(errors) == 1
    assert re.search(rf"fare: Jensen-Shannon divergence 0\.\d+ vs serving version {max(before)}'s training data "
                     r"> 0\.2", errors[0]), errors[0]
    assert "the new data drifted (" in errors[0] and "span" not in errors[0]  # data without spans
    assert "Transform" not in {c.node_id for c in run["latest"].components}
    assert run["versions_after"] == before
