"""A local run's metrics for Prometheus (the monitoring config section; docs/daily.md).

Every ``tfxline run`` sends them, whatever its end: refused before it started (a bad CSV, a bad
``--set``: ``refusal_samples``), stopped by a gate, failed, or complete (``run_samples``). They go
to a Pushgateway (``monitoring.pushgateway_url``) and/or to a file for node_exporter's textfile
collector (``monitoring.textfile_dir``, written whole), grouped by the pipeline's name and
``monitoring.labels``. The names and the push (components/run_metrics.py) and the samples
(components/metric_samples.py) are shared with a compiled run's tasks; here a run's summary
(never its report: a report that failed to render must not cost the run its metrics), its end
and the serving directory become samples.
"""
from __future__ import annotations

import json
import os
import socket
import statistics
from typing import List, Optional, Sequence, TextIO

from tfxline.components import metric_samples, run_metrics
from tfxline.components.run_metrics import METRICS, Sample  # noqa: F401 - the one list, for monitoring/'s tests
from tfxline.runs import summary as summary_lib

# TfxlineRunSlow's baseline: the median of up to this many earlier runs that completed and trained ...
EXPECTED_FROM_RUNS = 10
# ... once there are at least this many
EXPECTED_AFTER_RUNS = 3


def outcome(summary, error: Optional[BaseException]) -> tuple:
    """(reason, component) of a run that started: which gate or component stopped it, or how it
    completed (run_metrics.REASONS)."""
    from tfxline.components.anomalies_gate import DataAnomaliesError
    from tfxline.components.drift_gate import DataDriftError

    if error is None:
        if summary is None:
            return "failed", ""
        return metric_samples.completed_reason(summary.blessed, summary.pushed, summary.push_refused), ""
    if isinstance(error, KeyboardInterrupt):  # Ctrl-C or SIGTERM (local/runner.py)
        return "interrupted", (summary_lib.stopped_component(summary) if summary is not None else "")
    for cause in causes(error):
        if isinstance(cause, DataDriftError):
            return "drift", "DriftGate"
        if isinstance(cause, DataAnomaliesError):
            return "anomalies", "AnomaliesGate"
    failed = [c.node_id for c in summary.components if c.state == "failed"] if summary is not None else []
    if failed and failed[0] in run_metrics.GATE_REASONS:  # a gate's own error, wrapped by the orchestrator
        return run_metrics.GATE_REASONS[failed[0]], failed[0]
    return "failed", (failed[0] if failed else "")


def causes(e: Optional[BaseException]) -> List[BaseException]:
    """``e`` and what caused it, outermost first (each once)."""
    seen: List[BaseException] = []
    while e is not None and e not in seen:
        seen.append(e)
        e = e.__cause__ or e.__context__
    return seen


def run_samples(cfg, summary, started: float, ended: float, error: Optional[BaseException] = None) -> List[Sample]:
    """A run's metrics from its summary (None: the run failed before MLMD recorded it), how it
    ended (``error``: what stopped it) and the serving directory."""
    reason, component = outcome(summary, error)
    head = _common(cfg, reason, component, started, ended)
    if summary is None:
        return metric_samples.assemble(head, cfg.serving_dir, drift=drift_samples(summary, error))
    head += [Sample("tfxline_component_seconds", c.seconds, {"component": c.node_id}) for c in summary.components]
    statistics_gen = summary.component("StatisticsGen")
    examples = None
    if statistics_gen and statistics_gen.outputs.get("statistics"):
        examples = metric_samples.statistics_examples_at(statistics_gen.outputs["statistics"][0])
    durations = []  # only the runner times a run
    if reason in run_metrics.COMPLETED and trained(summary):
        durations.append(Sample("tfxline_uncached_run_duration_seconds", round(ended - started, 3)))
    expected = expected_duration(cfg, summary.run_id)
    if expected is not None:
        durations.append(Sample("tfxline_expected_run_duration_seconds", expected))
    return metric_samples.assemble(
        head, cfg.serving_dir, span=max(summary.spans) if summary.spans else None, task=summary.task,
        metrics=summary.metrics, baseline_diff=summary.baseline_diff, blessed=summary.blessed,
        pushed=bool(summary.pushed), examples=examples, durations=durations, drift=drift_samples(summary, error))


