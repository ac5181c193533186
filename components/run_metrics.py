"""A run's metrics for Prometheus: the one list of names (``METRICS``), the bounded reasons a run
ends for (``REASONS``), the samples each part of a run yields, and the push with prometheus-client.

Every run reports, whatever its end (monitoring/alerts.yml relies on it):
- a local run: the local runner at its end, complete, stopped or failed, and the CLI for a run
  refused before it started (local/monitoring.py, from the run's summary);
- a compiled run (Kubeflow / Vertex AI / run-compiled), from inside its containers when the
  ``pushgateway_url`` pipeline parameter is set: the SafePusher at the run's end, pushed or not,
  and when it fails (components/safe_pusher.py); the AnomaliesGate and the DriftGate when they
  stop the run, since nothing after them runs (``report_stop``).
They live with the components, below the orchestrator, so a task's container needs nothing else.

Pushgateway: the grouping key is job = the pipeline's name plus the config's monitoring.labels
(e.g. env), so each deployment of a pipeline keeps one series per metric however many runs it
has, and a push (PUT) replaces that group's previous run, and only it. A gateway that is down or
slow costs at most ``timeout`` seconds and one warning line; the caller's result never changes
(``publish`` never raises).

monitoring/alerts.yml and monitoring/dashboard.json may use only the names in ``METRICS``
(tests/test_monitoring.py, tests/test_dashboard.py).
"""
from __future__ import annotations

import dataclasses
import logging
import os
from typing import Any, Dict, List, Mapping, Optional, Sequence, TextIO

from components import task_metrics
from serving import push as serving_push

# name: (help, label names). One name per meaning: a count, a model metric and a time never share one.
METRICS: Dict[str, tuple] = {
    # every invocation of `tfxline run` (refused before it started, failed, or complete) and every compiled run
    "tfxline_run_success": ("1 when the run completed (pushed or not), 0 when it was refused or failed; "
                            "reason says which (REASONS), component names the one that stopped it.",
                            ("reason", "component")),
    "tfxline_last_run_timestamp_seconds": ("When the run ended (Unix time), whatever its result.", ()),
    "tfxline_no_run_alert_seconds": ("monitoring.max_hours_without_run in seconds: TfxlineNoRecentRun's limit.", ()),
    "tfxline_no_push_alert_seconds": ("monitoring.max_hours_without_push in seconds: TfxlineNoRecentPush's limit.",
                                      ()),
    # a local run's, which the runner times
    "tfxline_run_info": ("1, labelled with where the run ran: its host and output root (the alerts' commands "
                         "name them).", ("host", "output_root")),
    "tfxline_run_start_timestamp_seconds": ("When the run started (Unix time).", ()),
    "tfxline_run_duration_seconds": ("The run's wall time, whatever it did (cached, failed or refused).", ()),
    "tfxline_uncached_run_duration_seconds": ("The run's wall time, pushed only for a run that completed and "
                                              "trained (its Trainer not served from the cache).", ()),
    "tfxline_expected_run_duration_seconds": ("The median wall time of up to the last 10 earlier runs that "
                                              "completed and trained (from 3 of them): TfxlineRunSlow's baseline.",
                                              ()),
    "tfxline_component_seconds": ("Seconds each component took in the run.", ("component",)),
    "tfxline_examples": ("Examples per split of the newest span (StatisticsGen).", ("split",)),
    "tfxline_span": ("The newest span the run trained on.", ()),
    "tfxline_drift_score": ("The DriftGate's measure per feature (L-infinity or Jensen-Shannon).", ("feature",)),
    "tfxline_drift_threshold": ("The DriftGate's threshold per feature.", ("feature",)),
    "tfxline_drift_stopped_run": ("1 when the DriftGate stopped the run.", ()),
    "tfxline_candidate_metric": ("The candidate model's quality metrics on the eval split (the task's gate "
                                 "metrics; no counts).", ("metric",)),
    "tfxline_baseline_metric": ("The serving model's quality metric on the same eval split (when one serves).",
                                ("metric",)),
    "tfxline_main_metric_gain": ("The candidate's main metric minus the serving model's, signed so that "
                                 "positive is better (auc, accuracy: higher; rmse: lower).", ("metric",)),
    "tfxline_eval_examples": ("The examples the Evaluator judged the candidate on.", ()),
    "tfxline_blessed": ("1 when the Evaluator blessed the candidate.", ()),
    "tfxline_pushed": ("1 when the run pushed a model.", ()),
    "tfxline_serving_version": ("The version that serves (the stable one) after the run.", ()),
    "tfxline_last_successful_push_timestamp_seconds": ("When the serving directory's newest version was "
                                                       "pushed (Unix time).", ()),
}

