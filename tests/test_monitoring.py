"""Run metrics in Prometheus (local/monitoring.py, monitoring/): the rules and the dashboard
against the metric names the code emits, promtool on the rules, and real runs pushing to a real
Pushgateway that a real Prometheus scrapes."""
import contextlib
import io
import os
import re
import subprocess

import pytest

from tfxline.local import monitoring
from tfxline.pipeline.config.load import load_config
from tests.conftest import E2E_TRAIN_STEPS, missing, write_taxi_slice
from tests.mariadb_server import free_port
from tests.prometheus_servers import LABEL

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
    assert checked.returncode == 0 and "SUCCESS: 9 rules found" in checked.stdout, checked.stdout + checked.stderr
    tested = subprocess.run([tool, "test", "rules", "alerts_test.yml"], cwd=MONITORING, capture_output=True, text=True)
    assert tested.returncode == 0, tested.stdout + tested.stderr
    config = subprocess.run([tool, "check", "config", "prometheus.yml"], cwd=MONITORING, capture_output=True, text=True)
    assert config.returncode == 0, config.stdout + config.stderr


def test_rules_use_only_emitted_metric_names():
    """The rules' queries name metrics the code emits (components/run_metrics.METRICS), so the two
    cannot drift apart (the dashboard's: tests/test_dashboard.py)."""
    with open(os.path.join(MONITORING, "alerts.yml")) as f:
        rules = f.read()
    used = set(NAME.findall(rules))
    assert used <= set(monitoring.METRICS), used - set(monitoring.METRICS)


def test_every_reason_is_bounded_and_every_refusal_path_names_one():
    """tfxline_run_success's reason label takes only REASONS' values: an unknown one is a bug,
    refused at once rather than pushed as a new series."""
    from tfxline.components import metric_samples, run_metrics

    with pytest.raises(ValueError, match="unknown run reason"):
        metric_samples.outcome_samples("oops", 0.0)
    for reason in run_metrics.REASONS:
        success = next(s for s in metric_samples.outcome_samples(reason, 0.0, "Trainer")
                       if s.name == "tfxline_run_success")
        assert success.value == (1.0 if reason in run_metrics.COMPLETED else 0.0)
        assert success.labels["component"] == ("" if reason in run_metrics.COMPLETED else "Trainer")


def test_a_gateway_that_is_down_is_one_warning_and_the_textfile_is_written(tmp_path):
    from prometheus_client.parser import text_string_to_metric_families

    cfg = load_config(overrides=[f"output_root={tmp_path}", "monitoring.pushgateway_url=http://127.0.0.1:9",
                                 f"monitoring.textfile_dir={tmp_path / 'textfile'}", "monitoring.timeout_seconds=1"])
    samples = monitoring.run_samples(cfg, None, 1000.0, 1060.5, error=RuntimeError("boom"))
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
    from tfxline.pipeline.config import ConfigError
    with pytest.raises(ConfigError, match="monitoring.pushgateway_url: 'gateway:9091'; must start with http://"):
        load_config(overrides=["monitoring.pushgateway_url=gateway:9091"])
    with pytest.raises(ConfigError, match="monitoring.timeout_seconds: 0.0; must be > 0"):
        load_config(overrides=["monitoring.timeout_seconds=0"])
    with pytest.raises(ConfigError, match="monitoring.max_hours_without_run: 0.0; must be > 0"):
        load_config(overrides=["monitoring.max_hours_without_run=0"])
    with pytest.raises(ConfigError, match="'job' is a label tfxline's metrics use already"):
        load_config(overrides=["monitoring.labels={job: x}"])
    with pytest.raises(ConfigError, match="'__env' is not a Prometheus label name"):
        load_config(overrides=["monitoring.labels={__env: x}"])
    with pytest.raises(ConfigError, match="monitoring.labels.env: empty"):
        load_config(overrides=["monitoring.labels={env: ''}"])


def test_grouping_labels_keep_two_deployments_apart_in_textfiles(tmp_path):
    """monitoring.labels: each deployment's file, its labels on every series."""
    from prometheus_client.parser import text_string_to_metric_families

    for env in ("prod", "staging"):
        cfg = load_config(overrides=[f"output_root={tmp_path}", f"monitoring.textfile_dir={tmp_path / 'tf'}",
                                     f"monitoring.labels={{env: {env}}}"])
        monitoring.publish(cfg, monitoring.refusal_samples(cfg, "bad_input", 1.0, 2.0))
    assert sorted(os.listdir(tmp_path / "tf")) == ["tfxline_taxi_env-prod.prom", "tfxline_taxi_env-staging.prom"]
    text = (tmp_path / "tf" / "tfxline_taxi_env-staging.prom").read_text()
    success, = [s for f in text_string_to_metric_families(text) if f.name == "tfxline_run_success" for s in f.samples]
    assert success.labels == {"job": "taxi", "env": "staging", "reason": "bad_input", "component": ""}


