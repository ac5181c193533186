"""Run the pipeline on LocalDagRunner with an SQLite MLMD store under the output root.

This runner owns the paths and the process environment; ``create_pipeline`` gets everything
passed in. Console output is one line per component start/finish (with its duration and whether
MLMD's cache served it); the full log goes to ``<output_root>/logs/<run>.log`` (local/process.py).
"""
from __future__ import annotations

import contextlib
import dataclasses
import datetime
import logging
import os
import sys
import time
from typing import Optional, TextIO, cast

from tfxline.local import beam_flags, monitoring, outcome, reuse
from tfxline.local.lock import one_run_at_a_time
from tfxline.local.preflight import check_release, check_text_encoder, check_tflite
from tfxline.local.process import (
    frozen_heap,
    interruption_exit_code,
    interruption_name,
    interruption_of,
    logging_to,
    signals_stop_run,
)
from tfxline.patches import beam_shared
from tfxline.patches.executor import executor_patches
from tfxline.patches.interactive_beam import interactive_beam_off
from tfxline.pipeline.beam import engines as beam_engines
from tfxline.pipeline.beam import stack_compat
from tfxline.pipeline.config import TRAIN_SPLIT, PipelineConfig
from tfxline.pipeline.data import images as image_folder
from tfxline.pipeline.data import labels
from tfxline.pipeline.data import source as data_source
from tfxline.pipeline.data import texts as text_folder
from tfxline.runs import files
from tfxline.runs import store as store_lib
from tfxline.runs import summary as summary_lib
from tfxline.serving.native_stderr import stderr_to_file
from tfxline.transforms.image_input import image_input
from tfxline.typed_config.close_names import did_you_mean


@dataclasses.dataclass
class LocalPaths:
    data_root: str
    data_pattern: str
    data_files: list
    schema_path: str
    span: Optional[int] = None  # the span ExampleGen ingests (the newest, or --span's), when the pattern names spans
    data_digest: str = ""       # the content of data_files (CSV): in ExampleGen's cache key
    hyperparameters_uri: str = ""  # tuning.reuse's saved best hyperparameters (local/reuse.py)


def resolve_inputs(cfg: PipelineConfig, span: Optional[int] = None) -> LocalPaths:
    """Locate data and schema and pre-flight check the input files (raises DataError): the
    newest span's, or ``span``'s (a backfill)."""
    data_path = data_source.resolve_data_path(cfg.data.path)
    found = data_source.locate(data_path, cfg.data.format, cfg.data.pattern, span)
    schema_path = data_source.schema_path(cfg.data.schema)
    schema = data_source.load_schema(schema_path)
    schema_columns = [f.name for f in schema.feature]
    cfg.features.validate(schema_columns)
    if cfg.data.split_key and cfg.data.split_key not in schema_columns:
        raise data_source.DataError(
            f"data.split_key: column {cfg.data.split_key!r} is not in the schema; name a column of the data"
            f"{did_you_mean([cfg.data.split_key], schema_columns)}, or remove data.split_key")
    if cfg.data.format == "csv":
        ratio = cfg.features.label.transform == "ratio_threshold"  # reads two columns: no one label column
        observed = None if ratio else labels.LabelValues(cfg.features.label.source)
        data_source.check_csv(found.files, schema, required=cfg.features.raw_columns, label=observed)
        try:
            labels.check(cfg.features.label, observed, cfg.data.missing_labels)
        except labels.LabelError as e:
            raise data_source.DataError(str(e)) from None
    elif cfg.data.format == "images":
        image_folder.check(found.files, found.root, cfg.data.bad_images, image_input(cfg.features).feature.source,
                           cfg.features.label.source)
    elif cfg.data.format == "text":  # a class folder's .txt files: UTF-8, two classes or more, the label's
        text_folder.check(found.files, found.root, cfg.features.label)
    else:
        data_source.check_tfrecords(found.files, schema, required=cfg.features.raw_columns)
    check_tflite(cfg, schema)
    check_text_encoder(cfg)
    check_window_splits(cfg, found.span)
    check_release(cfg)
    digest = (files.content_digest(found.files) if cfg.data.format == "csv" else
              files.content_digest(found.files, root=found.root) if cfg.data.format in ("images", "text") else "")
    return LocalPaths(found.root, found.pattern, found.files, schema_path, found.span, digest,
                      reuse.hyperparameters_uri(cfg))


