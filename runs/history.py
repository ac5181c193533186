"""Run history from the MLMD store: ``tfxline runs`` (one line a run, newest first) and the
report's chart of the main metric over the last runs.

MLMD knows each component's state but not how a run ended in words, nor its wall time: the
local runner writes those into ``<output_root>/runs/<run_id>/summary.json`` and ``run.json``
(local/outcome.record_run), and ``recorded`` reads them back, so the on-call person paged
for a failed run sees its error line and true wall time without opening the log."""
from __future__ import annotations

import dataclasses
import datetime
import json
import os
from typing import Any, Dict, List, Optional, Sequence, Tuple

from tfxline.components import task_metrics, tfma_results
from tfxline.runs import store as store_lib
from tfxline.runs import summary as summary_lib
from tfxline.runs import tuning as tuning_lib
from tfxline.serving import push as serving_push


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
    failed_at: str = ""   # the component that failed, as MLMD recorded it ('' when none did)
    error: str = ""       # a failed run's error line as it recorded it ('' when not recorded)
    tuned: str = "-"      # '3 trials', 'cached', 'reused' or '-' (tuned_marker)


def main_metric(metrics, task: str = "") -> Optional[str]:
    """The task's main metric (auc, accuracy, rmse) when the run has it."""
    name = task_metrics.view(task, metrics).main
    return name if name in metrics else None


RECORDED_FILES = ("summary.json", "run.json")  # what record_run writes, the fuller first
UNRECORDED = ("its summary.json and run.json are missing or unreadable; its log in the output root's logs/ has "
              "the traceback")


def read_recorded(output_root: str, run_id: str) -> Dict[str, Any]:
    """The run's ``error`` and ``wall_seconds`` as the local runner recorded them, from its
    summary.json, else its run.json; a field neither holds is absent. A missing, unreadable or
    corrupted file counts as absent, never raises: ``tfxline runs`` must work for the person
    paged about a run whose recording failed (MLMD's component states still say what failed)."""
    found: Dict[str, Any] = {}
    for name in RECORDED_FILES:
        data = _read_json(os.path.join(output_root, "runs", run_id, name))
        if isinstance(data.get("error"), str) and "error" not in found:
            found["error"] = data["error"]
        wall = data.get("wall_seconds")
        if isinstance(wall, (int, float)) and not isinstance(wall, bool) and wall > 0 and "wall_seconds" not in found:
            found["wall_seconds"] = float(wall)
    return found


def _read_json(path: str) -> Dict[str, Any]:
    """A JSON object file's content; {} when it is missing, unreadable or not an object."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError):  # ValueError: bad JSON, or bytes that are not UTF-8
        return {}
    return data if isinstance(data, dict) else {}


def recorded(summary: summary_lib.RunSummary, output_root: Optional[str]) -> summary_lib.RunSummary:
    """The MLMD summary with what the run recorded under ``output_root`` (its error line, its
    wall time). MLMD does not hold the wall time: without a recording it becomes None, which
    the console prints as unknown, never as '0s'."""
    found = read_recorded(output_root, summary.run_id) if output_root else {}
    summary.error = found.get("error", summary.error)
    summary.wall_seconds = found.get("wall_seconds")
    return summary


def metric_text(metrics, task: str = "") -> Tuple[str, Optional[float]]:
    """The main metric in words ('auc 0.9512', 'rmse 0.0910', 'auc undefined', '-'), and its
    value when defined."""
    name = main_metric(metrics, task)
    undefined = tfma_results.undefined_metrics(metrics)
    value = metrics.get(name) if name and name not in undefined else None
    return "-" if name is None else (f"{name} undefined" if name in undefined else f"{name} {value:.4f}"), value


def row_of(summary: summary_lib.RunSummary) -> RunRow:
    """The run's line of ``tfxline runs`` (``summary``: from MLMD, with what the run recorded)."""
    metric, value = metric_text(summary.metrics, summary.task)
    if summary.blessed is None:
        blessed = "-"
    else:
        refused = f": {summary.failed_thresholds[0]}" if summary.failed_thresholds else ""
        blessed = "yes" if summary.blessed else "no" + refused
    started = datetime.datetime.fromtimestamp(summary.created_ms / 1000).strftime("%Y-%m-%d %H:%M:%S")
    return RunRow(run_id=summary.run_id, started=started, spans=",".join(map(str, summary.spans)) or "-",
                  status=summary_lib.status_of(summary), metric=metric, metric_value=value, blessed=blessed,
                  pushed=os.path.basename(summary.pushed_to) if summary.pushed and summary.pushed_to else "-",
                  failed_at=summary_lib.failed_component(summary), error=summary.error, tuned=tuned_marker(summary))


