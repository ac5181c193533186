"""Every task gated and shipped like binary, with real pipeline runs on the penguin TFRecords
that ship inside tfx (334 rows; ImportExampleGen, epochs mode): multi-class (species,
pipeline/configs/penguin.yaml) and regression (body mass, pipeline/configs/penguin_mass.yaml).
Binary is the shared taxi run's (tests/test_e2e.py, test_worse_candidate_is_not_pushed).

Per task, two runs on one output root: the first is blessed and pushed; a much worse candidate
(learning rate 1e-6, one epoch) is refused by the change threshold against the serving model,
in one line that names the metric, and the serving directory stays as it was. The console,
the report, `tfxline runs`, `tfxline predict` and the push metadata show the task's own metrics.

The runs are the session fixtures ``multiclass_runs`` and ``regression_runs`` (conftest), which
the browser test (tests/test_report_browser.py) opens too."""
import csv
import glob
import json
import os

import numpy as np
import pytest
import tensorflow as tf

from tfxline.components import task_metrics
from tfxline.serving import push as serving_push
from tfxline.pipeline.data import source as data_source
from tests.conftest import tfxline

pytestmark = [pytest.mark.e2e, pytest.mark.one_stack(
    "1.16", why="the multi-class and regression runs; their pipelines run on TFX 1.21 in test_init_e2e.py")]

