"""Run the pipeline on LocalDagRunner with an SQLite MLMD store under the output root.

This runner owns the paths and the process environment; ``create_pipeline`` gets
everything passed in. Console output is one line per component start/finish (with its
duration and whether MLMD's cache served it); the full log goes to
``<output_root>/logs/<run>.log`` (local/process.py).
"""
from __future__ import annotations

import contextlib
import dataclasses
import datetime
import fcntl
import logging
import os
import sys
import time
from typing import Iterator, Optional, TextIO

from pipeline import beam_engines, beam_packaging, data_source, labels, stack_compat
from runs import files
from local import monitoring
from runs import store as store_lib
from runs import summary as summary_lib
from pipeline.config import TRAIN_SPLIT, PipelineConfig
from serving.native_stderr import stderr_to_file
from local.process import frozen_heap, logging_to

@dataclasses.dataclass
class LocalPaths:
    data_root: str
    data_pattern: str
    data_files: list
    schema_path: str
    span: Optional[int] = None  # the span ExampleGen ingests (the newest, or --span's), when the pattern names spans
    data_digest: str = ""       # the content of data_files (CSV): in ExampleGen's cache key


def resolve_inputs(cfg: PipelineConfig, span: Optional[int] = None) -> LocalPaths:
    """Locate data and schema and pre-flight check the input files (raises DataError): the
    newest span's, or ``span``'s (a backfill)."""
    data_path = data_source.resolve_data_path(cfg.data.path)
    found = data_source.locate(data_path, cfg.data.format, cfg.data.pattern, span)
    schema_path = data_source.schema_path(cfg.data.schema)
    schema = data_source.load_schema(schema_path)
    schema_columns = [f.name for f in schema.feature]
    cfg.features.validate(schema_columns)
    if cfg.data.format == "csv":
        observed = labels.LabelValues(cfg.features.label.source) if cfg.features.label.transform != "ratio_threshold" else None
        data_source.check_csv(found.files, schema, required=cfg.features.raw_columns, label=observed)
        try:
            labels.check(cfg.features.label, observed, cfg.data.missing_labels)
        except labels.LabelError as e:
            raise data_source.DataError(str(e)) from None
    else:
        data_source.check_tfrecords(found.files, schema, required=cfg.features.raw_columns)
    check_tflite(cfg, schema)
    check_window_splits(cfg, found.span)
    check_release(cfg)
    digest = files.content_digest(found.files) if cfg.data.format == "csv" else ""
    return LocalPaths(found.root, found.pattern, found.files, schema_path, found.span, digest)


def check_release(cfg: PipelineConfig) -> None:
    """The serving directory's release, which the baseline, the drift check and the push read:
    a damaged one is refused before the run (one line naming the file and the fix), not by the
    DriftGate half-way through it with a traceback in the log."""
    from serving import release as serving_release

    try:
        serving_release.read(cfg.serving_dir)
    except serving_release.ReleaseError as e:
        raise data_source.DataError(str(e)) from None


def check_tflite(cfg: PipelineConfig, schema) -> None:
    """serving.tflite: a mode this model can be converted in (int8 cannot calibrate string
    inputs), refused before the run rather than at its push."""
    from serving import tflite as tflite_export
    from tensorflow_metadata.proto.v0 import schema_pb2

    if cfg.serving.tflite == tflite_export.OFF:
        return
    strings = [f.name for f in schema.feature
               if f.name in cfg.features.serving_columns and f.type == schema_pb2.BYTES]
    try:
        tflite_export.check_mode(cfg.serving.tflite, strings)
    except tflite_export.TFLiteError as e:
        raise data_source.DataError(str(e)) from None


def check_window_splits(cfg: PipelineConfig, span: Optional[int]) -> None:
    """A window of spans trains on spans that earlier runs ingested, with the splits of their
    day: each must hold the splits Transform and the Trainer read now (train and the split the
    Trainer validates on). After a change of the split config (e.g. the validation split
    added) the old spans lack one, and TFX would fail deep inside Transform; raise DataError
    naming the span and the way out instead."""
    window = cfg.data.window
    if window < 2 or not store_lib.store_exists(cfg.metadata_store):
        return
    newest = store_lib.ingested_spans(store_lib.open_store(cfg.metadata_store), cfg.name)
    # The resolver's window: the newest N spans ingested, today's included (a backfill's span
    # may be older than some of them).
    in_window = sorted(set(newest) | ({span} if span is not None else set()))[-window:]
    earlier = [s for s in in_window if s != span]
    needed = (TRAIN_SPLIT, cfg.data.trainer_eval_split)
    for s in earlier:
        have = store_lib.split_names_of(newest[s])
        missing = [n for n in needed if n not in have]
        if missing:
            raise data_source.DataError(
                f"span {s} was ingested with the splits {', '.join(have) or 'none'}, without "
                f"{', '.join(missing)}, which this config's data.*_buckets make and the newest {window} "
                f"spans are trained on; use a new --output, or --set data.spans=latest for the next "
                f"{window - 1} span(s) so the window holds only spans with the new splits")


