"""The run report: each section's numbers against the artifacts they come from, the page
self-contained, and the failed run's report. No pipeline run of its own: the shared run
(``pipeline_run``) and the schema-violating run (``anomalies_run``) write their reports.
The real-browser check is in tests/test_report_browser.py."""
import base64
import io
import json
import math
import os
import re
import subprocess
import sys

import pytest
import tensorflow as tf

from tfxline.cli import main as cli
from tfxline.cli import run_command
from tfxline.runs.console import format_summary
from tfxline.runs.report import collect, render
from tfxline.runs.store import INPUT_EVENTS, execution_artifacts, open_store

pytestmark = pytest.mark.e2e

SECTIONS = ("pipeline", "data", "training", "evaluation", "serving", "lineage")


def run_dir_of(cfg, summary):
    return os.path.join(cfg.output_root, "runs", summary.run_id)


@pytest.fixture(scope="module")
def report(pipeline_run):
    """The data of the shared run's report, as the run wrote it."""
    cfg, summary, _ = pipeline_run
    assert summary.report_path == os.path.join(run_dir_of(cfg, summary), render.REPORT_FILE)
    with open(os.path.join(run_dir_of(cfg, summary), render.DATA_FILE)) as f:
        return json.load(f)


def test_run_writes_the_report_and_the_summary_says_where(pipeline_run):
    cfg, summary, _ = pipeline_run
    assert os.path.isfile(summary.report_path)
    console = io.StringIO()
    run_command.print_summary(summary, console)  # what `tfxline run` prints at the end
    assert f"report: {summary.report_path}" in console.getvalue()
    trainer_run = summary.component("Trainer").outputs["model_run"][0]
    assert f"tensorboard --logdir {trainer_run}" in console.getvalue()