def eval_rows_csv(cfg, path, drop):
    """The penguin eval TFRecords as a CSV a user would send to `tfxline predict` (without the
    label column ``drop``), and the labels."""
    files = glob.glob(os.path.join(data_source.resolve_data_path(cfg.data.path), "Split-eval", "*"))
    rows, labels = [], []
    for record in tf.data.TFRecordDataset(files, compression_type="GZIP").take(40):
        features = tf.train.Example.FromString(record.numpy()).features.feature
        row = {k: (v.float_list.value or v.int64_list.value)[0] for k, v in features.items()}
        labels.append(row.pop(drop))
        rows.append(row)
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=sorted(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return str(path), labels


def predict_eval_rows(cfg, tmp_path, drop):
    """`tfxline predict` (the packaged config named as the pipeline) on 40 eval rows without the
    label column ``drop``: (the prediction rows, the true labels, its stdout)."""
    rows, labels = eval_rows_csv(cfg, tmp_path / "rows.csv", drop=drop)
    out = tmp_path / "pred.csv"
    done = tfxline("predict", "--config", cfg.name, "--output", cfg.output_root, "--input", rows,
                   "--predictions", str(out))
    assert done.returncode == 0, done.stderr
    with open(out) as f:
        return list(csv.DictReader(f)), labels, done.stdout


def report_of(cfg, summary):
    with open(os.path.join(cfg.output_root, "runs", summary.run_id, "report.json")) as f:
        return json.load(f)


def report_html(cfg, summary):
    with open(os.path.join(cfg.output_root, "runs", summary.run_id, "report.html")) as f:
        return f.read()


def runs_row(cfg, run_id):
    """`tfxline runs`' line of the run (the packaged configs are named as their pipelines)."""
    listing = tfxline("runs", "--output", cfg.output_root, "--config", cfg.name)
    assert listing.returncode == 0, listing.stderr
    return next(line for line in listing.stdout.splitlines() if line.startswith(run_id))


def assert_refused_and_serving_untouched(cfg, served, worse, metric):
    summary, out = worse
    assert summary.blessed is False and summary.pushed is False
    lines = [line for line in out.splitlines() if "blessing:" in line]
    assert len(lines) == 1 and lines[0].startswith(f"  blessing: NOT blessed: {metric} "), out[-2000:]
    assert "above the serving model's" in lines[0] or "below the serving model's" in lines[0]
    assert summary.failed_thresholds and summary.failed_thresholds[0].startswith(metric)
    after = {v: serving_push.read_metadata(cfg.serving_dir, v) for v in serving_push.versions(cfg.serving_dir)}
    assert after == served


def assert_tflite_pushed(cfg, meta, mode, out):
    """serving.tflite on a first run: model.tflite in the version, checked, in builtins only."""
    tflite = meta["tflite"]
    assert tflite["mode"] == mode and tflite["parity"]["ok"] and tflite["flex_ops"] == []
    assert tflite["parity"]["metric"] == task_metrics.VIEWS[meta["task"]].main
    path = os.path.join(cfg.serving_dir, str(meta["version"]), "model.tflite")
    assert os.path.getsize(path) == tflite["bytes"]
    assert f"  tflite: model.tflite ({mode}, " in out and "TFLite builtins only" in out


# ---------------------------------------------------------------------------------------------
# multi-class


def test_multiclass_first_run_is_blessed_and_pushed_with_per_class_recall(multiclass_runs):
    cfg, (summary, out), served, _ = multiclass_runs
    states = {c.node_id: c.state for c in summary.components}
    assert states["ImportExampleGen"] == "complete" and "CsvExampleGen" not in states
    assert summary.task == "multiclass" and summary.blessed is True and summary.pushed
    assert summary.metrics["accuracy"] >= cfg.evaluation.min_accuracy
    assert 0 < summary.metrics["accuracy_lift"] < summary.metrics["accuracy"]  # the default gate: beats the commonest species
    recall = {k: v for k, v in summary.metrics.items() if k.startswith("recall[")}
    assert sorted(recall) == ["recall[0]", "recall[1]", "recall[2]"]  # the species ids, by name
    assert all(0.0 <= v <= 1.0 for v in recall.values())
    eval_line = next(line for line in out.splitlines() if "eval (overall):" in line)
    assert eval_line.split(": ", 1)[1].startswith("accuracy ") and "recall[0] " in eval_line
    assert f"accuracy_lift {summary.metrics['accuracy_lift']:.4f}" in eval_line
    assert "auc" not in eval_line and "2 TFRECORD files from" in out
    (meta,) = served.values()
    assert meta["task"] == "multiclass" and meta["metrics"]["accuracy"] == summary.metrics["accuracy"]
    assert meta["metrics"]["recall[1]"] == recall["recall[1]"]
    assert_tflite_pushed(cfg, meta, "int8", out)


def test_multiclass_worse_candidate_is_refused_by_the_change_threshold(multiclass_runs):
    cfg, (first, _), served, worse = multiclass_runs
    assert worse[0].baseline_version == max(served)
    assert_refused_and_serving_untouched(cfg, served, worse, "accuracy")
    assert f"(allowed drop {cfg.evaluation.max_accuracy_drop:g})" in worse[0].failed_thresholds[0]
    assert f"serving model's {first.metrics['accuracy']:.4f}" in worse[0].failed_thresholds[0]


def test_multiclass_report_runs_and_predict_speak_classes(multiclass_runs, tmp_path):
    cfg, (first, _), _, (worse, _) = multiclass_runs
    ev = report_of(cfg, first)["evaluation"]
    matrix = ev["confusion_matrix"]
    assert ev["task"] == "multiclass" and sorted(matrix["classes"]) == ["0", "1", "2"]
    assert sum(map(sum, matrix["counts"])) == first.metrics["example_count"]
    diagonal = sum(matrix["counts"][i][i] for i in range(3))
    assert diagonal / first.metrics["example_count"] == pytest.approx(first.metrics["accuracy"])
    html = report_html(cfg, first)
    assert "confusion matrix (eval split)" in html and 'data-actual="0"' in html
    assert report_of(cfg, worse)["serving"]["reason"] == "not blessed: " + worse.failed_thresholds[0]
    assert f"accuracy {first.metrics['accuracy']:.4f}" in runs_row(cfg, first.run_id)
    assert runs_row(cfg, worse.run_id).endswith("no: " + worse.failed_thresholds[0])
    predicted, species, stdout = predict_eval_rows(cfg, tmp_path, drop="species")
    assert "predicted classes: " in stdout
    assert len(predicted) == 40 and {r["predicted_class"] for r in predicted} <= {"0", "1", "2"}
    for r in predicted:
        probabilities = json.loads(r["probabilities"])
        assert set(probabilities) == {"0", "1", "2"} and abs(sum(probabilities.values()) - 1) < 1e-4
        assert max(probabilities, key=probabilities.get) == r["predicted_class"]
    # the classes are the label's values (the model's copy of the label vocabulary), not indices
    assert np.mean([int(r["predicted_class"]) == s for r, s in zip(predicted, species)]) > 0.85


# ---------------------------------------------------------------------------------------------
# regression


def test_regression_first_run_beats_the_mean_and_is_pushed(regression_runs):
    """The regression config the manual shows (docs/your-data.md), no threshold set: blessed and pushed on its first run."""
    cfg, (summary, out), served, _ = regression_runs
    assert cfg.features.label.column is None  # the label reads the column of its own name
    assert summary.task == "regression" and summary.blessed is True and summary.pushed
    m = summary.metrics
    assert m["r2"] > 0.5 and m["rmse"] > 0 and m["mae"] <= m["rmse"]
    eval_line = next(line for line in out.splitlines() if "eval (overall):" in line)
    assert eval_line.split(": ", 1)[1].startswith(f"rmse {m['rmse']:.4f}, mae {m['mae']:.4f}, r2 {m['r2']:.4f}")
    (meta,) = served.values()
    assert meta["task"] == "regression" and meta["metrics"]["r2"] == m["r2"]
    assert_tflite_pushed(cfg, meta, "none", out)
    assert meta["tflite"]["parity"]["max_abs_diff"] < 1e-4  # float32: the same model


def test_regression_worse_candidate_is_refused_by_the_error_increase(regression_runs):
    cfg, (first, _), served, worse = regression_runs
    assert_refused_and_serving_untouched(cfg, served, worse, "rmse")
    assert f"serving model's {first.metrics['rmse']:.4f} (allowed increase 10%)" in worse[0].failed_thresholds[0]


def test_regression_report_runs_and_predict(regression_runs, tmp_path):
    cfg, (first, _), served, _ = regression_runs
    ev = report_of(cfg, first)["evaluation"]
    sample = ev["prediction_sample"]
    assert ev["task"] == "regression" and len(sample["label"]) == first.metrics["example_count"]
    labels, predictions = np.array(sample["label"]), np.array(sample["prediction"])
    sse, sst = np.sum((labels - predictions) ** 2), np.sum((labels - labels.mean()) ** 2)
    assert 1 - sse / sst == pytest.approx(first.metrics["r2"], rel=1e-4)  # every eval row: all 62 kept
    html = report_html(cfg, first)
    assert "predicted vs actual (62 eval rows)" in html and "residuals (62 eval rows)" in html
    assert f"rmse {first.metrics['rmse']:.4f}" in runs_row(cfg, first.run_id)
    listing = tfxline("serving", "--output", cfg.output_root, "--config", "penguin_mass")
    assert f"rmse {first.metrics['rmse']:.4f}" in listing.stdout, listing.stdout + listing.stderr
    rows, mass, stdout = predict_eval_rows(cfg, tmp_path, drop="body_mass_g")
    assert "predictions mean " in stdout
    predicted = [float(r["prediction"]) for r in rows]
    assert len(predicted) == 40 and all(np.isfinite(predicted))
    assert np.mean(np.abs(np.array(predicted) - mass)) < 2 * first.metrics["mae"]