def check_window_splits(cfg: PipelineConfig, span: Optional[int]) -> None:
    """A window of spans trains on spans that earlier runs ingested, with their day's splits: each
    must hold the splits Transform and the Trainer read now. After a change of the split config
    the old spans lack one, and TFX would fail deep inside Transform: DataError names the span."""
    window = cfg.data.window
    if window < 2 or not store_lib.store_exists(cfg.metadata_store):
        return
    newest = store_lib.ingested_spans(store_lib.open_store(cfg.metadata_store), cfg.name)
    # The resolver's window: the newest N spans ingested, today's included (a backfill's may be older)
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
    """The components that run in Beam worker processes, and their args (beam/engines.component_args):
    CsvExampleGen writes a large day in shards workers can share (ImportExampleGen: one file a split)."""
    from tfxline.components.example_splits import shard_count

    shards = shard_count(paths.data_files) if cfg.data.format == "csv" else 1
    return beam_engines.component_args(cfg.beam, shards, cfg.runtime.beam_args)


def build_pipeline(cfg: PipelineConfig, paths: LocalPaths, enable_cache: bool = True):
    from tfxline.pipeline.factory import create_pipeline
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
        hyperparameters_uri=paths.hyperparameters_uri,
        enable_cache=enable_cache,
    )


def reads_line(cfg: PipelineConfig, paths: LocalPaths, span: Optional[int]) -> str:
    """What the run reads, for its first console line: the file, or how many files of which span."""
    which = ""
    if paths.span is not None:
        window = f", training on the newest {cfg.data.window} spans" if cfg.data.window > 1 else ""
        which = f" (span {paths.span}" + (" from --span" if span is not None else "") + window + ")"
    tables = [f for f in paths.data_files if f.lower().endswith(".csv")]
    if cfg.data.format == "images" and tables:
        return f"the images listed in {', '.join(tables)}{which}"
    if cfg.data.format in ("images", "text"):
        images = cfg.data.format == "images"
        shown = sum(map(image_folder.is_image_name if images else text_folder.is_text_name, paths.data_files))
        other = len(paths.data_files) - shown
        return (f"{shown} {'images' if images else '.txt files'}{which} from {paths.data_root}"
                + (f" ({other} other files ignored)" if other else ""))
    if len(paths.data_files) == 1:
        return paths.data_files[0] + which
    return f"{len(paths.data_files)} {cfg.data.format.upper()} files{which} from {paths.data_root}"


class RunFailed(Exception):
    """A component failed. The run was still recorded: ``summary`` (with ``error``) and the
    report at ``report_path``; the component's exception is the ``__cause__``."""

    def __init__(self, summary: Optional[summary_lib.RunSummary], error: str):
        super().__init__(error)
        self.summary = summary
        self.report_path = summary.report_path if summary else ""


class RunInterrupted(RunFailed):
    """A Ctrl-C (KeyboardInterrupt) or SIGTERM stopped the run. It was recorded all the same: the
    stopped components CANCELED in MLMD, the error line, the report, the metrics. ``exit_code``:
    a shell's for that signal (130, 143)."""

    def __init__(self, summary: Optional[summary_lib.RunSummary], error: str, exit_code: int):
        super().__init__(summary, error)
        self.exit_code = exit_code


