"""monitoring/dashboard.json (Grafana) against the metric contract (components/run_metrics.py):
its queries name only metrics the runs push and show all but a few; every legend names the
pipeline; verdicts read yes / no, not 0 / 1; one meaning per panel (no span numbers beside
example counts, no counts among the model's metrics). Then, with Debian's Prometheus and
Pushgateway, every query of the dashboard returns data from a pushed set of samples."""
import json
import os
import re
import time
import urllib.parse
import urllib.request

import pytest

from tfxline.components import metric_samples, run_metrics
from tfxline.components.run_metrics import METRICS, Sample

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DASHBOARD = os.path.join(ROOT, "monitoring", "dashboard.json")
NAME = re.compile(r"\btfxline_[a-z0-9_]+")
# Not on the dashboard, on purpose:
# - tfxline_run_start_timestamp_seconds: the start is the last run's end minus its duration, both shown;
# - tfxline_run_info: where a pipeline runs (host, output root), for the alerts' commands.
NOT_ON_DASHBOARD = {"tfxline_run_start_timestamp_seconds", "tfxline_run_info"}
COUNTS = {"tfxline_examples", "tfxline_eval_examples"}


def dashboard():
    with open(DASHBOARD) as f:
        return json.load(f)


def panels(d=None):
    """Every panel, rows' panels included."""
    out = []
    for p in (d or dashboard())["panels"]:
        out.append(p)
        out += p.get("panels", [])
    return out


def targets(d=None):
    return [(p, t) for p in panels(d) for t in p.get("targets", [])]


def names(expr):
    return set(NAME.findall(expr))


def variables():
    return {v["name"]: v for v in dashboard()["templating"]["list"]}


def test_queries_name_only_pushed_metrics_and_show_all_but_a_few():
    exprs = [t["expr"] for _, t in targets()]
    exprs += [v["query"]["query"] for v in variables().values() if isinstance(v.get("query"), dict)]
    used = set().union(*(names(e) for e in exprs))
    assert used <= set(METRICS), used - set(METRICS)
    assert NOT_ON_DASHBOARD <= set(METRICS)  # the list names no metric that is gone
    missing_ones = set(METRICS) - NOT_ON_DASHBOARD - used
    assert not missing_ones, f"add a panel for {sorted(missing_ones)} or justify it in NOT_ON_DASHBOARD"


def test_every_legend_names_the_pipeline_and_its_grouping_label():
    for p, t in targets():
        assert "{{job}}" in t.get("legendFormat", ""), (p["title"], t)
        assert "{{env}}" in t["legendFormat"], (p["title"], t)


def test_every_query_follows_the_pipeline_and_env_variables():
    for p, t in targets():
        for selector in re.findall(r"tfxline_[a-z0-9_]+\{([^}]*)\}", t["expr"]):
            assert 'job=~"$pipeline"' in selector and 'env=~"$env"' in selector, (p["title"], t["expr"])
        assert re.search(r"tfxline_[a-z0-9_]+\{", t["expr"]), (p["title"], t["expr"])  # no bare name


def test_the_variables():
    found = dashboard()["templating"]["list"]
    assert found[1]["name"] == "pipeline"  # tests/test_monitoring.py reads it there
    assert found[1]["query"]["query"] == "label_values(tfxline_run_success, job)"
    env = variables()["env"]
    assert env["query"]["query"].startswith("label_values(") and env["query"]["query"].endswith(", env)")
    assert env["includeAll"] and env["allValue"] == ".*"  # All matches a pipeline without env too


def mapping_texts(field_defaults):
    return {k: v["text"] for m in field_defaults.get("mappings", []) if m["type"] == "value"
            for k, v in m["options"].items()}


def test_verdicts_read_as_words_with_colours():
    verdicts = {"tfxline_blessed", "tfxline_pushed", "tfxline_drift_stopped_run", "tfxline_run_success"}
    checked = set()
    for p in panels():
        shown = set().union(*(names(t["expr"]) for t in p.get("targets", [])))
        if shown & verdicts:
            defaults = p["fieldConfig"]["defaults"]
            texts = mapping_texts(defaults)
            assert set(texts) == {"0", "1"} and all(texts.values()), (p["title"], texts)
            assert all(v.get("color") for m in defaults["mappings"] for v in m["options"].values()), p["title"]
            checked |= shown & verdicts
    assert checked == verdicts
    stats = {names(p["targets"][0]["expr"]).pop(): p for p in panels() if p["type"] == "stat" and len(p["targets"]) == 1}
    assert mapping_texts(stats["tfxline_blessed"]["fieldConfig"]["defaults"]) == {"1": "yes", "0": "no"}
    assert mapping_texts(stats["tfxline_pushed"]["fieldConfig"]["defaults"]) == {"1": "yes", "0": "no"}