def tuned_marker(summary: summary_lib.RunSummary) -> str:
    """The run's tuning in a few characters: '3 trials' (its Tuner searched), '3 trials, kept'
    (no trial beat the config's own values by enough: the Trainer kept them), 'cached' (served the
    search of an earlier run), 'reused' (tuning.reuse: saved values, no search), the Tuner's state
    when it did not finish ('failed', 'canceled', 'running'), '-' untuned."""
    if summary.tuning.get("how") == tuning_lib.REUSED:
        return "reused"
    tuner = summary.component(tuning_lib.TUNER_ID)
    if tuner is None:
        return "-"
    record = summary.tuning.get("record") or {}
    trials = record.get("trials")
    if tuner.state == "complete":
        kept = ", kept" if record.get("kept_config") else ""
        return f"{len(trials)} trial{'' if len(trials) == 1 else 's'}{kept}" if trials is not None else "yes"
    return tuner.state


def list_runs(metadata_store, pipeline_name: str, last: int = 20,
              serving_dir: Optional[str] = None, output_root: Optional[str] = None) -> List[RunRow]:
    """The newest ``last`` runs of the pipeline, newest first (``metadata_store`` as in
    ``PipelineConfig.metadata_store``); with ``serving_dir``, pushes since rolled back say so;
    with ``output_root``, failed runs carry the error line they recorded there."""
    store = store_lib.open_store(metadata_store)
    rows = [row_of(recorded(summary_lib.collect_run(metadata_store, pipeline_name, run_id, store=store), output_root))
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
    """The runs' table, then a blank line and one line per failed run with its error line: the
    error lines are long (a schema violation's is ~300 characters), a column would stretch
    every row past a terminal's width."""
    table = format_columns(("run", "started", "spans", "status", "tuned", "metric", "pushed", "blessed"),
                           [(r.run_id, r.started, r.spans, r.status, r.tuned, r.metric, r.pushed, r.blessed)
                            for r in rows])
    errors = [error_line(r) for r in rows if r.status.startswith(("failed", summary_lib.INTERRUPTED))]
    return "\n\n".join([table, "\n".join(errors)]) if errors else table


def error_line(row: RunRow) -> str:
    """'run <id> failed at <component>: <its error line>'; without a recorded error line, says so
    and where to look (MLMD still names the component)."""
    if row.status.startswith(summary_lib.INTERRUPTED):
        where = f"run {row.run_id} was {row.status.replace(': ', ' at ')}"
    else:
        where = f"run {row.run_id} failed" + (f" at {row.failed_at}" if row.failed_at else "")
    return f"{where}: {row.error}" if row.error else f"{where}: no error line recorded ({UNRECORDED})"


# A `tfxline run` refused before it started (bad config or input) leaves no run in MLMD; its
# one record, under the output root, is this file, so `tfxline runs` and `runs show latest` (the
# command the RunFailed alert names) show the refusal rather than an older run.
REFUSAL_FILE = "last-refusal.json"


def record_refusal(output_root: str, reason: str, message: str, at: float) -> None:
    """Keep the newest refusal under an existing output root (a refused first run creates none)."""
    from tfxline.runs import files

    if output_root and os.path.isdir(output_root):
        files.write_json_atomic(os.path.join(output_root, REFUSAL_FILE),
                                {"at": at, "reason": reason, "error": message})


def newer_refusal(output_root: str, than_ms: int = 0) -> Optional[Dict[str, Any]]:
    """The recorded refusal when it is newer than ``than_ms`` (the newest run's start), else None."""
    refusal = _read_json(os.path.join(output_root, REFUSAL_FILE))
    try:
        return refusal if float(refusal["at"]) * 1000 > than_ms and refusal.get("error") else None
    except (KeyError, TypeError, ValueError):
        return None  # a damaged record: the runs speak for themselves


def refusal_line(refusal: Dict[str, Any]) -> str:
    at = datetime.datetime.fromtimestamp(float(refusal["at"])).strftime("%Y-%m-%d %H:%M:%S")
    return (f"the newest invocation, {at}, was refused before it started ({refusal.get('reason', '?')}): "
            f"{refusal['error']}")
