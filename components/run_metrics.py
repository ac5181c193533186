"""A run's metrics for Prometheus: the one list of names (``METRICS``; monitoring/alerts.yml and
dashboard.json use only these), the bounded reasons a run ends for (``REASONS``), and the push
with prometheus-client; the samples each part of a run yields are components/metric_samples.py's.
Every run reports, whatever its end: a local run from its runner or the CLI (local/monitoring.py),
a compiled run from its containers (the SafePusher at its end, a gate that stops it). They live
with the components so a task's container needs nothing else.

Pushgateway: the grouping key is job = the pipeline's name plus the config's monitoring.labels
(e.g. env), so a push (PUT) replaces that deployment's previous run, and only it. A gateway that
is down or slow costs at most ``timeout`` seconds and one warning line (``publish`` never raises).
"""
from __future__ import annotations

import dataclasses
import logging
import os
from typing import Any, Dict, List, Mapping, Optional, Sequence, TextIO

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
    "interrupted": "a Ctrl-C or SIGTERM stopped the run while a component ran",
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
