"""The alerts as an operator meets them: real `tfxline run`s push to Debian's Pushgateway, Debian's
Prometheus evaluates monitoring/alerts.yml every second and sends to Debian's Alertmanager running
monitoring/alertmanager.yml, whose receivers are a webhook here. Which alerts fire, which do not,
and which the Alertmanager mutes, through /api/v1/alerts and /api/v2/alerts.

The runs share a copy of the session's pipeline run (its serving model is the baseline) and each
scenario pushes under its own grouping label (monitoring.labels: {scenario: ...}), so the groups
stand side by side as two deployments of one pipeline do. The rule file is the committed one with
its `for:` waits cut to a second; the alertmanager config the committed one with its timings cut
and its `equal` lists given the grouping label, as docs/operations.md tells a team to do.
"""
import contextlib
import io
import json
import os
import re
import time

import pytest

from tests.conftest import E2E_TRAIN_STEPS, missing, write_taxi_slice
from tests.prometheus_servers import LABEL

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MONITORING = os.path.join(ROOT, "monitoring")
REQUIRED_BY = "TFXLINE_REQUIRE_PROMETHEUS"

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def stack(monitoring_stack):
    """The session's Pushgateway + Prometheus (rules, alerting) + Alertmanager + webhook
    (tests/conftest.py: monitoring_stack), all on loopback."""
    if monitoring_stack.manager is None:
        missing("prometheus-alertmanager is not installed (apt-get install prometheus-alertmanager)",
                required_by=REQUIRED_BY)
    return monitoring_stack.servers, monitoring_stack.manager, monitoring_stack.webhook


def firing(servers, **labels):
    """Prometheus's firing alerts whose labels include ``labels``."""
    import urllib.request

    with urllib.request.urlopen(servers.prometheus_url + "/api/v1/alerts", timeout=5) as r:
        alerts = json.load(r)["data"]["alerts"]
    return [a for a in alerts if a["state"] == "firing" and all(a["labels"].get(k) == v for k, v in labels.items())]


def wait_firing(servers, seconds=40, **labels):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = firing(servers, **labels)
        if found:
            return found
        time.sleep(0.5)
    raise AssertionError(f"no firing alert with {labels}; firing now: {[a['labels'] for a in firing(servers)]}")


def names(servers, scenario):
    return sorted(a["labels"]["alertname"] for a in firing(servers, **{LABEL: scenario}))


def in_manager(manager, scenario, alertname):
    return [a for a in manager.alerts() if a["labels"].get(LABEL) == scenario and a["labels"]["alertname"] == alertname]


def tfxline_run(stack, scenario, output, data, *sets, no_cache=False, extra_monitoring=()):
    """`tfxline run` in this process with the shared run's config, pushing under ``scenario``."""
    from tfxline.cli import main as cli

    servers, _, _ = stack
    argv = ["run", "--data", str(data), "--output", output,
            "--set", "training.mode=steps", "--set", f"training.train_steps={E2E_TRAIN_STEPS}",
            "--set", "training.epochs=3", "--set", "training.eval_steps=10", "--set", "runtime.profile_steps=50",
            "--set", "serving.tflite=dynamic",
            "--set", f"monitoring.pushgateway_url={servers.gateway_url}", "--set", "monitoring.timeout_seconds=3",
            "--set", f"monitoring.labels={{{LABEL}: {scenario}}}", *extra_monitoring, *sets]
    if no_cache:
        argv.append("--no-cache")
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err):
        code = cli.main(argv, stream=out)
    return code, out.getvalue(), err.getvalue()


