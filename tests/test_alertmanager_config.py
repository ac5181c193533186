"""monitoring/alertmanager.yml: amtool accepts it, every alert of monitoring/alerts.yml routes to
the receiver of its severity (a new alert with no route, or a new severity, fails here), and the
inhibitions mute what they should and nothing else in a real Alertmanager (Debian's
prometheus-alertmanager, its receivers pointed at a webhook in this process)."""
import os
import subprocess

import pytest
import yaml

from tests.conftest import missing

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MONITORING = os.path.join(ROOT, "monitoring")
CONFIG = os.path.join(MONITORING, "alertmanager.yml")
REQUIRED_BY = "TFXLINE_REQUIRE_PROMETHEUS"  # .ci/run sets it on the host
# the receiver each severity of alerts.yml goes to
RECEIVERS = {"page": "tfxline-pager", "ticket": "tfxline-ticket", "info": "tfxline-info"}


def rules():
    with open(os.path.join(MONITORING, "alerts.yml")) as f:
        return [r for g in yaml.safe_load(f)["groups"] for r in g["rules"] if "alert" in r]


def binaries():
    from tests.prometheus_servers import alertmanager_binaries
    found = alertmanager_binaries()
    if found is None:
        missing("prometheus-alertmanager and amtool are not installed (apt-get install prometheus-alertmanager)",
                required_by=REQUIRED_BY)
    return found


def amtool(*args):
    return subprocess.run([binaries()["amtool"], *args], capture_output=True, text=True, cwd=ROOT)


def test_amtool_accepts_the_config():
    done = amtool("check-config", CONFIG)
    assert done.returncode == 0 and "SUCCESS" in done.stdout, done.stdout + done.stderr
    assert " - 3 inhibit rules" in done.stdout and " - 3 receivers" in done.stdout, done.stdout


def test_the_config_uses_the_current_inhibition_syntax():
    with open(CONFIG) as f:
        config = yaml.safe_load(f)
    for rule in config["inhibit_rules"]:
        assert set(rule) <= {"source_matchers", "target_matchers", "equal"}, rule  # not source_match / target_match
    assert config["route"]["group_by"] == ["alertname", "job"]
    assert {r["name"] for r in config["receivers"]} == set(RECEIVERS.values())


@pytest.mark.parametrize("rule", rules(), ids=lambda r: r["alert"])
def test_every_alert_routes_to_the_receiver_of_its_severity(rule):
    severity = rule["labels"]["severity"]
    assert severity in RECEIVERS, f"{rule['alert']}: severity {severity!r} has no receiver (add a route)"
    labels = [f"alertname={rule['alert']}", f"severity={severity}", "job=taxi"]
    if rule["alert"] == "TfxlineRunFailed":
        labels += ["reason=failed", "component=Trainer"]
    done = amtool("config", "routes", "test", f"--config.file={CONFIG}",
                  f"--verify.receivers={RECEIVERS[severity]}", *labels)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip() == RECEIVERS[severity]


@pytest.mark.parametrize("rule", rules(), ids=lambda r: r["alert"])
def test_every_alert_has_its_runbook_section(rule):
    """docs/operations.md has a section headed by the alert's name, the anchor its runbook_url
    points at (MkDocs makes `## TfxlineRunFailed` #tfxlinerunfailed)."""
    with open(os.path.join(ROOT, "docs", "operations.md")) as f:
        headings = [line[3:].strip() for line in f if line.startswith("## ")]
    assert rule["alert"] in headings, f"docs/operations.md: add a section '## {rule['alert']}'"
    url = rule["annotations"]["runbook_url"]
    assert url.endswith("/operations/#" + rule["alert"].lower()), url


def test_a_route_test_with_the_wrong_receiver_fails():
    """--verify.receivers does assert: the checks above would catch a misroute."""
    done = amtool("config", "routes", "test", f"--config.file={CONFIG}", "--verify.receivers=tfxline-info",
                  "alertname=TfxlineRunFailed", "severity=page", "job=taxi")
    assert done.returncode != 0 and "did not match" in done.stdout + done.stderr


# ---- the inhibitions in a real Alertmanager -------------------------------------------------

@pytest.fixture
def alertmanager(tmp_path):
    from tests.prometheus_servers import Alertmanager, Webhook
    binaries()
    webhook = Webhook().start()
    am = Alertmanager(str(tmp_path), CONFIG, webhook.url).start()  # group_wait, group_interval 1s
    yield am, webhook
    am.stop()
    webhook.stop()


def alert(name, **labels):
    severity = {r["alert"]: r["labels"]["severity"] for r in rules()}[name]
    return {"labels": {"alertname": name, "severity": severity, **labels},
            "annotations": {"summary": f"{name} {labels}"}}


def find(alerts, name, **labels):
    found = [a for a in alerts if a["labels"]["alertname"] == name
             and all(a["labels"].get(k) == v for k, v in labels.items())]
    assert len(found) == 1, (name, labels, alerts)
    return found[0]