def drift_samples(summary, error: Optional[BaseException]) -> List[Sample]:
    """The DriftGate's scores: a drift stop's travel in its error (TFX deleted the failed
    execution's output); a run it let through has them in its output."""
    carried = (getattr(c, "drift_samples", None) for c in causes(error))  # drift_gate.DriftStopped's
    stopped = next((samples for samples in carried if samples), None)
    if stopped is not None:
        return list(stopped)
    gate = summary.component("DriftGate") if summary is not None else None
    uri = (gate.outputs.get("drift_anomalies") or [""])[0] if gate else ""
    return metric_samples.drift_samples(uri) if uri else []


def refusal_samples(cfg, reason: str, started: float, ended: float) -> List[Sample]:
    """A run refused before it started (bad input or config): that it failed and why, when, and
    what serves; nothing of a model, since none was made."""
    out = _common(cfg, reason, "", started, ended)
    try:
        out += metric_samples.serving_samples(cfg.serving_dir)
    except Exception:  # noqa: BLE001 - a damaged release is the refusal itself; its version is unknown
        pass
    return out


def _common(cfg, reason: str, component: str, started: float, ended: float) -> List[Sample]:
    return metric_samples.outcome_samples(reason, ended, component, cfg.monitoring.max_hours_without_run,
                                       cfg.monitoring.max_hours_without_push) + [
        Sample("tfxline_run_start_timestamp_seconds", started),
        Sample("tfxline_run_duration_seconds", round(ended - started, 3)),
        # where to act: the alerts' commands name the host and the output root
        Sample("tfxline_run_info", 1.0, {"host": socket.gethostname(), "output_root": cfg.output_root})]


def trained(summary) -> bool:
    """The run trained a model (its Trainer ran, not served from the cache): a run whose wall time
    RunSlow may compare."""
    trainer = summary.component("Trainer")
    return trainer is not None and trainer.state == "complete"


def expected_duration(cfg, run_id: str) -> Optional[float]:
    """The median wall time of the newest earlier runs that completed and trained (their
    summary.json under <output>/runs/), None with fewer than EXPECTED_AFTER_RUNS of them."""
    runs_dir = os.path.join(cfg.output_root, "runs")
    found = []
    for name in os.listdir(runs_dir) if os.path.isdir(runs_dir) else ():
        if name == run_id:
            continue
        try:
            with open(os.path.join(runs_dir, name, "summary.json")) as f:
                earlier = json.load(f)
            states = {c["node_id"]: c["state"] for c in earlier["components"]}
            if not earlier.get("error") and states.get("Trainer") == "complete" and earlier.get("wall_seconds"):
                found.append((earlier["created_ms"], float(earlier["wall_seconds"])))
        except (OSError, ValueError, KeyError, TypeError):
            continue  # a summary being written, or damaged: not a measurement
    newest = [seconds for _, seconds in sorted(found)[-EXPECTED_FROM_RUNS:]]
    return float(statistics.median(newest)) if len(newest) >= EXPECTED_AFTER_RUNS else None


def enabled(cfg) -> bool:
    return bool(cfg.monitoring.pushgateway_url or cfg.monitoring.textfile_dir)


def publish(cfg, samples: Sequence[Sample], stream: Optional[TextIO] = None) -> List[str]:
    """Push / write the samples as the monitoring section says; never raises."""
    return run_metrics.publish(samples, cfg.name, pushgateway_url=cfg.monitoring.pushgateway_url,
                               textfile_dir=cfg.monitoring.textfile_dir, timeout=cfg.monitoring.timeout_seconds,
                               stream=stream, labels=cfg.monitoring.labels)