@pytest.mark.parametrize("command", ["report", "runs", "gc", "serving"])
def test_read_commands_print_no_library_noise(pipeline_run, command):
    """The commands a user runs beside the pipeline, as a user runs them (a fresh process):
    their output only, no TensorFlow import-time lines (`report` once imported TensorFlow
    before quieting it)."""
    cfg, summary, _ = pipeline_run
    args = {"report": [run_dir_of(cfg, summary)], "runs": ["--output", cfg.output_root],
            "gc": ["--output", cfg.output_root, "--keep-runs", "100", "--dry-run"],
            "serving": ["--output", cfg.output_root]}[command]
    done = subprocess.run([sys.executable, "-m", "tfxline.cli.main", command, *args], capture_output=True, text=True,
                          timeout=300, cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith({"report": "report: ", "runs": "run ", "gc": "retention: nothing to delete",
                                   "serving": f"{cfg.serving_dir} (labels in {cfg.serving_dir}/release/models.config)"}[command])
    assert done.stderr == "", done.stderr


def test_report_command_rewrites_the_latest_run(pipeline_run, tmp_path, capsys):
    cfg, summary, _ = pipeline_run
    run_dir = run_dir_of(cfg, summary)
    assert cli.main(["report", run_dir]) == 0
    assert f"report: {summary.report_path}" in capsys.readouterr().out
    # Without RUN_DIR: the latest recorded run under --output.
    assert cli.main(["report", "--output", cfg.output_root]) == 0
    assert "report: " + os.path.join(cfg.output_root, "runs") in capsys.readouterr().out
    # Not a run directory: one line, exit 2.
    assert cli.main(["report", str(tmp_path)]) == cli.EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no run.json" in err


def test_pipeline_section_is_the_mlmd_state_of_each_component(pipeline_run, report):
    cfg, summary, _ = pipeline_run
    store = open_store(cfg.metadata_path)
    run_ctx = store.get_context_by_type_and_name("pipeline_run", summary.run_id)
    executions = store.get_executions_by_context(run_ctx.id)
    assert len(report["pipeline"]["nodes"]) == len(executions) == 11
    seconds = {e.id: (e.last_update_time_since_epoch - e.create_time_since_epoch) / 1000 for e in executions}
    for node in report["pipeline"]["nodes"]:
        component = summary.component(node["id"])
        assert node["state"] == "complete" and node["cached"] is False
        assert node["seconds"] == pytest.approx(seconds[component.execution_id], abs=0.06)
    nodes = {n["id"]: n for n in report["pipeline"]["nodes"]}
    assert nodes["CsvExampleGen"]["level"] == 0
    assert nodes["Pusher"]["level"] == max(n["level"] for n in nodes.values())
    assert "Trainer" in nodes["Evaluator"]["upstream"] and "Transform" in nodes["Trainer"]["upstream"]


def test_data_section_counts_add_up_to_the_csv(pipeline_run, report, taxi_slice):
    """Examples with a value, over the three splits == non-empty cells of that column in the CSV."""
    from tfxline.pipeline.data.examples import read_csv_rows

    assert open(taxi_slice, "rb").read(3) == b"\xef\xbb\xbf"  # the shared data is a spreadsheet export
    rows = list(read_csv_rows(taxi_slice))
    data = report["data"]
    assert data["splits"] == ["train", "validation", "eval"]
    assert sum(data["examples"].values()) == len(rows)
    features = {f["name"]: f for f in data["features"]}
    assert set(features) == set(rows[0])
    for name, feature in features.items():
        total = sum(feature["splits"][s]["count"] for s in data["splits"] if s in feature["splits"])
        assert total == sum(1 for r in rows if r[name] != ""), name
    fare = features["fare"]["splits"]
    mean = sum(fare[s]["mean"] * fare[s]["count"] for s in fare) / sum(fare[s]["count"] for s in fare)
    assert mean == pytest.approx(sum(float(r["fare"]) for r in rows) / len(rows), rel=1e-6)
    assert max(fare[s]["max"] for s in fare) == pytest.approx(max(float(r["fare"]) for r in rows), rel=1e-6)
    for split in data["splits"]:
        company = features["company"]["splits"][split]
        examples = data["examples"][split]
        assert company["missing_pct"] == pytest.approx(100 * (examples - company["count"]) / examples, abs=0.01)
    assert sum(1 for r in rows if r["company"] == "") > 0  # so the missing % is not trivially 0
    assert features["company"]["splits"]["train"]["top_values"] and features["fare"]["splits"]["eval"]["histogram"]
    assert data["anomalies"] == [] and not any(f["anomalous"] for f in data["features"])
    assert "payment_type" in data["schema_text"] and os.path.isfile(data["schema_path"])
    # the z-scored inputs outside the range the Transform learnt on train (widened): none of train's
    clipped = {f["name"]: f for f in data["clipped"]["features"]}
    assert set(clipped) == {"fare", "trip_miles", "trip_seconds"}  # the taxi's log_zscore inputs
    for name, f in clipped.items():
        assert f["splits"]["train"][0] == 0 and f["splits"]["train"][1] == data["examples"]["train"], name
        assert f["low"] < f["high"]
        outside = [float(r[name]) for r in rows if r[name] != ""
                   if not f["low"] <= math.log1p(max(float(r[name]), 0.0)) <= f["high"]]
        assert sum(f["splits"][s][0] for s in data["splits"]) == len(outside), name


def test_training_section_equals_the_keras_history(pipeline_run, report):
    cfg, summary, _ = pipeline_run
    model_run = summary.component("Trainer").outputs["model_run"][0]
    with open(os.path.join(model_run, "training_run.json")) as f:
        info = json.load(f)
    curves = report["training"]["curves"]
    for metric, key in (("loss", "loss"), ("auc", "auc")):
        assert [v for _, v in curves[metric]["train"]] == pytest.approx(info["history"][key], rel=1e-6)
        assert [v for _, v in curves[metric]["validation"]] == pytest.approx(info["history"][f"val_{key}"], rel=1e-6)
        assert [e for e, _ in curves[metric]["train"]] == list(range(info["epochs"]))
    settings = report["training"]["settings"]
    for key in ("strategy", "replicas", "precision", "examples_per_second", "epochs", "steps", "batch_reason"):
        assert settings[key] == info[key]
    assert settings["batch_reason"]  # e.g. "auto on a CPU: the written batch"
    assert settings["early_stopping"] == info["early_stopping"] == "val_auc, patience 2"
    with open(summary.report_path) as f:
        assert "<p>Early stopping: val_auc, patience 2.</p>" in f.read()
    assert report["training"]["logdir"] == model_run
    # runtime.profile_steps=50 (the shared run): one execution of 50 steps traced after the first
    profile = report["training"]["profile"]
    assert profile == info["profile"] and profile["steps"] == 50 == info["steps_per_execution"]
    assert profile["host_ops_per_step"] > 50 and profile["verdict"].startswith(("compute-bound", "overhead-bound"))
    assert tf.io.gfile.glob(os.path.join(model_run, "plugins", "profile", "*", "*.xplane.pb"))
    # and the run's console summary says it in one line
    assert (f"trainer step profile: {profile['ms_per_step']:g} ms per step over 50 steps traced"
            in format_summary(summary))


def test_evaluation_section_equals_tfma(pipeline_run, report):
    cfg, summary, _ = pipeline_run
    ev = report["evaluation"]
    assert ev["overall"]["auc"] == pytest.approx(summary.metrics["auc"], abs=1e-12)
    assert ev["overall"]["example_count"] == summary.metrics["example_count"]
    assert ev["blessed"] is True and ev["failed_thresholds"] == []
    assert ev["baseline_uri"] == "" and ev["baseline_diff"] == {}  # first run: no baseline
    values = [s["metrics"]["auc"] for s in ev["slices"]]
    assert values == sorted(values) and len(values) > 10  # worst first
    # Every payment_type slice is in the report (charted, or named as one-class), and
    # their example counts add up to the overall count.
    payment = [s for s in ev["slices"] if s["slice"].startswith("payment_type=")]
    undefined = [s for s in ev["slices_undefined"] if s["slice"].startswith("payment_type=")]
    assert sum(s["metrics"]["example_count"] for s in payment + undefined) == ev["overall"]["example_count"]
    rules = {t["metric"]: t for t in ev["thresholds"]}
    assert rules["AUC"]["rule"] == f">= {cfg.evaluation.min_auc:g}"
    assert rules["AUC"]["change"] == f"{-cfg.evaluation.max_auc_drop:+g} vs baseline"


def test_serving_section_request_runs_on_the_pushed_model(pipeline_run, report):
    cfg, summary, _ = pipeline_run
    sv = report["serving"]
    assert sv["pushed"] is True and sv["destination"] == summary.pushed_to
    assert sv["inputs"] == {"examples": {"dtype": "string", "shape": [-1]}}
    assert sv["outputs"] == {"probabilities": {"dtype": "float32", "shape": [-1]},
                             "predicted_class": {"dtype": "int64", "shape": [-1]}}  # 1 at its threshold
    request = json.loads(sv["request"])
    assert request["signature_name"] == "serving_default"
    example = base64.b64decode(request["instances"][0]["examples"]["b64"])
    features = set(tf.train.Example.FromString(example).features.feature)
    assert features <= set(cfg.features.serving_columns) and "tips" not in features
    serve = tf.saved_model.load(sv["destination"]).signatures["serving_default"]
    probability = float(serve(examples=tf.constant([example]))["probabilities"].numpy()[0])
    assert 0.0 <= probability <= 1.0
    assert f"/v1/models/{cfg.serving.model_name or cfg.name}:predict" in sv["curl"]


def test_lineage_follows_mlmd_events(pipeline_run, report):
    cfg, summary, _ = pipeline_run
    chain = {row["label"]: row for row in report["lineage"]}
    assert all(row["uri"] and os.path.exists(row["uri"]) for row in report["lineage"])
    assert chain["Model"]["uri"] == summary.model_uri
    store = open_store(cfg.metadata_path)
    trainer_inputs = execution_artifacts(store, summary.component("Trainer").execution_id, INPUT_EVENTS)
    assert trainer_inputs["transform_graph"][0].id == chain["Transform graph"]["id"]
    pusher_inputs = execution_artifacts(store, summary.component("Pusher").execution_id, INPUT_EVENTS)
    assert pusher_inputs["model"][0].id == chain["Model"]["id"]
    assert chain["Pushed model"]["destination"] == summary.pushed_to


def test_page_is_self_contained_and_shows_the_numbers(pipeline_run, report):
    cfg, summary, _ = pipeline_run
    with open(summary.report_path, encoding="utf-8") as f:
        html = f.read()
    for section in SECTIONS:
        assert f'<section id="{section}">' in html
    # Nothing to fetch: every src/href is an in-page anchor; no script, stylesheet or font files.
    assert all(v.startswith("#") for v in re.findall(r'(?:src|href)="([^"]*)"', html))
    assert "<script" not in html and "<link" not in html and "@import" not in html
    assert not re.search(r"url\((?!#)", html)  # only in-page references (the SVG arrow marker)
    assert summary.pushed_to in html and "blessed" in html
    assert f"Step profile ({report['training']['profile']['steps']} steps traced" in html
    # The numbers on the page are the collected ones: every overall metric in its row, every
    # feature's per-split count and missing % in its row.
    for name, value in report["evaluation"]["overall"].items():
        row = re.search(rf'<tr data-metric="{name}">(.*?)</tr>', html, flags=re.S).group(1)
        assert f">{render._number(value)}<" in row, name
    for feature in report["data"]["features"]:
        row = re.search(rf'data-feature="{feature["name"]}">(.*?)</tr>', html, flags=re.S).group(1)
        for stats in feature["splits"].values():
            assert f">{render._number(stats['count'])}<" in row and f">{render._number(stats['missing_pct'], 3)}<" in row


def test_failed_run_report_shows_the_anomalies_and_not_pushed(anomalies_run):
    out_dir, code, stdout, _ = anomalies_run
    assert code == cli.EXIT_FAILED
    paths = [l.split("report: ", 1)[1] for l in stdout.splitlines() if l.startswith("report: ")]
    assert len(paths) == 1 and os.path.isfile(paths[0])
    data = collect.collect(os.path.dirname(paths[0]))
    assert "violates the schema" in data["run"]["error"]
    states = {n["id"]: n["state"] for n in data["pipeline"]["nodes"]}
    assert states["AnomaliesGate"] == "failed" and states["ExampleValidator"] == "complete"
    assert states["Trainer"] == "not run" and states["Pusher"] == "not run"
    flagged = [a for a in data["data"]["anomalies"] if a["feature"] == "payment_type"]
    assert flagged and "Bitcoin" in flagged[0]["description"]
    assert next(f for f in data["data"]["features"] if f["name"] == "payment_type")["anomalous"]
    assert data["serving"]["pushed"] is False
    assert data["serving"]["reason"] == "the run failed at AnomaliesGate, before the Pusher"
    assert not data["training"]["available"] and not data["evaluation"]["available"]
    html = open(paths[0], encoding="utf-8").read()
    assert "not pushed" in html and "Bitcoin" in html and 'id="error"' in html
