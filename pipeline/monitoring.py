"""A local run's metrics for Prometheus (the monitoring config section; docs/daily.md).

At the end of every local run, success or failure, the local runner sends them: to a Pushgateway
(``monitoring.pushgateway_url``) and/or as a file for node_exporter's textfile collector
(``monitoring.textfile_dir``, written whole). The names, the samples and the push are
components/run_metrics.py's, shared with a compiled run's Pusher; here the run's summary, its
report data and the serving directory become samples.
"""
from __future__ import annotations

import json
import os
from typing import Any, Dict, List, Optional, Sequence, TextIO

from components import run_metrics
from components.run_metrics import METRICS, Sample  # noqa: F401 - the one list, for monitoring/'s tests


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
        out += run_metrics.evaluation_samples(summary.task, summary.metrics,
                                              (report.get("evaluation") or {}).get("baseline_diff") or {})
        out.append(Sample("tfxline_blessed", 1.0 if summary.blessed else 0.0))
        out.append(Sample("tfxline_pushed", 1.0 if summary.pushed else 0.0))
        out += run_metrics.examples_samples((report.get("data") or {}).get("examples", {}))
        gate = next((c for c in summary.components if c.node_id == "DriftGate"), None)
        drift = (gate.outputs.get("drift_anomalies") or []) if gate else []
        if drift:
            out += run_metrics.drift_samples(drift[0])
    out += run_metrics.serving_samples(cfg.serving_dir)
    return out


def _report(cfg, summary) -> Dict[str, Any]:
    path = os.path.join(cfg.output_root, "runs", summary.run_id, "report.json")
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


def enabled(cfg) -> bool:
    return bool(cfg.monitoring.pushgateway_url or cfg.monitoring.textfile_dir)


def publish(cfg, samples: Sequence[Sample], stream: Optional[TextIO] = None) -> List[str]:
    """Push / write the samples as the monitoring section says; never raises."""
    return run_metrics.publish(samples, cfg.name, pushgateway_url=cfg.monitoring.pushgateway_url,
                               textfile_dir=cfg.monitoring.textfile_dir, timeout=cfg.monitoring.timeout_seconds,
                               stream=stream)