def run(cfg: PipelineConfig, stream: Optional[TextIO] = None,
        enable_cache: bool = True, span: Optional[int] = None,
        paths: Optional[LocalPaths] = None) -> summary_lib.RunSummary:
    """Run the whole pipeline and record it (``<output>/runs/<run id>/``: run.json,
    summary.json, report.html); return the summary. Raises RunFailed when a component
    failed, after recording how far the run got. ``span``: ingest that span instead of the
    newest (a backfill: the run is the one that day would have had). ``paths``: what
    ``resolve_inputs`` found, when the caller ran the pre-flight check itself."""
    stream = stream or cast(TextIO, sys.stdout)  # typeshed: TextIO | MaybeNone
    # The pre-flight check first, before TFX and TensorFlow load (~6 s): a bad CSV is refused
    # in about a second (bench/preflight.py).
    paths = paths or resolve_inputs(cfg, span)
    from tfx.orchestration.local.local_dag_runner import LocalDagRunner

    interactive_beam_off()  # in a notebook (notebooks/quickstart.ipynb): no CDN script in its cells
    os.makedirs(cfg.output_root, exist_ok=True)
    pipeline = build_pipeline(cfg, paths, enable_cache)
    beam_env = beam_flags.outside_the_cache_key(pipeline.components)  # Beam flags re-run nothing
    with one_run_at_a_time(cfg, stream):
        started = time.monotonic()
        started_unix = time.time()
        started_at = time.strftime("%Y-%m-%d %H:%M:%S %Z")
        ir, run_id = compile_with_run_id(pipeline)
        log_path = os.path.join(cfg.output_root, "logs", time.strftime("%Y%m%d-%H%M%S") + f"-{os.getpid()}.log")
        error, started_nodes = None, []
        with logging_to(log_path, stream) as progress:
            print(f"pipeline {cfg.name}, run {run_id}: {reads_line(cfg, paths, span)}; log: {log_path}", file=stream,
                  flush=True)
            # Beam workers' start-up and shutdown noise on stderr: into the run's log, not the console.
            workers = any(beam_engines.starts_worker_processes(beam_flags.args_of(beam_env, c.id))
                          for c in pipeline.components)
            signals: list = []
            passed_on = False  # the Ctrl-C reached TFX as another exception
            try:
                with signals_stop_run() as signals, executor_patches(), frozen_heap(), \
                        beam_flags.in_environment(beam_env), \
                        (stderr_to_file(log_path) if workers else contextlib.nullcontext()):
                    LocalDagRunner().run_with_ir(ir)
            except (Exception, KeyboardInterrupt) as e:
                # A Ctrl-C or SIGTERM is recorded as such, not left "running" forever, however a
                # library passed it on (Beam's bundles: as a RuntimeError).
                error = interruption_of(e, signals)
                if error is None:  # a component failed
                    logging.getLogger(__name__).exception("pipeline %s failed", cfg.name)
                    progress.failed()
                    error = e
                else:
                    logging.getLogger(__name__).warning("pipeline %s interrupted (%s)", cfg.name,
                                                        interruption_name(error), exc_info=e is not error)
                    started_nodes = progress.failed("stopped")
                    passed_on = e is not error
            beam_shared.forget_kept_alive()  # the Evaluator's model, kept by Beam past the run
            if isinstance(error, KeyboardInterrupt):
                try:
                    stopped = outcome.cancel_unfinished(cfg, run_id, failed_too=passed_on)
                except Exception:  # noqa: BLE001 - the interrupt is what the user hears of
                    logging.getLogger(__name__).exception("could not mark the stopped components canceled")
                    stopped = []
                # between MLMD's bookkeeping steps no execution may be open yet: the console's component
                message = outcome.interrupted_message(stopped or started_nodes, interruption_name(error))
            else:
                message = outcome.root_cause_message(error) if error else ""
            try:
                result = outcome.record_run(cfg, pipeline, run_id, started_at, time.monotonic() - started, message)
            except Exception:  # recording must not hide how the run itself ended
                if error is None:
                    raise
                logging.getLogger(__name__).exception("could not record the failed run")
                result = None
            if monitoring.enabled(cfg):  # success or failure: Prometheus hears of every run
                outcome.publish_metrics(cfg, result, started_unix, error, stream)
            if cfg.retention.keep_runs:
                apply_retention(cfg, stream)
    if isinstance(error, KeyboardInterrupt):
        raise RunInterrupted(result, message, interruption_exit_code(error)) from None
    if error is not None:
        raise RunFailed(result, message) from error
    assert result is not None  # without an error, a failure to record it raised above
    return result


def apply_retention(cfg: PipelineConfig, stream: TextIO) -> None:
    """retention.keep_runs after a run (under the run lock): one console line. A failure is
    reported, never raised over the run's own outcome."""
    from tfxline.runs import retention

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
