"""How a local run's end is kept: run.json, summary.json and the report under
``<output>/runs/<run id>/`` (``tfxline runs`` and the on-call person read them back), the one
root-cause line, and the run's metrics (local/monitoring.py), a run refused before its
components included. None of it ever changes the run's own result."""
from __future__ import annotations

import logging
import os
import time
from typing import List, Optional, Sequence, TextIO

from tfxline.components.tfma_results import label_classes
from tfxline.local import monitoring
from tfxline.pipeline.config import PipelineConfig
from tfxline.runs import files
from tfxline.runs import summary as summary_lib
from tfxline.runs.warnings import run_warnings


def record_run(cfg: PipelineConfig, pipeline, run_id: str, started_at: str, seconds: float, error: str):
    """Write run.json, summary.json and report.html for this run (``run_id``, this process's
    own). Returns the summary; None when the run failed before MLMD registered it. A report
    that cannot be written is logged, never raised over the run's own outcome."""
    from tfxline.runs.report import render
    from tfxline.runs.report.artifacts import RUN_INFO_FILE

    try:
        result = summary_lib.collect_run(cfg.metadata_store, cfg.name, run_id)
    except LookupError:
        return None
    result.wall_seconds = round(seconds, 1)
    result.error = error
    classes = label_classes(summary_lib.serving_model_dir(result.model_uri)) if result.model_uri else []
    result.warnings = run_warnings(cfg.evaluation.suspect_columns, cfg.features.raw_columns, result.metrics,
                                   result.leans_on, classes, leaks_possible=cfg.features.data_kind == "table")
    run_dir = os.path.join(cfg.output_root, "runs", result.run_id)
    info = {
        "pipeline_name": cfg.name, "run_id": result.run_id, "started": started_at,
        "wall_seconds": result.wall_seconds, "error": error, "output_root": os.path.abspath(cfg.output_root),
        "metadata_store": cfg.metadata_store, "model_name": cfg.serving.model_name or cfg.name,
        "serving_columns": list(cfg.features.serving_columns), "warnings": result.warnings,
        "graph": [{"id": c.id, "upstream": sorted(u.id for u in c.upstream_nodes)} for c in pipeline.components],
    }
    files.write_json_atomic(os.path.join(run_dir, RUN_INFO_FILE), info)
    try:
        result.report_path = render.write_report(run_dir)
    except Exception as e:  # noqa: BLE001 - the run's outcome stands; the console says the report is missing
        logging.getLogger(__name__).exception("could not write the run report in %s", run_dir)
        result.report_error = root_cause_message(e)
    summary_lib.write_summary(result, os.path.join(run_dir, "summary.json"))
    return result


def cancel_unfinished(cfg: PipelineConfig, run_id: str, failed_too: bool = False) -> List[str]:
    """Mark the run's executions that never ended (RUNNING, NEW: the components a Ctrl-C
    stopped) CANCELED in MLMD, and return their nodes. Left RUNNING, the run would read
    "running" forever in ``tfxline runs`` and the report, and a collection on a shared store
    (runs/retention.py, ``runs_may_be_going``) would keep its outputs as a run still going.
    ``failed_too``: the Ctrl-C reached TFX as another exception (Beam's RuntimeError), so TFX's
    launcher recorded the component it stopped as FAILED: that one is CANCELED too (a local run's
    components run one at a time: the run's one failure is the one the Ctrl-C stopped)."""
    from ml_metadata.proto import metadata_store_pb2 as pb

    from tfxline.runs import store as store_lib

    store = store_lib.open_store(cfg.metadata_store, readonly=False)
    ctx = store.get_context_by_type_and_name("pipeline_run", run_id)
    if ctx is None:
        return []
    stopped = [e for e in store.get_executions_by_context(ctx.id)
               if e.last_known_state in (pb.Execution.RUNNING, pb.Execution.NEW)
               or (failed_too and e.last_known_state == pb.Execution.FAILED)]
    for e in stopped:
        e.last_known_state = pb.Execution.CANCELED
    if stopped:
        store.put_executions(stopped)
    return [store_lib.node_id_of(store, e) for e in stopped]


def interrupted_message(nodes: Sequence[str], how: str = "Ctrl-C") -> str:
    """The recorded error line of a run that a Ctrl-C or SIGTERM (``how``) stopped."""
    during = f" while {', '.join(nodes)} ran" if nodes else ""
    return (f"{summary_lib.INTERRUPTED} ({how}){during}; run it again: the components that finished are reused "
            "from the cache")


def root_cause_message(e: BaseException) -> str:
    """One line: the schema anomalies if that is what stopped the run, else the innermost
    exception's type and first line."""
    from tfxline.components.anomalies_gate import DataAnomaliesError

    chain = monitoring.causes(e)
    for err in chain:
        if isinstance(err, DataAnomaliesError):
            return str(err)
    last = chain[-1]
    first_line = (str(last).strip().splitlines() or [""])[0]
    return f"{type(last).__name__}: {first_line}"


def publish_metrics(cfg: PipelineConfig, summary, started_unix: float, error: Optional[BaseException],
                    stream: TextIO) -> None:
    """The run's metrics to the Pushgateway / textfile (local/monitoring.py); never raises.
    ``error``: what stopped the run (None: it completed)."""
    try:
        samples = monitoring.run_samples(cfg, summary, started_unix, time.time(), error)
    except Exception as e:  # noqa: BLE001 - monitoring never changes a run's result
        logging.getLogger(__name__).exception("run metrics not collected")
        print(f"warning: run metrics not collected ({e}); the run's result stands", file=stream, flush=True)
        return
    for done in monitoring.publish(cfg, samples, stream):
        print(f"metrics: {done}", file=stream, flush=True)


def report_refusal(cfg: Optional[PipelineConfig], reason: str, message: str, started: float,
                   stream: TextIO) -> None:
    """A run that never reached its components: for a refusal (config, bad_input) its record for
    `tfxline runs` (runs/history.py), and its metrics when the config names a gateway or a
    textfile. ``cfg``: the config, or its reporting keys alone (pipeline/config/reporting.load_reporting_config)
    when the rest was refused; None when even those were. Never raises: the refusal's line stands."""
    from tfxline.runs import history

    if cfg is None:
        return
    if reason in ("config", "bad_input"):  # refused, as the record says
        try:
            history.record_refusal(cfg.output_root, reason, message.splitlines()[0] if message else reason,
                                   time.time())
        except OSError:
            pass  # a read-only output root: the error line on the console is the record
    if not monitoring.enabled(cfg):
        return
    try:
        samples = monitoring.refusal_samples(cfg, reason, started, time.time())
    except Exception as e:  # noqa: BLE001 - monitoring never changes a run's result
        print(f"warning: run metrics not collected ({e}); the run's result stands", file=stream, flush=True)
        return
    for done in monitoring.publish(cfg, samples, stream):
        print(f"metrics: {done}", file=stream, flush=True)