# tfxline_run_success's reason: a bounded set, so a label value never grows a new series per run.
REASONS: Dict[str, str] = {
    # the run completed: run_success 1
    "pushed": "the candidate was blessed and serves (pushed now, or already)",
    "gate_refused": "the Evaluator refused the candidate; the serving model stays",
    "push_refused": "the candidate was blessed but its TFLite model failed its check; nothing was pushed",
    # the run was refused or failed: run_success 0
    "config": "the config or a flag was refused before the run started",
    "bad_input": "the input (CSV, schema, labels, the serving directory's release) was refused before the run",
    "anomalies": "the AnomaliesGate stopped the run: the data broke the schema or a split is empty",
    "drift": "the DriftGate stopped the run: the new data drifted from the serving model's",
    "failed": "a component failed",
}
COMPLETED = ("pushed", "gate_refused", "push_refused")
# the component that stops a run for each gate's reason
GATE_REASONS = {"AnomaliesGate": "anomalies", "DriftGate": "drift"}
# the labels every series has already, or that a rule matches on: a grouping label may not take one
RESERVED_LABELS = frozenset({"job", "instance", "metric", "split", "feature"} | {
    name for _, labels in METRICS.values() for name in labels})


@dataclasses.dataclass
class Sample:
    name: str
    value: float
    labels: Dict[str, str] = dataclasses.field(default_factory=dict)


def outcome_samples(reason: str, ended: float, component: str = "", no_run_hours: float = 0.0,
                    no_push_hours: float = 0.0) -> List[Sample]:
    """What every run pushes, refused, failed or complete: its result and why (``reason``, one of
    REASONS; ``component``: the one that stopped it), when it ended, whether the DriftGate
    stopped it, and the alert limits of its config (the rules read them, so each pipeline's
    schedule is its own: monitoring/alerts.yml)."""
    if reason not in REASONS:
        raise ValueError(f"unknown run reason {reason!r}; use one of {', '.join(REASONS)}")
    out = [Sample("tfxline_run_success", 1.0 if reason in COMPLETED else 0.0,
                  {"reason": reason, "component": component if reason not in COMPLETED else ""}),
           Sample("tfxline_last_run_timestamp_seconds", ended),
           Sample("tfxline_drift_stopped_run", 1.0 if reason == "drift" else 0.0)]
    if no_run_hours:
        out.append(Sample("tfxline_no_run_alert_seconds", no_run_hours * 3600.0))
    if no_push_hours:
        out.append(Sample("tfxline_no_push_alert_seconds", no_push_hours * 3600.0))
    return out


# A compiled run's tasks that report the run (the Pusher at its end, the gates when they stop it):
# their exec properties, from the pipeline parameter pushgateway_url and the monitoring section
# (kubeflow/compile.py).
TASK_PARAMETERS = (("pushgateway_url", str), ("pipeline_name", str), ("metrics_timeout", float),
                   ("metrics_labels", str), ("max_hours_without_run", float), ("max_hours_without_push", float))


def task_parameters() -> Dict[str, Any]:
    """TASK_PARAMETERS as a component spec's optional ExecutionParameters (TFX is imported here,
    not at this module's import: a refused local run reports itself without loading TFX)."""
    from tfx.types.component_spec import ExecutionParameter

    return {name: ExecutionParameter(type=kind, optional=True) for name, kind in TASK_PARAMETERS}