@pytest.fixture(scope="module")
def servers(monitoring_stack):
    """The session's Pushgateway and Prometheus (tests/conftest.py: monitoring_stack)."""
    return monitoring_stack.servers


def value(result, **labels):
    found = [float(r["value"][1]) for r in result if all(r["metric"].get(k) == v for k, v in labels.items())]
    assert len(found) == 1, (labels, result)
    return found[0]


@pytest.mark.e2e
def test_runs_push_their_metrics_to_a_real_prometheus(servers, tmp_path):
    """A real run pushes; Prometheus scrapes the gateway and has the run's AUC, its
    per-component seconds and its pushed version; a second run (served from the cache)
    replaces them; a run with the gateway stopped still succeeds, with one warning."""
    from tfxline.cli import main as cli

    data = write_taxi_slice(tmp_path / "d" / "taxi.csv", limit=1500)
    argv = ["run", "--data", data, "--output", str(tmp_path / "out"), "--set", "training.mode=steps",
            "--set", f"training.train_steps={E2E_TRAIN_STEPS}", "--set", "training.eval_steps=10",
            "--set", "monitoring.timeout_seconds=2", "--set", f"monitoring.labels={{{LABEL}: monitoring}}"]

    def run(gateway_url=servers.gateway_url):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stderr(err):
            code = cli.main(argv + ["--set", f"monitoring.pushgateway_url={gateway_url}"], stream=out)
        return code, out.getvalue(), err.getvalue()

    code, out, err = run()
    assert code == 0, err[-3000:]
    assert f"metrics: pushed to {servers.gateway_url} (job taxi {LABEL} monitoring)" in out
    pushed = int(next(line for line in out.splitlines() if "pushed to:" in line).split()[2].rsplit("/", 1)[1])
    servers.wait_for('tfxline_serving_version{job="taxi", scenario="monitoring"}', lambda r: len(r) == 1 and value(r) == pushed)
    auc = servers.query('tfxline_candidate_metric{job="taxi", scenario="monitoring", metric="auc"}')
    auc_line = next(line for line in out.splitlines() if "eval (overall):" in line)
    assert f"auc {value(auc):.4f}" in auc_line
    seconds = servers.query('tfxline_component_seconds{job="taxi", scenario="monitoring"}')
    assert {r["metric"]["component"] for r in seconds} >= {
        "CsvExampleGen", "Transform", "Trainer", "Evaluator", "Pusher"}
    assert value(seconds, component="Trainer") > 0
    assert value(servers.query('tfxline_run_success{job="taxi", scenario="monitoring", reason="pushed"}')) == 1
    assert value(servers.query('tfxline_examples{job="taxi", scenario="monitoring", split="eval"}')) > 0
    first_end = value(servers.query('tfxline_last_run_timestamp_seconds{job="taxi", scenario="monitoring"}'))
    # one series per pipeline, however many runs: no run id in the grouping key
    assert all(set(r["metric"]) <= {"__name__", "job", "instance", "metric", LABEL} for r in auc)

    code, out, err = run()  # every component from the cache: a new run all the same
    assert code == 0 and "metrics: pushed to" in out, err[-3000:]
    ends = servers.wait_for('tfxline_last_run_timestamp_seconds{job="taxi", scenario="monitoring"}', lambda r: r and value(r) > first_end)
    assert len(ends) == 1

    # the gateway stopped: nothing answers at its address (the session's own gateway stays up for
    # the other tests that read it)
    code, out, err = run(f"http://127.0.0.1:{free_port()}")
    warnings = [line for line in out.splitlines() if line.startswith("warning: run metrics not pushed")]
    assert code == 0 and len(warnings) == 1 and "the run's result stands" in warnings[0], out + err[-2000:]
    assert "pushed to:" in out  # the run's own result, unchanged


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
    from tfxline.components import run_metrics, safe_pusher
    from tfxline.serving import batch_latency
    from tfxline.serving import push as serving_push

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
    assert job == "taxi" and got[("tfxline_pushed", ())] == 0.0
    assert got[("tfxline_run_success", (("reason", "failed"), ("component", "Pusher")))] == 0.0
    assert got[("tfxline_blessed", ())] == 1.0