def component_beam_args(cfg: PipelineConfig, paths: LocalPaths) -> dict:
    """The components that run in Beam worker processes today, and their args
    (pipeline/beam_engines.component_args): CsvExampleGen writes a large day in shards that
    workers can share (TFX's ImportExampleGen writes one file per split: nothing to share)."""
    from components.example_splits import shard_count

    shards = shard_count(paths.data_files) if cfg.data.format == "csv" else 1
    return beam_engines.component_args(cfg.beam, shards, cfg.runtime.beam_args)


def build_pipeline(cfg: PipelineConfig, paths: LocalPaths, enable_cache: bool = True):
    from pipeline.factory import create_pipeline
    return create_pipeline(
        cfg,
        data_root=paths.data_root,
        data_pattern=paths.data_pattern,
        span=paths.span,
        # by content: a schema edited in place re-runs ImportSchemaGen and what follows it
        schema_path=files.content_copy(paths.schema_path, os.path.join(cfg.output_root, "schemas")),
        pipeline_root=cfg.pipeline_root,
        serving_dir=cfg.serving_dir,
        metadata_connection_config=store_lib.connection_config(cfg.metadata_store, readonly=False),
        beam_pipeline_args=stack_compat.local_beam_args(beam_engines.beam_args(cfg.beam, cfg.runtime.beam_args)),
        component_beam_args=component_beam_args(cfg, paths),
        data_digest=paths.data_digest,
        enable_cache=enable_cache,
    )


class RunFailed(Exception):
    """A component failed. The run was still recorded: ``summary`` (with ``error``) and the
    report at ``report_path``; the component's exception is the ``__cause__``."""

    def __init__(self, summary: Optional[summary_lib.RunSummary], error: str):
        super().__init__(error)
        self.summary = summary
        self.report_path = summary.report_path if summary else ""


def run(cfg: PipelineConfig, stream: Optional[TextIO] = None,
        enable_cache: bool = True, span: Optional[int] = None,
        paths: Optional[LocalPaths] = None) -> summary_lib.RunSummary:
    """Run the whole pipeline and record it (``<output>/runs/<run id>/``: run.json,
    summary.json, report.html); return the summary. Raises RunFailed when a component
    failed, after recording how far the run got. ``span``: ingest that span instead of the
    newest (a backfill: the run is the one that day would have had). ``paths``: what
    ``resolve_inputs`` found, when the caller ran the pre-flight check itself."""
    stream = stream or sys.stdout
    # The pre-flight check first, before TFX and TensorFlow load (~6 s): a bad CSV is refused
    # in about a second (bench/preflight.py).
    paths = paths or resolve_inputs(cfg, span)
    from tfx import v1 as tfx

    from trainer.keras_compat import skip_autograph_for_tf_keras
    # Every component runs in this process: spare TFMA's tf_keras metric wrappers the
    # AutoGraph conversion too, not only the Trainer (see trainer/keras_compat.py).
    skip_autograph_for_tf_keras()
    os.makedirs(cfg.output_root, exist_ok=True)
    pipeline = build_pipeline(cfg, paths, enable_cache)
    with one_run_at_a_time(cfg, stream):
        started = time.monotonic()
        started_unix = time.time()
        started_at = time.strftime("%Y-%m-%d %H:%M:%S %Z")
        ir, run_id = compile_with_run_id(pipeline)
        log_path = os.path.join(cfg.output_root, "logs", time.strftime("%Y%m%d-%H%M%S") + f"-{os.getpid()}.log")
        error = None
        with logging_to(log_path, stream):
            which = "" if paths.span is None else f" (span {paths.span}" + (" from --span" if span is not None else "") + (
                f", training on the newest {cfg.data.window} spans)" if cfg.data.window > 1 else ")")
            reads = (paths.data_files[0] if len(paths.data_files) == 1 else
                     f"{len(paths.data_files)} {cfg.data.format.upper()} files{which} from {paths.data_root}")
            if len(paths.data_files) == 1 and which:
                reads += which
            print(f"pipeline {cfg.name}, run {run_id}: {reads}; log: {log_path}", file=stream, flush=True)
            # Beam's worker processes write their libraries' start-up and shutdown noise to
            # stderr: into the run's log with the rest, the console keeps the progress lines.
            workers = any(beam_engines.starts_worker_processes(getattr(c.executor_spec, "beam_pipeline_args", ()))
                          for c in pipeline.components)
            try:
                with beam_packaging.no_sdist_for_local_runners(), frozen_heap(), \
                        (stderr_to_file(log_path) if workers else contextlib.nullcontext()):
                    tfx.orchestration.LocalDagRunner().run_with_ir(ir)
            except Exception as e:
                logging.getLogger(__name__).exception("pipeline %s failed", cfg.name)
                error = e
            message = root_cause_message(error) if error else ""
            try:
                result = record_run(cfg, pipeline, run_id, started_at, time.monotonic() - started, message)
            except Exception:  # recording must not hide how the run itself ended
                if error is None:
                    raise
                logging.getLogger(__name__).exception("could not record the failed run")
                result = None
            if monitoring.enabled(cfg):  # success or failure: Prometheus hears of every run
                publish_metrics(cfg, result, started_unix, error, stream)
            if cfg.retention.keep_runs:
                apply_retention(cfg, stream)
    if error is not None:
        raise RunFailed(result, message) from error
    return result


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