def task_properties(monitoring, pipeline_name: str, pushgateway_url: Any) -> Dict[str, Any]:
    """TASK_PARAMETERS' values from a config's monitoring section (``pushgateway_url``: the
    compiled pipeline's runtime parameter)."""
    import json

    return {"pushgateway_url": pushgateway_url, "pipeline_name": pipeline_name,
            "metrics_timeout": monitoring.timeout_seconds, "metrics_labels": json.dumps(dict(monitoring.labels)),
            "max_hours_without_run": monitoring.max_hours_without_run,
            "max_hours_without_push": monitoring.max_hours_without_push}


def task_outcome_samples(exec_properties: Mapping[str, Any], reason: str, component: str = "") -> List[Sample]:
    """outcome_samples for a compiled run's task, its limits from its exec properties."""
    import time

    return outcome_samples(reason, time.time(), component, float(exec_properties.get("max_hours_without_run") or 0),
                           float(exec_properties.get("max_hours_without_push") or 0))


def publish_from_task(exec_properties: Mapping[str, Any], samples: Sequence[Sample]) -> None:
    """A compiled run's task pushes the run's metrics to the pipeline parameter's gateway; a
    gateway that is down is one warning in the task's log. Never raises."""
    import json

    for done in publish(samples, exec_properties.get("pipeline_name") or "tfxline",
                        pushgateway_url=exec_properties.get("pushgateway_url") or "",
                        timeout=float(exec_properties.get("metrics_timeout") or 5.0),
                        config_key="the pipeline parameter ",
                        labels=json.loads(exec_properties.get("metrics_labels") or "{}")):
        logging.info("run metrics %s", done)


def report_stop(exec_properties: Mapping[str, Any], reason: str, component: str,
                extra: Sequence[Sample] = ()) -> None:
    """A compiled run's gate that stops the run reports it (nothing after it runs, the Pusher
    neither): why, its measurements (``extra``), and what serves. Never raises."""
    try:
        samples = task_outcome_samples(exec_properties, reason, component) + list(extra)
        if exec_properties.get("serving_dir"):
            samples += serving_samples(exec_properties["serving_dir"])
    except Exception as e:  # noqa: BLE001 - monitoring never changes a run's result
        logging.warning("run metrics not collected (%s); the run's result stands", first_line(e))
        return
    publish_from_task(exec_properties, samples)


def completed_reason(blessed: Optional[bool], pushed: Optional[bool], push_refused: str) -> str:
    """A completed run's reason: pushed, refused by the gate, or its TFLite model refused."""
    if pushed:
        return "pushed"
    return "push_refused" if blessed and push_refused else "gate_refused"


EXAMPLE_COUNT = "example_count"  # TFMA's: a count, pushed apart from the quality metrics


def evaluation_samples(task: str, metrics: Mapping[str, Any], baseline_diff: Mapping[str, Any]) -> List[Sample]:
    """The candidate's gate metrics (the task's headline ones, counts apart); the serving
    model's, from TFMA's diff against it (candidate - baseline); the main metric's gain, signed so
    positive is better; the examples judged."""
    view = task_metrics.view(task, metrics)
    headline = {k: float(v) for k, v in view.headline_metrics(metrics).items() if _number(v)}
    count = headline.pop(EXAMPLE_COUNT, None)
    baseline = {k: headline[k] - float(d) for k, d in (baseline_diff or {}).items() if k in headline and _number(d)}
    out = [Sample("tfxline_candidate_metric", v, {"metric": k}) for k, v in headline.items()]
    out += [Sample("tfxline_baseline_metric", v, {"metric": k}) for k, v in baseline.items()]
    if view.main in baseline:
        gain = headline[view.main] - baseline[view.main]
        out.append(Sample("tfxline_main_metric_gain", gain if view.higher_is_better else -gain, {"metric": view.main}))
    if count is not None:
        out.append(Sample("tfxline_eval_examples", count))
    return out


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and v == v  # not NaN


