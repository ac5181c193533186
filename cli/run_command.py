"""``tfxline run``: the pipeline on this machine (local/runner.py), its summary, and the report
of a run refused before its components (bad config or input: exit 2)."""
from __future__ import annotations

import sys
from typing import Optional, TextIO, cast

from tfxline.cli.common import (
    EXIT_FAILED,
    EXIT_OK,
    BadInput,
    ReaderMayLeave,
    add_config_args,
    config_file,
    config_or_bad_input,
    quiet_tensorflow,
)
from tfxline.trainer.text_settings import PRETRAINED


def add_commands(sub) -> None:
    run = sub.add_parser("run", help="run the whole pipeline locally (LocalDagRunner; MLMD in SQLite, or MySQL)")
    add_config_args(run, training=True)
    run.add_argument("--no-cache", action="store_true", help="re-execute every component")
    run.add_argument("--span", metavar="N|YYYY-MM-DD",
                     help="ingest this span instead of the newest (a backfill, in span order: the run that "
                          "day would have had); a date for a {YYYY}{MM}{DD} pattern")
    run.set_defaults(func=cmd_run)



def cmd_run(args, stream: TextIO) -> int:
    """A run; one refused before it starts (bad config or input) still tells Prometheus so
    (local/monitoring.py), as a failed or complete run does from the local runner."""
    import time

    from tfxline.pipeline.config import ConfigError

    started, cfg = time.time(), None
    # `tfxline run | head`: the run goes on and is recorded; a TextIO by delegation (cli/common.py)
    stream = cast(TextIO, ReaderMayLeave(stream))
    try:
        cfg = config_or_bad_input(args, tensorflow=False)  # a CSV's pre-flight check needs no TensorFlow
        return _run(args, cfg, stream)
    except BadInput as e:
        _refused(args, cfg, e.reason, str(e), started, stream)
        raise
    except ConfigError as e:  # found on the way in, e.g. a MySQL store's password not in the environment
        _refused(args, cfg, "config", str(e), started, stream)
        raise
    except Exception as e:  # before the components ran: the local runner reports the runs that started
        _refused(args, cfg, "failed", f"{type(e).__name__}: {e}", started, stream)
        raise


def _refused(args, cfg, reason: str, message: str, started: float, stream: TextIO) -> None:
    """A run that never reached its components, reported with the config, or with its reporting
    keys alone when the config itself was refused (local/outcome.py)."""
    from tfxline.local import outcome

    outcome.report_refusal(cfg or monitoring_config_of(args), reason, message, started, stream)


def _run(args, cfg, stream: TextIO) -> int:
    from tfxline.local import runner
    from tfxline.pipeline.data.source import DataError
    from tfxline.transforms.features import FeatureSpecError

    span = span_number(args.span)
    if cfg.data.format != "csv" or cfg.model.text_encoder == PRETRAINED:
        quiet_tensorflow()  # TFRecords are checked with TensorFlow, a pretrained text encoder loaded
    try:
        paths = runner.resolve_inputs(cfg, span)
        quiet_tensorflow()
        result = runner.run(cfg, stream=stream, enable_cache=not args.no_cache, span=span, paths=paths)
    except (DataError, FeatureSpecError) as e:
        raise BadInput(str(e), reason="bad_input") from None
    except runner.RunFailed as e:  # a component failed (or a Ctrl-C stopped one): the cause in one line
        if e.report_path:
            print(f"report: {e.report_path}", file=stream, flush=True)
        if isinstance(e, runner.RunInterrupted):
            print((f"run {e.summary.run_id} " if e.summary else "") + str(e), file=sys.stderr)
            return e.exit_code
        print(f"error: pipeline failed: {e}", file=sys.stderr)
        return EXIT_FAILED
    print_summary(result, stream, cfg.serving.tf_serving_url)
    return EXIT_OK


def monitoring_config_of(args):
    """The config's name, output root, serving location and monitoring section alone (the file's
    and the command line's): enough to report a refusal of the rest; None when even those are
    refused (the refusal's own error line says what is wrong)."""
    from tfxline.pipeline.config.reporting import load_reporting_config

    keep = [item for item in args.set
            if item.partition("=")[0].strip().split(".")[0] in ("monitoring", "name", "output_root", "serving")]
    for sets in (keep, []):  # a refused --set monitoring.* value: the file's own section reports it
        try:
            return load_reporting_config(config_file(args), sets, output_root=args.output)
        except Exception:  # noqa: BLE001
            continue
    return None


def span_number(value: Optional[str]) -> Optional[int]:
    """--span as TFX numbers spans: N for {SPAN}, days since 1970-01-01 for a date."""
    if value is None:
        return None
    if value.isdigit():
        return int(value)
    import datetime

    try:
        return (datetime.date.fromisoformat(value) - datetime.date(1970, 1, 1)).days
    except ValueError:
        raise BadInput(f"--span {value!r} is neither a span number nor a date (YYYY-MM-DD); "
                       "pass e.g. --span 7 or --span 2026-11-20", reason="config") from None


def print_summary(result, stream: TextIO, tf_serving_url: str = "") -> None:
    """``tf_serving_url``: serving.tf_serving_url, for a run that just pushed (``runs show`` of an
    earlier run leaves it out: its label move may be long settled)."""
    from tfxline.runs.console import format_summary

    print(format_summary(result, tf_serving_url), file=stream, flush=True)
    trainer = result.component("Trainer")
    if trainer and trainer.outputs.get("model_run") and not result.no_network:
        print(f"  tensorboard: tensorboard --logdir {trainer.outputs['model_run'][0]}", file=stream)
    if result.report_path:
        print(f"  report: {result.report_path}", file=stream, flush=True)
    elif result.report_error:
        print(f"  warning: report not written ({result.report_error}); the run's result stands; the traceback is "
              "in the run's log", file=stream, flush=True)
