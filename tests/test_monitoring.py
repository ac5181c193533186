"""Run metrics in Prometheus (pipeline/monitoring.py, monitoring/): the rules and the dashboard
against the metric names the code emits, promtool on the rules, and real runs pushing to a real
Pushgateway that a real Prometheus scrapes."""
import contextlib
import io
import json
import os
import re
import subprocess

import pytest

from pipeline import monitoring
from pipeline.config_loader import load_config
from tests.conftest import E2E_TRAIN_STEPS, missing, write_taxi_slice

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MONITORING = os.path.join(ROOT, "monitoring")
NAME = re.compile(r"\btfxline_[a-z0-9_]+")
REQUIRED_BY = "TFXLINE_REQUIRE_PROMETHEUS"  # .ci/run sets it on the host; the Debian 13 root has no servers


def promtool():
    from tests.prometheus_servers import binaries
    found = binaries()
    if found is None:
        missing("promtool, prometheus and prometheus-pushgateway are not installed (apt-get install prometheus "
                "prometheus-pushgateway)", required_by=REQUIRED_BY)
    return found["promtool"]


def test_promtool_accepts_the_rules_and_their_unit_tests():
    tool = promtool()
    checked = subprocess.run([tool, "check", "rules", "alerts.yml"], cwd=MONITORING, capture_output=True, text=True)
    assert checked.returncode == 0 and "SUCCESS: 5 rules found" in checked.stdout, checked.stdout + checked.stderr
    tested = subprocess.run([tool, "test", "rules", "alerts_test.yml"], cwd=MONITORING, capture_output=True, text=True)
    assert tested.returncode == 0, tested.stdout + tested.stderr
    config = subprocess.run([tool, "check", "config", "prometheus.yml"], cwd=MONITORING, capture_output=True, text=True)
    assert config.returncode == 0, config.stdout + config.stderr


def test_rules_and_dashboard_use_only_emitted_metric_names():
    """The dashboard's and the rules' queries name metrics pipeline/monitoring.py emits, so the
    two cannot drift apart; and every emitted metric is on the dashboard."""
    with open(os.path.join(MONITORING, "dashboard.json")) as f:
        dashboard = json.load(f)
    exprs = [t["expr"] for p in dashboard["panels"] for t in p["targets"]]
    exprs.append(dashboard["templating"]["list"][1]["query"]["query"])
    with open(os.path.join(MONITORING, "alerts.yml")) as f:
        rules = f.read()
    used = set(NAME.findall(" ".join(exprs))) | set(NAME.findall(rules))
    assert used <= set(monitoring.METRICS), used - set(monitoring.METRICS)
    on_dashboard = set(NAME.findall(" ".join(exprs)))
    assert on_dashboard >= set(monitoring.METRICS) - {"tfxline_component_failed", "tfxline_run_start_timestamp_seconds",
                                                      "tfxline_run_end_timestamp_seconds"}


def test_a_gateway_that_is_down_is_one_warning_and_the_textfile_is_written(tmp_path):
    from prometheus_client.parser import text_string_to_metric_families

    cfg = load_config(overrides=[f"output_root={tmp_path}", "monitoring.pushgateway_url=http://127.0.0.1:9",
                                 f"monitoring.textfile_dir={tmp_path / 'textfile'}", "monitoring.timeout_seconds=1"])
    samples = monitoring.run_samples(cfg, None, 1000.0, 1060.5, failed=True)
    out = io.StringIO()
    done = monitoring.publish(cfg, samples, out)
    lines = out.getvalue().strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("warning: run metrics not pushed to http://127.0.0.1:9 (")
    assert "fix: check monitoring.pushgateway_url" in lines[0]
    path = tmp_path / "textfile" / "tfxline_taxi.prom"
    assert done == [f"written to {path}"]
    families = {f.name: f for f in text_string_to_metric_families(path.read_text())}
    assert families["tfxline_run_success"].samples[0].value == 0.0
    assert families["tfxline_run_duration_seconds"].samples[0].value == 60.5
    assert [p for p in os.listdir(tmp_path / "textfile")] == ["tfxline_taxi.prom"]  # no temporary left