def panel_with(metric, kind=None):
    found = [p for p in panels() if any(metric in names(t["expr"]) for t in p.get("targets", []))
             and (kind is None or p["type"] == kind)]
    assert found, metric
    return found


def test_since_the_last_push_turns_red_at_26_hours_beside_the_pipelines_own_limit():
    (p,) = panel_with("tfxline_last_successful_push_timestamp_seconds")
    steps = p["fieldConfig"]["defaults"]["thresholds"]["steps"]
    assert {"color": "red", "value": 93600} in steps and p["fieldConfig"]["defaults"]["unit"] == "s"
    assert any("tfxline_no_push_alert_seconds" in names(t["expr"]) for t in p["targets"])
    (p,) = panel_with("tfxline_last_run_timestamp_seconds")
    assert any("tfxline_no_run_alert_seconds" in names(t["expr"]) for t in p["targets"])


def test_one_meaning_per_panel():
    # the span is a number to read, not to plot beside counts of examples
    for p in panel_with("tfxline_span"):
        assert p["type"] == "stat" and len(p["targets"]) == 1, p["title"]
    for p in panel_with("tfxline_examples"):
        assert all(names(t["expr"]) == {"tfxline_examples"} for t in p["targets"]), p["title"]
    # the model's quality metrics: no counts among them, one metric (one scale) per panel
    for p in panel_with("tfxline_candidate_metric"):
        shown = set().union(*(names(t["expr"]) for t in p["targets"]))
        assert shown == {"tfxline_candidate_metric", "tfxline_baseline_metric"}, p["title"]
        assert p.get("repeat") == "metric" and all('metric=~"$metric"' in t["expr"] for t in p["targets"])
    # the run's duration against its expected one, never an average over cached and failed runs
    (p,) = panel_with("tfxline_expected_run_duration_seconds")
    assert {"tfxline_run_duration_seconds", "tfxline_uncached_run_duration_seconds"} <= set().union(
        *(names(t["expr"]) for t in p["targets"]))
    assert not any("_over_time" in t["expr"] for _, t in targets())
    # the last run's result names its reason and the component that stopped it
    (p,) = panel_with("tfxline_run_success")
    legends = " ".join(t["legendFormat"] for t in p["targets"])
    assert "{{reason}}" in legends and "{{component}}" in legends


