"""A run's metrics for Prometheus (the monitoring config section; docs/daily.md).

At the end of every local run, success or failure, ``publish`` sends them with prometheus-client:
to a Pushgateway (``monitoring.pushgateway_url``; job = the pipeline's name and nothing else
in the grouping key, so each pipeline keeps one series per metric however many runs it has,
and a push replaces the previous run's) and/or as a file for node_exporter's textfile collector
(``monitoring.textfile_dir``, written whole). A gateway that is down or slow costs the run at
most ``monitoring.timeout_seconds`` and one warning line; the run's result never changes.

``METRICS`` is the one list of what is emitted: monitoring/alerts.yml and
monitoring/dashboard.json may use only these names (tests/test_monitoring.py).
"""
from __future__ import annotations

import dataclasses
import json
import logging
import os
from typing import Any, Dict, List, Optional, Sequence, TextIO

from components import serving_push, task_metrics

# name: (help, label names)
METRICS: Dict[str, tuple] = {
    "tfxline_run_start_timestamp_seconds": ("When the run started (Unix time).", ()),
    "tfxline_run_end_timestamp_seconds": ("When the run ended (Unix time).", ()),
    "tfxline_run_duration_seconds": ("The run's wall time.", ()),
    "tfxline_run_success": ("1 when every component of the run succeeded, 0 when one failed.", ()),
    "tfxline_component_seconds": ("Seconds each component took in the run.", ("component",)),
    "tfxline_component_failed": ("1 for the component that stopped the run.", ("component",)),
    "tfxline_examples": ("Examples per split of the newest span (StatisticsGen).", ("split",)),
    "tfxline_span": ("The newest span the run trained on.", ()),
    "tfxline_drift_score": ("The DriftGate's measure per feature (L-infinity or Jensen-Shannon).", ("feature",)),
    "tfxline_drift_threshold": ("The DriftGate's threshold per feature.", ("feature",)),
    "tfxline_drift_stopped_run": ("1 when the DriftGate stopped the run.", ()),
    "tfxline_candidate_metric": ("The candidate model's metric on the eval split (the task's gate metrics).",
                                 ("metric",)),
    "tfxline_baseline_metric": ("The serving model's metric on the same eval split (when one serves).", ("metric",)),
    "tfxline_main_metric_gain": ("The candidate's main metric minus the serving model's, signed so that "
                                 "positive is better (auc, accuracy: higher; rmse: lower).", ("metric",)),
    "tfxline_blessed": ("1 when the Evaluator blessed the candidate.", ()),
    "tfxline_pushed": ("1 when the run pushed a model.", ()),
    "tfxline_serving_version": ("The version that serves (the stable one) after the run.", ()),
    "tfxline_last_successful_push_timestamp_seconds": ("When the serving directory's newest version was "
                                                       "pushed (Unix time).", ()),
}


@dataclasses.dataclass
class Sample:
    name: str
    value: float
    labels: Dict[str, str] = dataclasses.field(default_factory=dict)


def run_samples(cfg, summary, started: float, ended: float, failed: bool) -> List[Sample]:
    """The run's metrics from its summary, its report data and the serving directory."""
    out = [Sample("tfxline_run_start_timestamp_seconds", started), Sample("tfxline_run_end_timestamp_seconds", ended),
           Sample("tfxline_run_duration_seconds", round(ended - started, 3)),
           Sample("tfxline_run_success", 0.0 if failed else 1.0)]
    if summary is not None:
        for c in summary.components:
            out.append(Sample("tfxline_component_seconds", c.seconds, {"component": c.node_id}))
            if c.state == "failed":
                out.append(Sample("tfxline_component_failed", 1.0, {"component": c.node_id}))
        drift_failed = any(c.node_id == "DriftGate" and c.state == "failed" for c in summary.components)
        out.append(Sample("tfxline_drift_stopped_run", 1.0 if drift_failed else 0.0))
        if summary.spans:
            out.append(Sample("tfxline_span", float(max(summary.spans))))
        report = _report(cfg, summary)
        out += _evaluation_samples(summary, report)
        out.append(Sample("tfxline_blessed", 1.0 if summary.blessed else 0.0))
        out.append(Sample("tfxline_pushed", 1.0 if summary.pushed else 0.0))
        out += [Sample("tfxline_examples", float(n), {"split": split})
                for split, n in (report.get("data") or {}).get("examples", {}).items()]
        out += _drift_samples(summary)
    out += _serving_samples(cfg)
    return out


def _evaluation_samples(summary, report: Dict[str, Any]) -> List[Sample]:
    """The candidate's gate metrics; the serving model's, from TFMA's diff against it."""
    view = task_metrics.view(summary.task, summary.metrics)
    candidate = {k: float(v) for k, v in view.headline_metrics(summary.metrics).items()
                 if isinstance(v, (int, float))}
    diff = (report.get("evaluation") or {}).get("baseline_diff") or {}
    baseline = {k: candidate[k] - float(d) for k, d in diff.items() if k in candidate and isinstance(d, (int, float))}
    out = [Sample("tfxline_candidate_metric", v, {"metric": k}) for k, v in candidate.items()]
    out += [Sample("tfxline_baseline_metric", v, {"metric": k}) for k, v in baseline.items()]
    if view.main in baseline:
        gain = candidate[view.main] - baseline[view.main]
        out.append(Sample("tfxline_main_metric_gain", gain if view.higher_is_better else -gain, {"metric": view.main}))
    return out