def test_bad_monitoring_values_are_refused():
    from pipeline.config import ConfigError
    with pytest.raises(ConfigError, match="monitoring.pushgateway_url: 'gateway:9091'; must start with http://"):
        load_config(overrides=["monitoring.pushgateway_url=gateway:9091"])
    with pytest.raises(ConfigError, match="monitoring.timeout_seconds: 0.0; must be > 0"):
        load_config(overrides=["monitoring.timeout_seconds=0"])


@pytest.fixture(scope="module")
def servers(tmp_path_factory):
    from tests.prometheus_servers import Servers, binaries
    if binaries() is None:
        missing("prometheus and prometheus-pushgateway are not installed (apt-get install prometheus "
                "prometheus-pushgateway)", required_by=REQUIRED_BY)
    s = Servers(str(tmp_path_factory.mktemp("prometheus"))).start()
    yield s
    s.stop()


def value(result, **labels):
    found = [float(r["value"][1]) for r in result if all(r["metric"].get(k) == v for k, v in labels.items())]
    assert len(found) == 1, (labels, result)
    return found[0]


@pytest.mark.e2e
def test_runs_push_their_metrics_to_a_real_prometheus(servers, tmp_path):
    """A real run pushes; Prometheus scrapes the gateway and has the run's AUC, its
    per-component seconds and its pushed version; a second run (served from the cache)
    replaces them; a run with the gateway stopped still succeeds, with one warning."""
    from pipeline import cli

    data = write_taxi_slice(tmp_path / "d" / "taxi.csv", limit=1500)
    argv = ["run", "--data", data, "--output", str(tmp_path / "out"), "--set", "training.mode=steps",
            "--set", f"training.train_steps={E2E_TRAIN_STEPS}", "--set", "training.eval_steps=10",
            "--set", f"monitoring.pushgateway_url={servers.gateway_url}", "--set", "monitoring.timeout_seconds=2"]

    def run():
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stderr(err):
            code = cli.main(argv, stream=out)
        return code, out.getvalue(), err.getvalue()

    code, out, err = run()
    assert code == 0, err[-3000:]
    assert f"metrics: pushed to {servers.gateway_url} (job taxi)" in out
    pushed = int(next(line for line in out.splitlines() if "pushed to:" in line).rstrip().rsplit("/", 1)[1])
    servers.wait_for('tfxline_serving_version{job="taxi"}', lambda r: len(r) == 1 and value(r) == pushed)
    auc = servers.query('tfxline_candidate_metric{job="taxi", metric="auc"}')
    auc_line = next(line for line in out.splitlines() if "eval (overall):" in line)
    assert f"auc {value(auc):.4f}" in auc_line
    seconds = servers.query('tfxline_component_seconds{job="taxi"}')
    assert {r["metric"]["component"] for r in seconds} >= {"CsvExampleGen", "Transform", "Trainer", "Evaluator", "Pusher"}
    assert value(seconds, component="Trainer") > 0
    assert value(servers.query('tfxline_run_success{job="taxi"}')) == 1
    assert value(servers.query('tfxline_examples{job="taxi", split="eval"}')) > 0
    first_end = value(servers.query('tfxline_run_end_timestamp_seconds{job="taxi"}'))
    # one series per pipeline, however many runs: no run id in the grouping key
    assert all(set(r["metric"]) <= {"__name__", "job", "instance", "metric"} for r in auc)

    code, out, err = run()  # every component from the cache: a new run all the same
    assert code == 0 and "metrics: pushed to" in out, err[-3000:]
    ends = servers.wait_for('tfxline_run_end_timestamp_seconds{job="taxi"}', lambda r: r and value(r) > first_end)
    assert len(ends) == 1

    servers.stop_gateway()
    code, out, err = run()
    warnings = [line for line in out.splitlines() if line.startswith("warning: run metrics not pushed")]
    assert code == 0 and len(warnings) == 1 and "the run's result stands" in warnings[0], out + err[-2000:]
    assert "pushed to:" in out  # the run's own result, unchanged
    servers.start_gateway()


def _pusher_artifacts(model_files, tmp_path):
    import shutil

    from tfx.types import standard_artifacts

    model = standard_artifacts.Model()
    model.uri = str(tmp_path / "model")
    shutil.copytree(model_files, os.path.join(model.uri, "Format-Serving"))
    blessing = standard_artifacts.ModelBlessing()
    blessing.set_int_custom_property("blessed", 1)
    return {"model": [model], "model_blessing": [blessing]}, standard_artifacts.PushedModel()


