"""Run the pipeline on LocalDagRunner with an SQLite MLMD store under the output root.

This runner owns the paths and the process environment; ``create_pipeline`` gets
everything passed in. Console output is one line per component start/finish (with its
duration and whether MLMD's cache served it); the full log goes to
``<output_root>/logs/<run>.log``.
"""
from __future__ import annotations

import dataclasses
import logging
import os
import re
import sys
import time
from typing import Optional, TextIO

from pipeline import data_source, summary as summary_lib
from pipeline.config import PipelineConfig

_RUNNING = re.compile(r"Component (\S+) is running\.")
_FINISHED = re.compile(r"Component (\S+) is finished\.")
_CACHED = re.compile(r"A cached execution \d+ is used\.")


class ProgressHandler(logging.Handler):
    """Turns LocalDagRunner's log lines into one console line per component event."""

    def __init__(self, stream: TextIO):
        super().__init__(logging.INFO)
        self.stream = stream
        self.started: dict = {}
        self.cached = False

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = record.getMessage()
        except Exception:  # a malformed third-party log record must not break the run
            return
        if m := _RUNNING.match(message):
            node, self.cached = m.group(1), False
            self.started[node] = time.monotonic()
            self._print(f"[ start ] {node}")
        elif _CACHED.match(message):
            self.cached = True
        elif m := _FINISHED.match(message):
            node = m.group(1)
            seconds = time.monotonic() - self.started.get(node, time.monotonic())
            tag = "cached" if self.cached else " done "
            self._print(f"[{tag} ] {node} ({seconds:.1f}s)")

    def _print(self, line: str) -> None:
        print(line, file=self.stream, flush=True)


@dataclasses.dataclass
class LocalPaths:
    data_root: str
    data_pattern: str
    data_files: list
    schema_path: str


def resolve_inputs(cfg: PipelineConfig) -> LocalPaths:
    """Locate data and schema and pre-flight check the input files (raises DataError)."""
    data_path = data_source.resolve_data_path(cfg.data.path)
    root, pattern, files = data_source.locate(data_path, cfg.data.format, cfg.data.pattern)
    schema_path = data_source.schema_path(cfg.data.schema)
    schema = data_source.load_schema(schema_path)
    schema_columns = [f.name for f in schema.feature]
    cfg.features.validate(schema_columns)
    check = data_source.check_csv if cfg.data.format == "csv" else data_source.check_tfrecords
    check(files, schema, required=cfg.features.raw_columns)
    return LocalPaths(root, pattern, files, schema_path)


def build_pipeline(cfg: PipelineConfig, paths: LocalPaths, enable_cache: bool = True):
    from tfx import v1 as tfx

    from pipeline.factory import create_pipeline

    return create_pipeline(
        cfg,
        data_root=paths.data_root,
        data_pattern=paths.data_pattern,
        schema_path=paths.schema_path,
        pipeline_root=cfg.pipeline_root,
        serving_dir=cfg.serving_dir,
        metadata_connection_config=tfx.orchestration.metadata.sqlite_metadata_connection_config(
            cfg.metadata_path),
        beam_pipeline_args=cfg.runtime.beam_args,
        enable_cache=enable_cache,
    )


def run(cfg: PipelineConfig, stream: Optional[TextIO] = None,
        enable_cache: bool = True) -> summary_lib.RunSummary:
    """Run the whole pipeline; return the run summary. Raises on a failed component."""
    from tfx import v1 as tfx

    from trainer.keras_compat import skip_autograph_for_tf_keras

    stream = stream or sys.stdout
    paths = resolve_inputs(cfg)
    # Every component runs in this process: spare TFMA's tf_keras metric wrappers the
    # AutoGraph conversion too, not only the Trainer (see trainer/keras_compat.py).
    skip_autograph_for_tf_keras()
    os.makedirs(cfg.output_root, exist_ok=True)
    pipeline = build_pipeline(cfg, paths, enable_cache)
    started = time.monotonic()
    log_path = os.path.join(cfg.output_root, "logs", time.strftime("%Y%m%d-%H%M%S") + ".log")
    with _logging_to(log_path, stream):
        print(f"pipeline {cfg.name}: {len(paths.data_files)} {cfg.data.format.upper()} file(s) "
              f"from {paths.data_root}; "
              f"log: {log_path}", file=stream, flush=True)
        try:
            tfx.orchestration.LocalDagRunner().run(pipeline)
        except Exception:
            logging.getLogger(__name__).exception("pipeline %s failed", cfg.name)
            raise
    result = summary_lib.collect_run(cfg.metadata_path, cfg.name)
    result.wall_seconds = round(time.monotonic() - started, 1)
    summary_lib.write_summary(result, os.path.join(cfg.output_root, "runs", result.run_id, "summary.json"))
    return result


class _logging_to:
    """Route Python/absl logging to a file and component progress to the console."""

    def __init__(self, log_path: str, stream: TextIO):
        self.log_path, self.stream = log_path, stream

    def __enter__(self) -> ProgressHandler:
        from absl import logging as absl_logging

        os.makedirs(os.path.dirname(self.log_path), exist_ok=True)
        self.file_handler = logging.FileHandler(self.log_path)
        self.file_handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        self.progress = ProgressHandler(self.stream)
        root = logging.getLogger()
        # Libraries call logging.basicConfig() at import; keep their console handlers
        # quiet for the run so the console shows progress and the file has the rest.
        self.muted = [h for h in root.handlers if isinstance(h, logging.StreamHandler)
                      and not isinstance(h, logging.FileHandler)]
        for h in self.muted:
            root.removeHandler(h)
        self.previous_level = root.level
        root.setLevel(logging.INFO)
        absl_logging.set_verbosity(absl_logging.INFO)
        root.addHandler(self.file_handler)
        logging.getLogger("absl").addHandler(self.progress)
        logging.captureWarnings(True)  # library warnings go to the log file, not the console
        return self.progress

    def __exit__(self, *exc) -> None:
        logging.captureWarnings(False)
        logging.getLogger("absl").removeHandler(self.progress)
        root = logging.getLogger()
        root.removeHandler(self.file_handler)
        root.setLevel(self.previous_level)
        for h in self.muted:
            root.addHandler(h)
        self.file_handler.close()
