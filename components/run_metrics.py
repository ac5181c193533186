"""A run's metrics for Prometheus: the one list of names (``METRICS``), the samples each part of
a run yields, and the push with prometheus-client.

Two callers build a run's samples from these parts: the local runner at the end of every run
(pipeline/monitoring.py, from the run's summary) and, in a compiled run (Kubeflow / Vertex AI /
run-compiled), the SafePusher from inside its container, the run's last task, from its inputs
(components/safe_pusher.py; the ``pushgateway_url`` pipeline parameter turns it on). They live
with the components, below the orchestrator, so the Pusher's container needs nothing else.

Pushgateway: job = the pipeline's name and nothing else in the grouping key, so each pipeline
keeps one series per metric however many runs it has, and a push (PUT) replaces the previous
run's. A gateway that is down or slow costs at most ``timeout`` seconds and one warning line;
the caller's result never changes (``publish`` never raises).

monitoring/alerts.yml and monitoring/dashboard.json may use only the names in ``METRICS``
(tests/test_monitoring.py).
"""
from __future__ import annotations

import dataclasses
import logging
import os
from typing import Any, Dict, List, Mapping, Optional, Sequence, TextIO

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


def evaluation_samples(task: str, metrics: Mapping[str, Any], baseline_diff: Mapping[str, Any]) -> List[Sample]:
    """The candidate's gate metrics (the task's headline ones); the serving model's, from TFMA's
    diff against it (candidate - baseline); the main metric's gain, signed so positive is better."""
    view = task_metrics.view(task, metrics)
    candidate = {k: float(v) for k, v in view.headline_metrics(metrics).items() if _number(v)}
    baseline = {k: candidate[k] - float(d) for k, d in (baseline_diff or {}).items() if k in candidate and _number(d)}
    out = [Sample("tfxline_candidate_metric", v, {"metric": k}) for k, v in candidate.items()]
    out += [Sample("tfxline_baseline_metric", v, {"metric": k}) for k, v in baseline.items()]
    if view.main in baseline:
        gain = candidate[view.main] - baseline[view.main]
        out.append(Sample("tfxline_main_metric_gain", gain if view.higher_is_better else -gain, {"metric": view.main}))
    return out


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and v == v  # not NaN


def examples_samples(examples: Mapping[str, int]) -> List[Sample]:
    return [Sample("tfxline_examples", float(n), {"split": split}) for split, n in sorted(examples.items())]


def statistics_examples(statistics) -> Dict[str, int]:
    """{split: examples} of a StatisticsGen output artifact."""
    from tfx.components.statistics_gen import stats_artifact_utils
    from tfx.types import artifact_utils

    out = {}
    for split in artifact_utils.decode_split_names(statistics.split_names):
        datasets = stats_artifact_utils.load_statistics(statistics, split).proto().datasets
        out[split] = int(datasets[0].num_examples) if datasets else 0
    return out


def drift_samples(drift_anomalies_uri: str) -> List[Sample]:
    """Every drift measurement the DriftGate recorded (nothing when it compared nothing); a
    feature compared with two references reports the larger."""
    from components.drift_gate import ANOMALIES_FILE, SPLIT

    from components import storage

    path = storage.join(drift_anomalies_uri, f"Split-{SPLIT}", ANOMALIES_FILE) if drift_anomalies_uri else ""
    if not path or not storage.isfile(path):
        return []
    from tensorflow_metadata.proto.v0 import anomalies_pb2
    anomalies = anomalies_pb2.Anomalies.FromString(storage.read_bytes(path))
    worst: Dict[str, tuple] = {}  # feature -> (value, threshold)
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


def serving_samples(serving_dir: str) -> List[Sample]:
    """The stable version after the run and when the newest version was pushed."""
    from components import serving_release

    versions = serving_push.versions(serving_dir)
    if not versions:
        return []
    stable = serving_release.read(serving_dir).stable or versions[-1]
    out = [Sample("tfxline_serving_version", float(stable))]
    pushed_at = serving_push.read_metadata(serving_dir, versions[-1]).get("pushed_at")
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


def publish(samples: Sequence[Sample], job: str, *, pushgateway_url: str = "", textfile_dir: str = "",
            timeout: float = 5.0, stream: Optional[TextIO] = None, config_key: str = "monitoring.") -> List[str]:
    """Push / write the samples; returns what was done, in words. Never raises: a failure is one
    warning line on ``stream`` and in the log. ``config_key`` names where the fix is (the config
    section, or the compiled pipeline's parameter)."""
    done: List[str] = []
    try:
        reg = registry(samples)
    except Exception as e:  # noqa: BLE001 - monitoring never changes a run's result
        _warn(stream, f"run metrics not built ({first_line(e)})")
        return done
    if pushgateway_url:
        try:
            from prometheus_client import push_to_gateway
            push_to_gateway(pushgateway_url, job=job, registry=reg, timeout=timeout)
            done.append(f"pushed to {pushgateway_url} (job {job})")
        except Exception as e:  # noqa: BLE001
            _warn(stream, f"run metrics not pushed to {pushgateway_url} ({first_line(e)}); the run's result stands; "
                          f"fix: check {config_key}pushgateway_url and that the gateway is up")
    if textfile_dir:
        try:
            from prometheus_client import write_to_textfile
            os.makedirs(textfile_dir, exist_ok=True)
            path = os.path.join(textfile_dir, f"tfxline_{_safe(job)}.prom")
            write_to_textfile(path, reg)  # a temporary file renamed into place: never half-written
            done.append(f"written to {path}")
        except Exception as e:  # noqa: BLE001
            _warn(stream, f"run metrics not written to {textfile_dir} ({first_line(e)}); the run's result stands; "
                          f"fix: check {config_key}textfile_dir")
    return done


def _safe(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "_-" else "_" for ch in name)


def first_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return text[0] if text else type(e).__name__


def _warn(stream: Optional[TextIO], message: str) -> None:
    logging.getLogger(__name__).warning(message)
    if stream is not None:
        print(f"warning: {message}", file=stream, flush=True)