def apply_retention(cfg: PipelineConfig, stream: TextIO) -> None:
    """retention.keep_runs after a run (under the run lock): one console line. A failure is
    reported, never raised over the run's own outcome."""
    from runs import retention

    try:
        retention.run_retention(cfg, stream)
    except Exception as e:
        logging.getLogger(__name__).exception("retention failed")
        print(f"retention: failed ({type(e).__name__}: {e}); nothing is lost, 'tfxline gc' retries", file=stream,
              flush=True)


def compile_with_run_id(pipeline):
    """The pipeline IR with its run id fixed here, so this process knows which MLMD run is its
    own (LocalDagRunner.run would pick the id inside and never say it; summarising "the newest
    run" instead reports someone else's run when two overlap). Same id format as TFX's."""
    from tfx.dsl.compiler import constants
    from tfx.orchestration.portable import runtime_parameter_utils, tfx_runner

    ir = tfx_runner._make_pipeline_proto(pipeline)  # what LocalDagRunner.run does first
    run_id = datetime.datetime.now().isoformat()
    runtime_parameter_utils.substitute_runtime_parameter(ir, {constants.PIPELINE_RUN_ID_PARAMETER_NAME: run_id})
    return ir, run_id


LOCK_FILE = ".tfxline-run.lock"


@contextlib.contextmanager
def one_run_at_a_time(cfg: PipelineConfig, stream: TextIO) -> Iterator[None]:
    """One run at a time per output root with a SQLite MLMD store (one writer): a second run
    waits here for the first, and says so, instead of meeting 'database is locked'. A MySQL /
    MariaDB store takes concurrent runs: no waiting there."""
    if not isinstance(cfg.metadata_store, str):
        yield
        return
    output_root = cfg.output_root
    path = os.path.join(output_root, LOCK_FILE)
    with open(path, "a+") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock.seek(0)
            holder = lock.read().strip() or "another run"
            print(f"waiting: {holder} is using {output_root} (one run at a time per metadata store)",
                  file=stream, flush=True)
            fcntl.flock(lock, fcntl.LOCK_EX)
        lock.seek(0)
        lock.truncate()
        lock.write(f"run of pid {os.getpid()} started {time.strftime('%H:%M:%S')}")
        lock.flush()
        try:
            yield
        finally:
            lock.seek(0)
            lock.truncate()
            fcntl.flock(lock, fcntl.LOCK_UN)


def record_run(cfg: PipelineConfig, pipeline, run_id: str, started_at: str, seconds: float, error: str):
    """Write run.json, summary.json and report.html for this run (``run_id``, this process's
    own). Returns the summary; None when the run failed before MLMD registered it. A report
    that cannot be written is logged, never raised over the run's own outcome."""
    from runs.report import render
    from runs.report.artifacts import RUN_INFO_FILE

    try:
        result = summary_lib.collect_run(cfg.metadata_store, cfg.name, run_id)
    except LookupError:
        return None
    result.wall_seconds = round(seconds, 1)
    result.error = error
    run_dir = os.path.join(cfg.output_root, "runs", result.run_id)
    info = {
        "pipeline_name": cfg.name, "run_id": result.run_id, "started": started_at,
        "wall_seconds": result.wall_seconds, "error": error, "output_root": os.path.abspath(cfg.output_root),
        "metadata_store": cfg.metadata_store, "model_name": cfg.serving.model_name or cfg.name,
        "serving_columns": list(cfg.features.serving_columns),
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


def root_cause_message(e: BaseException) -> str:
    """One line: the schema anomalies if that is what stopped the run, else the innermost
    exception's type and first line."""
    from components.anomalies_gate import DataAnomaliesError

    chain = monitoring.causes(e)
    for err in chain:
        if isinstance(err, DataAnomaliesError):
            return str(err)
    last = chain[-1]
    first_line = (str(last).strip().splitlines() or [""])[0]
    return f"{type(last).__name__}: {first_line}"