def test_refusals_failures_stops_and_candidates_alert_as_they_should(stack, served_copy, anomalies_run, drift_stop_run,
                                                                     worse_candidate_run, taxi_slice, tmp_path):
    servers, manager, webhook = stack
    _, output, _ = served_copy

    # 1. A pre-flight refusal (a CSV without the label column): exit 2, pushed as run_success 0
    #    reason bad_input, and RunFailed pages. Its limit of hours without a run is tiny here
    #    (monitoring.max_hours_without_run), so NoRecentRun fires for it seconds later: the limit is
    #    the pipeline's own, from its config.
    bad = tmp_path / "bad.csv"
    bad.write_text("fare,trip_miles\n1.0,2.0\n")
    code, out, err = tfxline_run(stack, "refused", output, bad,
                                 extra_monitoring=("--set", "monitoring.max_hours_without_run=0.001"))
    assert code == 2 and err.count("error:") == 1, out + err
    assert f"metrics: pushed to {servers.gateway_url} (job taxi {LABEL} refused)" in out
    page, = wait_firing(servers, alertname="TfxlineRunFailed", **{LABEL: "refused"})
    assert page["labels"]["reason"] == "bad_input" and "component" not in page["labels"]
    assert page["annotations"]["summary"] == "tfxline taxi: the last run was refused (input)"
    assert page["annotations"]["runbook_url"].endswith("/operations/#tfxlinerunfailed")
    assert f"--output {output};" in page["annotations"]["command"]  # where to act: tfxline_run_info
    wait_firing(servers, alertname="TfxlineNoRecentRun", **{LABEL: "refused"})

    # 2. A component failure: the AnomaliesGate stops a run on data with an unseen payment type (the
    #    session's anomalies_run, which test_e2e, test_report and test_runs_command read too).
    _, code, out, err = anomalies_run
    assert code == 1, out + err[-2000:]
    page, = wait_firing(servers, alertname="TfxlineRunFailed", **{LABEL: "anomalies"})
    assert page["labels"]["reason"] == "anomalies" and page["labels"]["component"] == "AnomaliesGate"

    # 3. A drift stop (fare x 50; the session's drift_stop_run, which test_e2e reads too): RunFailed
    #    (reason drift) and DriftStoppedRun fire in Prometheus; the Alertmanager mutes the page, and
    #    the drift scores are there to read.
    code, out, err = drift_stop_run["code"], drift_stop_run["out"], drift_stop_run["err"]
    assert code == 1 and "drifted" in err, out + err[-2000:]
    wait_firing(servers, alertname="TfxlineDriftStoppedRun", **{LABEL: "drift"})
    page, = wait_firing(servers, alertname="TfxlineRunFailed", **{LABEL: "drift"})
    assert page["labels"]["reason"] == "drift" and page["labels"]["component"] == "DriftGate"
    fare = servers.wait_for(f'tfxline_drift_score{{job="taxi", {LABEL}="drift", feature="fare"}}')
    threshold = servers.query(f'tfxline_drift_threshold{{job="taxi", {LABEL}="drift", feature="fare"}}')
    assert float(fare[0]["value"][1]) > float(threshold[0]["value"][1])

    # 4. A much worse candidate (the session's worse_candidate_run, which test_e2e reads too), after
    #    a history of three fast runs that trained: the gate refuses it (CandidateWorse, info), it
    #    took more than twice the usual (RunSlow), nothing failed.
    _, _, _, _, text, _ = worse_candidate_run
    assert "blessing: NOT blessed" in text, text
    worse, = wait_firing(servers, alertname="TfxlineCandidateWorseThanServing", **{LABEL: "worse"})
    assert worse["labels"]["metric"] == "auc" and float(worse["value"]) > 0.01
    assert re.fullmatch(r"tfxline taxi: the gate refused a candidate 0\.\d{4} auc worse than the serving model",
                        worse["annotations"]["summary"])
    wait_firing(servers, alertname="TfxlineRunSlow", **{LABEL: "worse"})
    assert names(servers, "worse") == ["TfxlineCandidateWorseThanServing", "TfxlineRunSlow"]

    # 5. A blessed candidate near the serving model (another seed; the gate allows 0.05 AUC less):
    #    pushed; no CandidateWorse even if it lost a little, no RunSlow (two earlier runs that trained:
    #    too few for a baseline), nothing else.
    code, out, err = tfxline_run(stack, "near", output, taxi_slice, "--set", "training.seed=7",
                                 "--set", "evaluation.max_auc_drop=0.05")
    assert code == 0 and "blessing: BLESSED" in out, out + err[-2000:]
    servers.wait_for(f'tfxline_run_success{{job="taxi", {LABEL}="near", reason="pushed"}}')
    gain = servers.wait_for(f'tfxline_main_metric_gain{{job="taxi", {LABEL}="near"}}')
    assert abs(float(gain[0]["value"][1])) < 0.05
    time.sleep(3)  # three evaluations of every rule
    assert names(servers, "near") == [], names(servers, "near")

    # The Alertmanager: the pages reached the pager, the drift page is muted by the drift ticket,
    # the refused candidate went to the info receiver.
    drift_page = manager.wait_for(lambda _: bool(in_manager(manager, "drift", "TfxlineRunFailed")))
    drift_page, = in_manager(manager, "drift", "TfxlineRunFailed")
    assert drift_page["status"]["state"] == "suppressed" and drift_page["status"]["inhibitedBy"], drift_page
    for scenario in ("refused", "anomalies"):
        manager.wait_for(lambda _: any(a["status"]["state"] == "active"
                                       for a in in_manager(manager, scenario, "TfxlineRunFailed")))
    got = webhook.wait_for(lambda alerts: {("refused", "tfxline-pager"), ("anomalies", "tfxline-pager"),
                                           ("drift", "tfxline-ticket"), ("worse", "tfxline-info")}
                           <= {(a["labels"].get(LABEL), a["receiver"]) for a in alerts})
    assert not [a for a in got if a["labels"].get(LABEL) == "drift" and a["labels"]["alertname"] == "TfxlineRunFailed"]
    assert not [a for a in got if a["labels"].get(LABEL) == "near"]


