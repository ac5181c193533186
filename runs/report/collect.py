"""What the report shows, one function per section, read from a run's artifacts.

Every value comes through the library that wrote it: MLMD (the run, its executions and
artifacts), TFX's artifact utilities and TFDV (statistics, anomalies, schema), TensorBoard's
event reader (the training curves), TFMA (metrics per slice, validation), TensorFlow (the
serving signature). A section whose artifact the run did not produce says so instead.
The result is plain JSON-able data; ``render`` turns it into HTML.
"""
from __future__ import annotations

from typing import Any, Dict

from tfxline.runs.report.artifacts import RunArtifacts, load_run_info
from tfxline.runs.report.data import data_section
from tfxline.runs.report.model import evaluation_section, training_section
from tfxline.runs.report.serving import lineage_section, serving_section
from tfxline.runs.report.tuning import tuning_section
from tfxline.runs.summary import cached_from, describe_drift, describe_spans, status_of


def collect(run_dir: str) -> Dict[str, Any]:
    info = load_run_info(run_dir)
    run = RunArtifacts(info)
    return {
        "run": dict({k: info.get(k) for k in ("pipeline_name", "run_id", "started", "wall_seconds", "error",
                                               "output_root")},
                    spans=describe_spans(run.summary.spans), collected=run.collected(),
                    status=status_of(run.summary),
                    rows_without_label=run.summary.rows_without_label or 0,
                    drift=describe_drift(run.summary.drift, cached_from(run.summary, "DriftGate"))
                    if run.summary.drift else ""),
        "pipeline": pipeline_section(run),
        "data": data_section(run),
        "tuning": tuning_section(run.summary),
        "training": training_section(run),
        "evaluation": evaluation_section(run),
        "serving": serving_section(run),
        "lineage": lineage_section(run),
    }


def pipeline_section(run: RunArtifacts) -> Dict[str, Any]:
    """The component graph (from the compiled pipeline) with each node's MLMD state."""
    nodes, level = [], {}
    for node in run.info["graph"]:  # topological order
        level[node["id"]] = 1 + max((level[u] for u in node["upstream"]), default=-1)
        component = run.summary.component(node["id"])
        nodes.append({
            "id": node["id"], "upstream": node["upstream"], "level": level[node["id"]],
            "state": component.state if component else "not run",
            "seconds": round(component.seconds, 1) if component else None,
            "cached": bool(component and component.state == "cached"),
        })
    failed = [n["id"] for n in nodes if n["state"] == "failed"]
    return {"nodes": nodes, "failed": failed,
            "complete": all(n["state"] in ("complete", "cached") for n in nodes)}