@pytest.mark.e2e
def test_a_compiled_runs_pusher_reports_what_the_local_run_reports(pipeline_run):
    """The shared run's Pusher inputs, as a compiled run's Pusher gets them: the same metrics as the
    local runner's, value for value (the result and its reason, the alert limits, the evaluation,
    the data, the push), but for what only the orchestrator sees (start time, durations,
    per-component seconds)."""
    from tfxline.components import run_metrics, safe_pusher
    from tfxline.runs.report.artifacts import RunArtifacts, load_run_info
    from tfxline.runs.store import INPUT_EVENTS, tfx_artifacts

    cfg, summary, _ = pipeline_run
    run = RunArtifacts(load_run_info(os.path.join(cfg.output_root, "runs", summary.run_id)))
    inputs = tfx_artifacts(run.store, summary.component("Pusher").execution_id, INPUT_EVENTS)
    assert set(inputs) >= {"model", "model_blessing", "evaluation", "examples", "statistics", "drift_anomalies"}
    compiled = safe_pusher.run_samples(inputs, run.artifact("Pusher", "pushed_model"),
                                       {"serving_dir": cfg.serving_dir, "task": cfg.features.task,
                                        **run_metrics.task_properties(cfg.monitoring, cfg.name, "")}, failed=False)
    local = monitoring.run_samples(cfg, summary, 0.0, 1.0)
    key = lambda s: (s.name, tuple(sorted(s.labels.items())))  # noqa: E731
    by_local = {key(s): s.value for s in local}
    only_local = {"tfxline_run_start_timestamp_seconds", "tfxline_run_duration_seconds", "tfxline_component_seconds",
                  "tfxline_uncached_run_duration_seconds", "tfxline_expected_run_duration_seconds",
                  "tfxline_run_info"}
    assert {k for k in by_local if k[0] not in only_local} == {key(s) for s in compiled}
    for s in compiled:
        if s.name != "tfxline_last_run_timestamp_seconds":
            assert s.value == pytest.approx(by_local[key(s)], rel=1e-9), s
    assert by_local[("tfxline_candidate_metric", (("metric", "auc"),))] > 0.5
    assert {k[1] for k in by_local if k[0] == "tfxline_examples"} >= {(("split", "train"),), (("split", "eval"),)}


def _refused_run(argv, tmp_path):
    from tfxline.cli import main as cli

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err):
        code = cli.main(["run", *argv], stream=out)
    return code, out.getvalue(), err.getvalue()


def test_runs_refused_before_they_start_push_and_are_recorded(tmp_path):
    """A bad CSV (bad_input), a bad --set and a config file refused past its monitoring section
    (config): each exits 2 with one error line, reports run_success 0 with its reason, and leaves
    one record that `tfxline runs` and `runs show latest` print (MLMD has no run of them)."""
    from prometheus_client.parser import text_string_to_metric_families

    from tfxline.cli import main as cli

    output, textfile = tmp_path / "out", tmp_path / "tf"
    output.mkdir()
    bad_csv = tmp_path / "bad.csv"
    bad_csv.write_text("fare,trip_miles\n1.0,2.0\n")
    config = tmp_path / "c.yaml"
    config.write_text(f"name: mine\nevaluation:\n  min_auc: 7\nmonitoring:\n  textfile_dir: {textfile}\n"
                      "  labels: {env: prod}\n")
    cases = [(["--data", str(bad_csv), "--set", f"monitoring.textfile_dir={textfile}"], "taxi", "bad_input"),
             (["--set", "training.foo=1", "--set", f"monitoring.textfile_dir={textfile}"], "taxi", "config"),
             (["--config", str(config)], "mine_env-prod", "config")]
    for argv, group, reason in cases:
        code, out, err = _refused_run(argv + ["--output", str(output)], tmp_path)
        assert code == 2 and len(err.strip().splitlines()) == 1 and err.startswith("error: "), (argv, out, err)
        path = textfile / f"tfxline_{group}.prom"
        assert f"metrics: written to {path}" in out
        families = {f.name: f for f in text_string_to_metric_families(path.read_text())}
        success, = families["tfxline_run_success"].samples
        assert success.value == 0.0 and success.labels["reason"] == reason, (argv, success)
        assert "tfxline_last_run_timestamp_seconds" in families and "tfxline_no_run_alert_seconds" in families
    first_line = err.strip()[len("error: "):]
    for command in (["runs"], ["runs", "show", "latest"]):
        out = io.StringIO()
        assert cli.main([*command, "--output", str(output)], stream=out) == 0
        line, = out.getvalue().strip().splitlines()
        assert re.fullmatch(r"the newest invocation, \d{4}-\d\d-\d\d \d\d:\d\d:\d\d, was refused before it started "
                            r"\(config\): (.*)", line).group(1) == first_line


def test_a_config_whose_monitoring_section_is_bad_pushes_nothing_and_says_only_the_error(tmp_path):
    config = tmp_path / "c.yaml"
    config.write_text(f"monitoring:\n  textfile_dir: {tmp_path / 'tf'}\n  labels: {{job: x}}\n")
    code, out, err = _refused_run(["--config", str(config), "--output", str(tmp_path / "out")], tmp_path)
    assert code == 2 and out == "" and err.startswith("error: ") and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "tf").exists() and not (tmp_path / "out").exists()  # nothing made by a refused run