def test_panel_ids_are_unique_and_every_panel_fits_the_grid():
    ids = [p["id"] for p in panels()]
    assert len(ids) == len(set(ids))
    for p in panels():
        g = p["gridPos"]
        assert g["x"] + g["w"] <= 24 and g["w"] > 0 and g["h"] > 0, p["title"]
        assert p["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, p["title"]


# ---- every query against a real Prometheus -------------------------------------------------

NOW = time.time()


def pushed_samples():
    """A full pushed run of JOB (env prod): every metric in METRICS."""
    samples = metric_samples.outcome_samples("pushed", NOW - 60, no_run_hours=26, no_push_hours=26)
    samples += [Sample("tfxline_run_start_timestamp_seconds", NOW - 180),
                Sample("tfxline_run_info", 1.0, {"host": "etl-1", "output_root": "/srv/tfxline"}),
                Sample("tfxline_run_duration_seconds", 120.0),
                Sample("tfxline_uncached_run_duration_seconds", 120.0),
                Sample("tfxline_expected_run_duration_seconds", 105.0),
                Sample("tfxline_component_seconds", 30.0, {"component": "Trainer"}),
                Sample("tfxline_component_seconds", 12.5, {"component": "Evaluator"}),
                Sample("tfxline_span", 7.0),
                Sample("tfxline_blessed", 1.0),
                Sample("tfxline_pushed", 1.0),
                Sample("tfxline_serving_version", 12.0),
                Sample("tfxline_last_successful_push_timestamp_seconds", NOW - 60),
                Sample("tfxline_drift_score", 0.02, {"feature": "fare"}),
                Sample("tfxline_drift_threshold", 0.1, {"feature": "fare"})]
    samples += metric_samples.examples_samples({"train": 9800, "eval": 2450})
    samples += metric_samples.evaluation_samples(
        "binary", {"auc": 0.95, "accuracy": 0.9, "loss": 0.3, "example_count": 2450},
        {"auc": 0.01, "accuracy": -0.002, "loss": -0.01})
    return samples


def drift_samples():
    """A drift-stopped run of DRIFT_JOB (no grouping labels): its result, the failed
    component and the scores."""
    return metric_samples.outcome_samples("drift", NOW - 30, component="DriftGate", no_run_hours=26,
                                          no_push_hours=26) + [
        Sample("tfxline_run_duration_seconds", 20.0),
        Sample("tfxline_drift_score", 0.4, {"feature": "fare"}),
        Sample("tfxline_drift_threshold", 0.1, {"feature": "fare"})]


# The pipelines pushed here: names no other test pushes to the session's shared gateway
# (tests/conftest.py: monitoring_stack), so every query below sees these two and nothing else.
JOB, DRIFT_JOB = "dashboard", "dashboard-drift"
JOBS = f"{JOB}|{DRIFT_JOB}"


@pytest.fixture(scope="module")
def prometheus(monitoring_stack):
    from prometheus_client import push_to_gateway

    s = monitoring_stack.servers
    push_to_gateway(s.gateway_url, job=JOB, registry=run_metrics.registry(pushed_samples()),
                    grouping_key={"env": "prod"})
    push_to_gateway(s.gateway_url, job=DRIFT_JOB, registry=run_metrics.registry(drift_samples()))
    s.wait_for(f'tfxline_last_run_timestamp_seconds{{job=~"{JOBS}"}}', lambda r: len(r) == 2)
    return s


def test_pushed_samples_cover_the_metric_contract():
    """Between them the two pushed groups hold every metric: no query below is excused."""
    assert {s.name for s in pushed_samples() + drift_samples()} == set(METRICS)


def resolve(expr, job, env=".*", metric=".+"):
    return expr.replace("$pipeline", job).replace("$env", env).replace("$metric", metric)


@pytest.mark.parametrize("panel, target", [(p["title"], t["refId"]) for p, t in targets()])
def test_every_query_returns_data_from_prometheus(prometheus, panel, target):
    (t,) = [t for p, t in targets() if p["title"] == panel and t["refId"] == target]
    answers = {job: prometheus.query(resolve(t["expr"], job)) for job in (JOB, DRIFT_JOB)}
    assert any(answers.values()), (t["expr"], answers)
    for job, result in answers.items():
        assert all(r["metric"]["job"] == job for r in result), (t["expr"], result)  # the pipeline selects


def test_queries_as_the_dashboard_shows_them(prometheus):
    """The last run's result, per pipeline; the env variable selects one deployment, All matches
    a pipeline without the label; the variables' label_values find the pipelines and envs."""
    (p,) = panel_with("tfxline_run_success")
    completed, stopped = (t["expr"] for t in p["targets"])
    assert [(r["metric"]["job"], r["metric"]["reason"], r["value"][1])
            for r in prometheus.query(resolve(completed, JOBS))] == [(JOB, "pushed", "1")]
    assert [(r["metric"]["job"], r["metric"]["reason"], r["metric"]["component"], r["value"][1])
            for r in prometheus.query(resolve(stopped, JOBS))] == [(DRIFT_JOB, "drift", "DriftGate", "0")]
    assert len(prometheus.query(resolve(completed, JOB, env="prod"))) == 1
    assert not prometheus.query(resolve(completed, JOB, env="staging"))

    def label_values(selector, label):
        url = prometheus.prometheus_url + "/api/v1/series?" + urllib.parse.urlencode({"match[]": selector})
        with urllib.request.urlopen(url, timeout=5) as r:
            return sorted({s[label] for s in json.load(r)["data"] if label in s})

    assert {JOB, DRIFT_JOB} <= set(label_values("tfxline_run_success", "job"))  # beside the session's others
    assert label_values(f'tfxline_run_success{{job=~"{JOBS}"}}', "job") == [JOB, DRIFT_JOB]
    assert label_values(f'tfxline_run_success{{job=~"{JOBS}"}}', "env") == ["prod"]
    assert label_values(f'tfxline_candidate_metric{{job=~"{JOB}"}}', "metric") == ["accuracy", "auc", "loss"]