def test_a_gateway_restart_is_noticed_not_silent(stack, tmp_path):
    """A run pushes; the gateway stops: PushgatewayDown pages, and nothing else is said of the
    series it took with it (their alerts resolve as they go stale). It comes back empty, as an
    in-memory gateway does: MetricsGone names the pipeline whose series are gone and NoMetrics
    says none is left, instead of every rule going quiet."""
    from tfxline.cli import main as cli

    servers, manager, _ = stack
    argv = ["run", "--data", str(tmp_path / "none.csv"), "--output", str(tmp_path / "out"),
            "--set", f"monitoring.pushgateway_url={servers.gateway_url}", "--set", "name=restarted"]
    with contextlib.redirect_stderr(io.StringIO()):
        assert cli.main(argv, stream=io.StringIO()) == 2  # a refused run: pushed all the same
    wait_firing(servers, alertname="TfxlineRunFailed", job="restarted")
    servers.stop_gateway()
    wait_firing(servers, alertname="TfxlinePushgatewayDown")
    time.sleep(3)  # three evaluations with the gateway down
    assert not firing(servers, alertname="TfxlineRunFailed", job="restarted")  # stale: the page resolved ...
    assert not firing(servers, alertname="TfxlineMetricsGone") and not firing(servers, alertname="TfxlineNoMetrics")
    servers.start_gateway()  # ... and the gateway comes back empty
    deadline = time.monotonic() + 40
    while firing(servers, alertname="TfxlinePushgatewayDown") and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not firing(servers, alertname="TfxlinePushgatewayDown")
    wait_firing(servers, alertname="TfxlineMetricsGone", job="restarted")
    manager.wait_for(lambda alerts: any(a["labels"]["alertname"] == "TfxlineMetricsGone"
                                        and a["labels"].get("job") == "restarted"
                                        and a["status"]["state"] == "active" for a in alerts))
    wait_firing(servers, alertname="TfxlineNoMetrics")