def test_a_compiled_runs_pusher_pushes_its_metrics_pushed_or_failed(model_files, tmp_path, monkeypatch, caplog):
    """The SafePusher with the pushgateway_url pipeline parameter (a compiled run's last task):
    a gateway that is down is one warning in the task's log and the model is pushed all the
    same; a push that fails still reports the run, as failed at the Pusher, and fails the task."""
    from components import batch_latency, run_metrics, safe_pusher, serving_push

    monkeypatch.setattr(batch_latency, "measure", lambda *a: {})
    inputs, pushed = _pusher_artifacts(model_files, tmp_path)
    props = {"serving_dir": str(tmp_path / "serving"), "keep_versions": 5, "pushgateway_url": "http://127.0.0.1:9",
             "pipeline_name": "taxi", "metrics_timeout": 1.0}
    with caplog.at_level("WARNING"):
        safe_pusher.Executor().Do(inputs, {"pushed_model": [pushed]}, props)
    assert pushed.get_int_custom_property("pushed") == 1 and len(serving_push.versions(props["serving_dir"])) == 1
    warnings = [r.getMessage() for r in caplog.records if "run metrics not pushed" in r.getMessage()]
    assert len(warnings) == 1 and "fix: check the pipeline parameter pushgateway_url" in warnings[0]

    sent = []
    monkeypatch.setattr(run_metrics, "publish", lambda samples, job, **kw: sent.append((job, samples)) or [])

    def disk_full(*a, **kw):
        raise OSError("No space left on device")
    monkeypatch.setattr(serving_push, "push", disk_full)
    inputs, pushed = _pusher_artifacts(model_files, tmp_path / "again")
    with pytest.raises(OSError, match="No space left"):
        safe_pusher.Executor().Do(inputs, {"pushed_model": [pushed]}, dict(props, serving_dir=str(tmp_path / "s2")))
    (job, samples), = sent
    got = {(s.name, tuple(s.labels.items())): s.value for s in samples}
    assert job == "taxi" and got[("tfxline_run_success", ())] == 0.0 and got[("tfxline_pushed", ())] == 0.0
    assert got[("tfxline_component_failed", (("component", "Pusher"),))] == 1.0 and got[("tfxline_blessed", ())] == 1.0


@pytest.mark.e2e
def test_a_compiled_runs_pusher_reports_what_the_local_run_reports(pipeline_run):
    """The shared run's Pusher inputs, as a compiled run's Pusher gets them: the same metrics as the
    local runner's, value for value, but for what only the orchestrator sees (start time,
    duration, per-component seconds)."""
    from components import safe_pusher
    from pipeline.report.artifacts import RunArtifacts, load_run_info
    from pipeline.store import INPUT_EVENTS, tfx_artifacts

    cfg, summary, _ = pipeline_run
    run = RunArtifacts(load_run_info(os.path.join(cfg.output_root, "runs", summary.run_id)))
    inputs = tfx_artifacts(run.store, summary.component("Pusher").execution_id, INPUT_EVENTS)
    assert set(inputs) >= {"model", "model_blessing", "evaluation", "examples", "statistics", "drift_anomalies"}
    compiled = safe_pusher.run_samples(inputs, run.artifact("Pusher", "pushed_model"),
                                       {"serving_dir": cfg.serving_dir, "task": cfg.features.task}, failed=False)
    local = monitoring.run_samples(cfg, summary, 0.0, 1.0, failed=False)
    key = lambda s: (s.name, tuple(sorted(s.labels.items())))  # noqa: E731
    by_local = {key(s): s.value for s in local}
    only_local = {"tfxline_run_start_timestamp_seconds", "tfxline_run_duration_seconds", "tfxline_component_seconds"}
    assert {k for k in by_local if k[0] not in only_local} == {key(s) for s in compiled}
    for s in compiled:
        if s.name != "tfxline_run_end_timestamp_seconds":
            assert s.value == pytest.approx(by_local[key(s)], rel=1e-9), s
    assert by_local[("tfxline_candidate_metric", (("metric", "auc"),))] > 0.5
    assert {k[1] for k in by_local if k[0] == "tfxline_examples"} >= {(("split", "train"),), (("split", "eval"),)}