def settled(alerts, count):
    return len(alerts) == count and all(a["status"]["state"] != "unprocessed" for a in alerts)


def settled_muted(am, count, *muted):
    """All `count` alerts processed and each (name, labels) of `muted` marked suppressed.
    Alertmanager's inhibitor learns of a source alert from its own subscription, after the API
    has accepted it, and marks targets from a cache that lags a busy machine: a target posted in
    the same request can read "active" for a moment (CI saw it in three tests). So wait for the
    marks, within wait_for's deadline; one never muted fails here."""
    def done(found):
        return settled(found, count) and all(
            find(found, name, **labels)["status"]["state"] == "suppressed" for name, labels in muted)
    alerts = am.wait_for(done)
    for name, labels in muted:
        a = find(alerts, name, **labels)
        assert a["status"]["state"] == "suppressed" and a["status"]["inhibitedBy"], a
    return alerts


def test_a_drift_stop_mutes_the_same_pipelines_run_failed_page_only(alertmanager):
    am, webhook = alertmanager
    am.post([alert("TfxlineRunFailed", job="taxi", reason="drift", component="DriftGate"),
             alert("TfxlineDriftStoppedRun", job="taxi"),
             alert("TfxlineRunFailed", job="fraud", reason="failed", component="Trainer")])
    alerts = settled_muted(am, 3, ("TfxlineRunFailed", {"job": "taxi"}))
    other = find(alerts, "TfxlineRunFailed", job="fraud")
    assert other["status"]["state"] == "active" and not other["status"]["inhibitedBy"], other
    assert find(alerts, "TfxlineDriftStoppedRun", job="taxi")["status"]["state"] == "active"
    assert [r["name"] for r in other["receivers"]] == ["tfxline-pager"]

    # the notifications: the other pipeline's page, the drift ticket; never the muted page
    got = webhook.wait_for(lambda a: {(x["labels"]["alertname"], x["labels"]["job"]) for x in a} >= {
        ("TfxlineRunFailed", "fraud"), ("TfxlineDriftStoppedRun", "taxi")})
    page = next(x for x in got if x["labels"]["alertname"] == "TfxlineRunFailed")
    assert page["receiver"] == "tfxline-pager" and page["labels"]["job"] == "fraud"
    assert next(x for x in got if x["labels"]["alertname"] == "TfxlineDriftStoppedRun")["receiver"] == "tfxline-ticket"
    import time
    time.sleep(2)  # two more group intervals: a muted alert would have been sent by now
    assert ("TfxlineRunFailed", "taxi") not in {(x["labels"]["alertname"], x["labels"]["job"]) for x in webhook.alerts()}


def test_a_drift_stop_does_not_mute_a_failure_of_another_reason(alertmanager):
    """The inhibition is for the drift stop's own page: a RunFailed with another reason (a stale
    drift alert beside a new failure) still pages."""
    am, _ = alertmanager
    am.post([alert("TfxlineDriftStoppedRun", job="taxi"),
             alert("TfxlineRunFailed", job="taxi", reason="failed", component="Trainer"),
             alert("TfxlineRunFailed", job="taxi", reason="drift", component="DriftGate")])
    # the drift page is the control: once the inhibitor has muted it, it has seen the source
    alerts = settled_muted(am, 3, ("TfxlineRunFailed", {"job": "taxi", "reason": "drift"}))
    assert find(alerts, "TfxlineRunFailed", job="taxi", reason="failed")["status"]["state"] == "active"


def test_a_gateway_down_mutes_the_missing_series_alerts_of_every_pipeline(alertmanager):
    am, _ = alertmanager
    am.post([alert("TfxlinePushgatewayDown", job="pushgateway", instance="pushgateway:9091"),
             alert("TfxlineMetricsGone", job="taxi"),
             alert("TfxlineNoMetrics"),
             alert("TfxlineNoRecentRun", job="fraud"),
             alert("TfxlineRunFailed", job="taxi", reason="failed", component="Trainer")])
    muted = ("TfxlineMetricsGone", "TfxlineNoMetrics", "TfxlineNoRecentRun")
    alerts = settled_muted(am, 5, *[(name, {}) for name in muted])
    assert find(alerts, "TfxlinePushgatewayDown")["status"]["state"] == "active"
    assert find(alerts, "TfxlineRunFailed")["status"]["state"] == "active"  # not the gateway's doing


def test_no_recent_run_mutes_no_recent_push_of_the_same_pipeline(alertmanager):
    am, _ = alertmanager
    am.post([alert("TfxlineNoRecentRun", job="taxi"),
             alert("TfxlineNoRecentPush", job="taxi"),
             alert("TfxlineNoRecentPush", job="fraud")])
    alerts = settled_muted(am, 3, ("TfxlineNoRecentPush", {"job": "taxi"}))
    assert find(alerts, "TfxlineNoRecentPush", job="fraud")["status"]["state"] == "active"
    assert find(alerts, "TfxlineNoRecentRun", job="taxi")["status"]["state"] == "active"
