"""Run history from the MLMD store: ``tfxline runs`` (one line a run, newest first) and the
report's chart of the main metric over the last runs."""
from __future__ import annotations

import dataclasses
import datetime
import os
from typing import List, Optional, Sequence, Tuple

from components import serving_push, task_metrics, tfma_results
from pipeline import store as store_lib
from pipeline import summary as summary_lib



@dataclasses.dataclass
class RunRow:
    run_id: str
    started: str
    spans: str
    status: str
    metric: str           # e.g. 'auc 0.9512', 'auc undefined'
    metric_value: Optional[float]
    blessed: str          # 'yes', 'no: <first failed check>', '-' (no evaluation)
    pushed: str           # the pushed version ('<v> (rolled back)' once rolled back from), or '-'


def main_metric(metrics, task: str = "") -> Optional[str]:
    """The task's main metric (auc, accuracy, rmse) when the run has it."""
    name = task_metrics.view(task, metrics).main
    return name if name in metrics else None


def status_of(summary: summary_lib.RunSummary) -> str:
    states = {c.state for c in summary.components}
    if "failed" in states or summary.error:
        return "failed"
    if states & {"running", "new"}:
        return "running"
    return "complete"


def metric_text(metrics, task: str = "") -> Tuple[str, Optional[float]]:
    """The main metric in words ('auc 0.9512', 'rmse 0.0910', 'auc undefined', '-'), and its
    value when defined."""
    name = main_metric(metrics, task)
    undefined = tfma_results.undefined_metrics(metrics)
    value = metrics.get(name) if name and name not in undefined else None
    return "-" if name is None else (f"{name} undefined" if name in undefined else f"{name} {value:.4f}"), value


def row_of(summary: summary_lib.RunSummary) -> RunRow:
    metric, value = metric_text(summary.metrics, summary.task)
    if summary.blessed is None:
        blessed = "-"
    else:
        blessed = "yes" if summary.blessed else "no" + (f": {summary.failed_thresholds[0]}" if summary.failed_thresholds else "")
    started = datetime.datetime.fromtimestamp(summary.created_ms / 1000).strftime("%Y-%m-%d %H:%M:%S")
    return RunRow(run_id=summary.run_id, started=started, spans=",".join(map(str, summary.spans)) or "-",
                  status=status_of(summary), metric=metric, metric_value=value, blessed=blessed,
                  pushed=os.path.basename(summary.pushed_to) if summary.pushed and summary.pushed_to else "-")


def list_runs(metadata_store, pipeline_name: str, last: int = 20,
              serving_dir: Optional[str] = None) -> List[RunRow]:
    """The newest ``last`` runs of the pipeline, newest first (``metadata_store`` as in
    ``PipelineConfig.metadata_store``); with ``serving_dir``, pushes since rolled back say so."""
    store = store_lib.open_store(metadata_store)
    rows = [row_of(summary_lib.collect_run(metadata_store, pipeline_name, run_id, store=store))
            for run_id in store_lib.run_ids(store, pipeline_name)[:last]]
    rolled_back = serving_push.rolled_back_versions(serving_dir) if serving_dir else {}
    for row in rows:
        if row.pushed.isdigit() and int(row.pushed) in rolled_back:
            row.pushed += " (rolled back)"
    return rows


def format_columns(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Left-aligned columns two spaces apart, the last one unpadded (it may be long)."""
    cells = [tuple(header)] + [tuple(r) for r in rows]
    widths = [max(len(c[i]) for c in cells) for i in range(len(header) - 1)]
    return "\n".join("  ".join(c[i].ljust(widths[i]) for i in range(len(header) - 1)) + "  " + c[-1]
                     for c in cells)


def format_table(rows: List[RunRow]) -> str:
    return format_columns(("run", "started", "spans", "status", "metric", "pushed", "blessed"),
                          [(r.run_id, r.started, r.spans, r.status, r.metric, r.pushed, r.blessed) for r in rows])