def _report(cfg, summary) -> Dict[str, Any]:
    path = os.path.join(cfg.output_root, "runs", summary.run_id, "report.json")
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


def _drift_samples(summary) -> List[Sample]:
    """Every drift measurement the DriftGate recorded (nothing when it compared nothing)."""
    from components.drift_gate import ANOMALIES_FILE, SPLIT

    gate = next((c for c in summary.components if c.node_id == "DriftGate"), None)
    uris = (gate.outputs.get("drift_anomalies") or []) if gate else []
    if not uris:
        return []
    from tensorflow_metadata.proto.v0 import anomalies_pb2
    path = os.path.join(uris[0], f"Split-{SPLIT}", ANOMALIES_FILE)
    if not os.path.isfile(path):
        return []
    with open(path, "rb") as f:
        anomalies = anomalies_pb2.Anomalies.FromString(f.read())
    worst: Dict[str, tuple] = {}  # feature -> (value, threshold): against two references, the larger
    for info in anomalies.drift_skew_info:
        feature = ".".join(info.path.step)
        for m in info.drift_measurements:
            if feature not in worst or m.value > worst[feature][0]:
                worst[feature] = (m.value, m.threshold)
    out = []
    for feature, (value, threshold) in sorted(worst.items()):
        out += [Sample("tfxline_drift_score", value, {"feature": feature}),
                Sample("tfxline_drift_threshold", threshold, {"feature": feature})]
    return out


def _serving_samples(cfg) -> List[Sample]:
    from components import serving_release

    versions = serving_push.versions(cfg.serving_dir)
    if not versions:
        return []
    stable = serving_release.read(cfg.serving_dir).stable or versions[-1]
    out = [Sample("tfxline_serving_version", float(stable))]
    pushed_at = serving_push.read_metadata(cfg.serving_dir, versions[-1]).get("pushed_at")
    if pushed_at:
        import calendar
        import time
        out.append(Sample("tfxline_last_successful_push_timestamp_seconds",
                          float(calendar.timegm(time.strptime(pushed_at, "%Y-%m-%dT%H:%M:%SZ")))))
    return out


def registry(samples: Sequence[Sample]):
    from prometheus_client import CollectorRegistry, Gauge

    reg = CollectorRegistry()
    gauges: Dict[str, Any] = {}
    for s in samples:
        help_text, label_names = METRICS[s.name]
        if s.name not in gauges:
            gauges[s.name] = Gauge(s.name, help_text, list(label_names), registry=reg)
        gauge = gauges[s.name]
        (gauge.labels(**s.labels) if label_names else gauge).set(s.value)
    return reg


def enabled(cfg) -> bool:
    return bool(cfg.monitoring.pushgateway_url or cfg.monitoring.textfile_dir)


def publish(cfg, samples: Sequence[Sample], stream: Optional[TextIO] = None) -> List[str]:
    """Push / write the samples; returns what was done, in words. Never raises: a failure is
    one warning line on ``stream`` (and in the log)."""
    done: List[str] = []
    try:
        reg = registry(samples)
    except Exception as e:  # noqa: BLE001 - monitoring never changes a run's result
        _warn(stream, f"run metrics not built ({_first_line(e)})")
        return done
    if cfg.monitoring.pushgateway_url:
        try:
            from prometheus_client import push_to_gateway
            push_to_gateway(cfg.monitoring.pushgateway_url, job=cfg.name, registry=reg,
                            timeout=cfg.monitoring.timeout_seconds)
            done.append(f"pushed to {cfg.monitoring.pushgateway_url} (job {cfg.name})")
        except Exception as e:  # noqa: BLE001
            _warn(stream, f"run metrics not pushed to {cfg.monitoring.pushgateway_url} ({_first_line(e)}); "
                          "the run's result stands; fix: check monitoring.pushgateway_url and that the gateway is up")
    if cfg.monitoring.textfile_dir:
        try:
            from prometheus_client import write_to_textfile
            os.makedirs(cfg.monitoring.textfile_dir, exist_ok=True)
            path = os.path.join(cfg.monitoring.textfile_dir, f"tfxline_{_safe(cfg.name)}.prom")
            write_to_textfile(path, reg)  # a temporary file renamed into place: never half-written
            done.append(f"written to {path}")
        except Exception as e:  # noqa: BLE001
            _warn(stream, f"run metrics not written to {cfg.monitoring.textfile_dir} ({_first_line(e)}); "
                          "the run's result stands; fix: check monitoring.textfile_dir")
    return done


def _safe(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "_-" else "_" for ch in name)


def _first_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return text[0] if text else type(e).__name__


def _warn(stream: Optional[TextIO], message: str) -> None:
    logging.getLogger(__name__).warning(message)
    if stream is not None:
        print(f"warning: {message}", file=stream, flush=True)