def examples_samples(examples: Mapping[str, int]) -> List[Sample]:
    return [Sample("tfxline_examples", float(n), {"split": split}) for split, n in sorted(examples.items())]


def statistics_examples_at(uri: str) -> Dict[str, int]:
    """{split: examples} of the StatisticsGen output at ``uri`` (its Split-* folders): what a run's
    summary records of it."""
    from tfx.types import artifact_utils, standard_artifacts

    from serving import storage

    if not uri or not storage.isdir(uri):
        return {}
    statistics = standard_artifacts.ExampleStatistics()
    statistics.uri = uri
    statistics.split_names = artifact_utils.encode_split_names(
        sorted(name[len("Split-"):] for name in storage.listdir(uri) if name.startswith("Split-")))
    return statistics_examples(statistics)


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

    from serving import storage

    path = storage.join(drift_anomalies_uri, f"Split-{SPLIT}", ANOMALIES_FILE) if drift_anomalies_uri else ""
    if not path or not storage.isfile(path):
        return []
    from tensorflow_metadata.proto.v0 import anomalies_pb2
    return drift_samples_of(anomalies_pb2.Anomalies.FromString(storage.read_bytes(path)))


def drift_samples_of(anomalies) -> List[Sample]:
    """The drift measurements of a TFDV Anomalies proto, the larger per feature."""
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
    from serving import release as serving_release

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


def registry(samples: Sequence[Sample], labels: Optional[Mapping[str, str]] = None):
    """The samples as gauges; ``labels`` (the grouping labels) on every one, for a textfile (a
    push carries them in its grouping key instead)."""
    from prometheus_client import CollectorRegistry, Gauge

    extra = dict(labels or {})
    reg = CollectorRegistry()
    gauges: Dict[str, Any] = {}
    for s in samples:
        help_text, label_names = METRICS[s.name]
        if s.name not in gauges:
            gauges[s.name] = Gauge(s.name, help_text, list(label_names) + sorted(extra), registry=reg)
        gauge = gauges[s.name]
        values = {**s.labels, **extra}
        (gauge.labels(**values) if values else gauge).set(s.value)
    return reg


def publish(samples: Sequence[Sample], job: str, *, pushgateway_url: str = "", textfile_dir: str = "",
            timeout: float = 5.0, stream: Optional[TextIO] = None, config_key: str = "monitoring.",
            labels: Optional[Mapping[str, str]] = None) -> List[str]:
    """Push / write the samples; returns what was done, in words. Never raises: a failure is one
    warning line on ``stream`` and in the log. ``config_key`` names where the fix is (the config
    section, or the compiled pipeline's parameter). The grouping key is ``job`` and ``labels``
    (monitoring.labels, e.g. {env: prod}): a push replaces that group's previous run, and only it."""
    done: List[str] = []
    labels = dict(labels or {})
    group = " ".join([f"job {job}"] + [f"{k} {v}" for k, v in sorted(labels.items())])
    if pushgateway_url:
        try:
            from prometheus_client import push_to_gateway
            push_to_gateway(pushgateway_url, job=job, registry=registry(samples), timeout=timeout,
                            grouping_key=labels)
            done.append(f"pushed to {pushgateway_url} ({group})")
        except Exception as e:  # noqa: BLE001 - monitoring never changes a run's result
            _warn(stream, f"run metrics not pushed to {pushgateway_url} ({first_line(e)}); the run's result stands; "
                          f"fix: check {config_key}pushgateway_url and that the gateway is up")
    if textfile_dir:
        try:
            from prometheus_client import write_to_textfile
            os.makedirs(textfile_dir, exist_ok=True)
            name = "_".join([_safe(job)] + [f"{_safe(k)}-{_safe(v)}" for k, v in sorted(labels.items())])
            path = os.path.join(textfile_dir, f"tfxline_{name}.prom")
            write_to_textfile(path, registry(samples, {"job": job, **labels}))  # renamed into place: never half-written
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
