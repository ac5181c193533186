"""The ``tfxline`` command.

    tfxline init --data CSV --label COLUMN [--task T] [--positive VALUE] [--dir DIR] [--force]
    tfxline run [--config FILE] [--data PATH] [--output DIR] [--set section.key=value ...] [--span N]
    tfxline schema draft --data PATH [--schema-output FILE] [--diff]
    tfxline predict --input rows.csv --predictions out.csv
    tfxline runs [--last N]  |  tfxline runs show RUN_ID|latest
    tfxline report [RUN_DIR]
    tfxline gc [--keep-runs N] [--dry-run]
    tfxline serving  |  tfxline serving rollback [--to VERSION] [--reason TEXT] [--dry-run]
    tfxline serving canary VERSION --percent P  |  tfxline serving promote   [--server URL]
    tfxline serving settle --server URL | --without-server
    tfxline compile | submit | run-compiled ...   (Kubeflow / Vertex AI: cli/kubeflow.py)

Errors in input or config print one ``error:`` line naming the problem and the fix and
exit 2; a failed pipeline component exits 1. Nothing is pushed unless the whole run,
including the evaluation gate, succeeds.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import sys
from typing import Optional, Sequence, TextIO

# The helpers the Kubeflow commands share live one floor down (cli/kubeflow.py imports them
# from there, and this module imports cli/kubeflow.py: the arrows run one way).
from cli.common import EXIT_BAD_INPUT, EXIT_FAILED, EXIT_OK, FLAG_KEYS, BadInput, add_config_args, config_from_args, config_or_bad_input, quiet_tensorflow


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tfxline", description="The TFX pipeline: run it locally, or compile it for Kubeflow Pipelines v2 / "
        "Vertex AI and submit it.", epilog=__doc__.split("\n\n")[-1].strip().replace("``", "'"))
    sub = parser.add_subparsers(dest="command", required=True)

    init = sub.add_parser("init", help="write a config and a schema for your CSV, decided from its columns")
    init.add_argument("--data", required=True, metavar="CSV", help="the CSV (a file, .csv.gz, or a directory of them)")
    init.add_argument("--label", required=True, metavar="COLUMN", help="the column to predict")
    from transforms.features import TASK_BINARY, TASK_MULTICLASS, TASK_REGRESSION  # no TensorFlow

    init.add_argument("--task", choices=(TASK_BINARY, TASK_MULTICLASS, TASK_REGRESSION),
                      help="default: from the label's values (two values: binary; text or a few whole numbers: "
                           "multiclass; other numbers: regression)")
    init.add_argument("--positive", metavar="VALUE",
                      help="binary: the positive value as the data writes it (needed unless it is yes/no, true/false, "
                           "y/n, 1/0 or positive/negative)")
    init.add_argument("--dir", default=".", metavar="DIR", help="where config.yaml and schema.pbtxt go (default: here)")
    init.add_argument("--force", action="store_true", help="replace DIR's config.yaml and schema.pbtxt")
    init.set_defaults(func=cmd_init)

    run = sub.add_parser("run", help="run the whole pipeline locally (LocalDagRunner + SQLite MLMD)")
    add_config_args(run)
    run.add_argument("--no-cache", action="store_true", help="re-execute every component")
    run.add_argument("--span", metavar="N|YYYY-MM-DD",
                     help="ingest this span instead of the newest (a backfill, in span order: the run that "
                          "day would have had); a date for a {YYYY}{MM}{DD} pattern")
    run.set_defaults(func=cmd_run)

    schema = sub.add_parser("schema", help="draft a schema from data, for review")
    schema_sub = schema.add_subparsers(dest="schema_command", required=True)
    draft = schema_sub.add_parser("draft", help="infer a schema from the data (CSV or TFRecord) with TFDV")
    add_config_args(draft)
    draft.add_argument("--diff", action="store_true",
                       help="print the difference between the draft and the configured schema")
    draft.add_argument("--schema-output", metavar="FILE", help="write the draft schema here")
    draft.set_defaults(func=cmd_schema_draft)

    rep = sub.add_parser("report", help="write the HTML report of a recorded run")
    add_config_args(rep)
    rep.add_argument("run_dir", nargs="?", metavar="RUN_DIR",
                     help="<output>/runs/<run id> (default: the latest run of the pipeline under --output)")
    rep.set_defaults(func=cmd_report)

    runs = sub.add_parser("runs", help="the pipeline's runs from its MLMD store, newest first")
    add_config_args(runs)
    runs.add_argument("--last", type=int, default=20, metavar="N", help="how many runs (default 20)")
    runs.set_defaults(func=cmd_runs)
    runs_sub = runs.add_subparsers(dest="runs_command")
    show = runs_sub.add_parser("show", help="one run's summary and report path; a failed run's failed component "
                                           "and error line")
    add_config_args(show, default=argparse.SUPPRESS)  # given before or after 'show', the same
    show.add_argument("run_id", metavar="RUN_ID", help="a run id as 'tfxline runs' lists it, or 'latest' for the "
                                                      "newest run of the pipeline")

    gc = sub.add_parser("gc", help="delete the examples, transform outputs and models of old runs")
    add_config_args(gc)
    gc.add_argument("--keep-runs", type=int, metavar="N",
                    help="keep the newest N complete runs and the runs since (default: retention.keep_runs)")
    gc.add_argument("--dry-run", action="store_true", help="list what would be deleted, delete nothing")
    gc.set_defaults(func=cmd_gc)

    serving = sub.add_parser("serving", help="the serving directory's versions, newest first")
    add_config_args(serving)
    serving.set_defaults(func=cmd_serving)
    serving_sub = serving.add_subparsers(dest="serving_command")
    rollback = serving_sub.add_parser(
        "rollback", help="serve an older version again (copied in as a new version; the bad one is kept)")
    add_config_args(rollback, default=argparse.SUPPRESS)
    rollback.add_argument("--to", type=int, metavar="VERSION",
                          help="the version to serve again (default: the one that served before the current)")
    rollback.add_argument("--reason", default="", metavar="TEXT", help="recorded in the new version's metadata")
    rollback.add_argument("--dry-run", action="store_true", help="say what would be served, change nothing")
    canary = serving_sub.add_parser(
        "canary", help="serve VERSION to a share of the traffic beside the stable version (label 'canary')")
    add_config_args(canary, default=argparse.SUPPRESS)
    canary.add_argument("version", type=int, metavar="VERSION", help="a pushed version ('tfxline serving' lists them)")
    canary.add_argument("--percent", type=int, required=True, metavar="P", help="its share of the traffic, 1-99")
    promote = serving_sub.add_parser("promote", help="the canary becomes stable, with all the traffic")
    add_config_args(promote, default=argparse.SUPPRESS)
    settle = serving_sub.add_parser(
        "settle", help="move a pending move's labels, once TF Serving has loaded its versions")
    add_config_args(settle, default=argparse.SUPPRESS)
    settle.add_argument("--without-server", action="store_true",
                        help="move them without asking TF Serving (no TF Serving reads this release, or you checked)")
    for command in (rollback, canary, promote, settle):
        command.add_argument("--server", default="", metavar="URL",
                             help="TF Serving's REST address (e.g. http://localhost:8501): wait until it has loaded "
                                  "the new version, then move the labels (without it: they move with 'tfxline serving "
                                  "settle')")
        command.add_argument("--timeout", type=float, default=300.0, metavar="SECONDS",
                             help="how long --server is waited for (default 300)")

    pr = sub.add_parser("predict", help="predict a CSV of raw rows with the newest pushed model")
    add_config_args(pr)
    pr.add_argument("--input", required=True, metavar="CSV", help="raw rows (the label may be absent)")
    pr.add_argument("--predictions", required=True, metavar="FILE",
                    help="output: .csv, or .jsonl for JSON lines")
    pr.add_argument("--model-dir", help="a SavedModel directory (default: the release's stable version, a pending move's included)")
    pr.set_defaults(func=cmd_predict)

    from cli import kubeflow as kubeflow_cli  # compile, submit, run-compiled

    kubeflow_cli.add_commands(sub)
    return parser


def main(argv: Optional[Sequence[str]] = None, stream: Optional[TextIO] = None) -> int:
    # Entry point: process-wide settings are made here, before TensorFlow is imported.
    from trainer.keras_compat import select_legacy_keras

    select_legacy_keras()
    from cli.quiet import quiet_libraries

    quiet_libraries()
    from pipeline.config import ConfigError
    stream = stream or sys.stdout
    args = build_parser().parse_args(argv)
    try:
        return args.func(args, stream)
    except BadInput as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except ConfigError as e:  # e.g. a MySQL metadata store whose password is not in the environment
        print(f"error: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT


def cmd_run(args, stream: TextIO) -> int:
    """A run; one refused before it starts (bad config or input) still tells Prometheus so
    (local/monitoring.py), as a failed or complete run does from the local runner."""
    import time

    from pipeline.config import ConfigError

    started, cfg = time.time(), None
    try:
        cfg = config_or_bad_input(args, tensorflow=False)  # a CSV's pre-flight check needs no TensorFlow
        return _run(args, cfg, stream)
    except BadInput as e:
        refused(args, cfg, e.reason, str(e), started, stream)
        raise
    except ConfigError as e:  # found on the way in, e.g. a MySQL store's password not in the environment
        refused(args, cfg, "config", str(e), started, stream)
        raise
    except Exception as e:  # before the components ran: the local runner reports the runs that started
        refused(args, cfg, "failed", f"{type(e).__name__}: {e}", started, stream)
        raise


def refused(args, cfg, reason: str, message: str, started: float, stream: TextIO) -> None:
    """A run that never reached its components: its metrics, and for a refusal (config,
    bad_input) its record for `tfxline runs` (runs/history.py)."""
    import time

    from runs import history

    reporting = cfg or monitoring_config_of(args)
    if reporting is not None and reason in ("config", "bad_input"):  # refused, as the record says
        try:
            history.record_refusal(reporting.output_root, reason, message.splitlines()[0] if message else reason,
                                   time.time())
        except OSError:
            pass  # a read-only output root: the error line on the console is the record
    publish_refusal(reporting, reason, started, stream)


def _run(args, cfg, stream: TextIO) -> int:
    from local import runner as local_runner
    from pipeline.data_source import DataError
    from transforms.features import FeatureSpecError

    span = span_number(args.span)
    if cfg.data.format != "csv":
        quiet_tensorflow()  # TFRecords are checked with TensorFlow
    try:
        paths = local_runner.resolve_inputs(cfg, span)
        quiet_tensorflow()
        result = local_runner.run(cfg, stream=stream, enable_cache=not args.no_cache, span=span, paths=paths)
    except (DataError, FeatureSpecError) as e:
        raise BadInput(str(e), reason="bad_input") from None
    except local_runner.RunFailed as e:  # a component failed: the root cause in one line
        if e.report_path:
            print(f"report: {e.report_path}", file=stream, flush=True)
        print(f"error: pipeline failed: {e}", file=sys.stderr)
        return EXIT_FAILED
    print_summary(result, stream)
    return EXIT_OK


def publish_refusal(cfg, reason: str, started: float, stream: TextIO) -> None:
    """A refused run's metrics, when the config names a gateway or a textfile: the config's, or,
    when the config itself was refused, its monitoring section alone (``monitoring_config_of``).
    Never raises: the refusal's own line stands."""
    import time

    from local import monitoring

    if cfg is None or not monitoring.enabled(cfg):
        return
    try:
        samples = monitoring.refusal_samples(cfg, reason, started, time.time())
    except Exception as e:  # noqa: BLE001 - monitoring never changes a run's result
        print(f"warning: run metrics not collected ({e}); the run's result stands", file=stream, flush=True)
        return
    for done in monitoring.publish(cfg, samples, stream):
        print(f"metrics: {done}", file=stream, flush=True)


def monitoring_config_of(args):
    """The config's name, output root, serving location and monitoring section alone (the file's
    and the command line's): enough to report a refusal of the rest; None when even those are
    refused (the refusal's own error line says what is wrong)."""
    from pipeline.config_loader import load_reporting_config

    keep = [item for item in args.set
            if item.partition("=")[0].strip().split(".")[0] in ("monitoring", "name", "output_root", "serving")]
    for sets in (keep, []):  # a refused --set monitoring.* value: the file's own section reports it
        try:
            return load_reporting_config(args.config, sets, output_root=args.output)
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


def cmd_report(args, stream: TextIO) -> int:
    run_dir = args.run_dir or _latest_run_dir(config_or_bad_input(args))
    quiet_tensorflow()  # before the report's modules, which import TensorFlow
    from runs.report import collect, render

    try:
        data = collect.collect(run_dir)
    except (FileNotFoundError, LookupError) as e:  # not a run dir / its MLMD store lost the run
        raise BadInput(str(e)) from None
    existing = os.path.join(run_dir, render.REPORT_FILE)
    if data["run"]["collected"] and os.path.isfile(existing):
        raise BadInput(f"retention deleted {len(data['run']['collected'])} artifact(s) of run {data['run']['run_id']} "
                       f"(tfxline gc); its report from when it ran, {existing}, shows them and is kept (delete it "
                       "to write a reduced one)")
    path = render.write_report(run_dir, data)
    print(f"report: {path}", file=stream, flush=True)
    return EXIT_OK


def _latest_run_dir(cfg) -> str:
    """The newest run of the configured pipeline in its MLMD store, as a run directory."""
    from runs.store import describe_store, latest_run_id, open_store, store_exists

    run_id = latest_run_id(open_store(cfg.metadata_store), cfg.name) if store_exists(cfg.metadata_store) else None
    if run_id is None:
        raise BadInput(f"no recorded run of pipeline {cfg.name} in {describe_store(cfg.metadata_store)}; run the pipeline "
                       "first (tfxline run), or pass a run directory")
    return os.path.join(cfg.output_root, "runs", run_id)


LATEST_RUN = "latest"  # `tfxline runs show latest`: the alerts' one command needs no run id


def cmd_runs(args, stream: TextIO) -> int:
    """The runs' table, or one run's summary (``show RUN_ID``, ``show latest``): from MLMD, with
    each run's error line and wall time as it recorded them under the output root (MLMD holds
    neither)."""
    from runs import history
    from runs.store import describe_store, latest_run_id, open_store, store_exists
    from runs.summary import collect_run

    cfg = config_or_bad_input(args)
    if not store_exists(cfg.metadata_store):
        refusal = history.newer_refusal(cfg.output_root)
        if refusal:  # the first run was refused: that is the whole history
            print(history.refusal_line(refusal), file=stream, flush=True)
            return EXIT_OK
        raise BadInput(f"no metadata store at {cfg.metadata_path}; run the pipeline first (tfxline run), "
                       f"or pass the --config (pipeline {cfg.name} now) and --output it used")
    if getattr(args, "runs_command", None) == "show":
        store = open_store(cfg.metadata_store)
        run_id = latest_run_id(store, cfg.name) if args.run_id == LATEST_RUN else args.run_id
        if args.run_id == LATEST_RUN:
            refusal = history.newer_refusal(cfg.output_root, _started_ms(store, run_id))
            if refusal:
                print(history.refusal_line(refusal) + ("; the newest recorded run:" if run_id else ""),
                      file=stream, flush=True)
                if run_id is None:
                    return EXIT_OK
        if run_id is None:
            raise BadInput(f"no run of pipeline {cfg.name} in {describe_store(cfg.metadata_store)}; run the "
                           f"pipeline first (tfxline run), or pass the --config (pipeline {cfg.name} now) and "
                           "--output it used")
        try:
            result = history.recorded(collect_run(cfg.metadata_store, cfg.name, run_id, store=store), cfg.output_root)
        except LookupError as e:
            raise BadInput(f"{e}; 'tfxline runs' lists the recorded runs") from None
        report = os.path.join(cfg.output_root, "runs", result.run_id, "report.html")
        result.report_path = report if os.path.isfile(report) else ""
        print_summary(result, stream)
        if result.components:
            from runs.console import component_seconds_line
            print(component_seconds_line(result), file=stream, flush=True)
        return EXIT_OK
    rows = history.list_runs(cfg.metadata_store, cfg.name, last=args.last, serving_dir=cfg.serving_dir,
                             output_root=cfg.output_root)
    refusal = history.newer_refusal(cfg.output_root, _started_ms(open_store(cfg.metadata_store),
                                                                 rows[0].run_id if rows else None))
    if not rows:
        print(f"no runs of pipeline {cfg.name} in {describe_store(cfg.metadata_store)}", file=stream)
    else:
        print(history.format_table(rows), file=stream, flush=True)
    if refusal:
        print(("\n" if rows else "") + history.refusal_line(refusal), file=stream, flush=True)
    return EXIT_OK


def _started_ms(store, run_id) -> int:
    """When MLMD registered the run (0 for none)."""
    run = store.get_context_by_type_and_name("pipeline_run", run_id) if run_id else None
    return run.create_time_since_epoch if run is not None else 0


def cmd_gc(args, stream: TextIO) -> int:
    from local import runner as local_runner
    from runs import retention
    from runs.store import store_exists

    cfg = config_or_bad_input(args)
    keep = args.keep_runs if args.keep_runs is not None else cfg.retention.keep_runs
    if keep < 1:
        raise BadInput(f"--keep-runs must be >= 1, got {keep}" if args.keep_runs is not None else
                       "say how many runs to keep: --keep-runs N, or retention.keep_runs in the config")
    if not store_exists(cfg.metadata_store):
        raise BadInput(f"no metadata store at {cfg.metadata_path}; run the pipeline first (tfxline run), "
                       f"or pass the --config (pipeline {cfg.name} now) and --output it used")
    with local_runner.one_run_at_a_time(cfg, stream):  # never under a run writing the same store
        retention.run_retention(cfg, stream, keep_runs=keep, dry_run=args.dry_run)
    return EXIT_OK


def cmd_serving(args, stream: TextIO) -> int:
    from serving.push import RollbackError
    from serving.release import ReleaseError
    from local import runner as local_runner
    from runs import versions as serving

    cfg = config_or_bad_input(args, tensorflow=False)  # these commands read and copy files
    command = getattr(args, "serving_command", None)
    try:
        if command is None:
            print(serving.format_versions(cfg.serving_dir), file=stream, flush=True)
            return EXIT_OK
        # Not between a run's baseline and its push (SQLite: one run at a time per output root).
        lock = (contextlib.nullcontext() if getattr(args, "dry_run", False) or not os.path.isdir(cfg.output_root)
                else local_runner.one_run_at_a_time(cfg, stream))
        with lock:
            if command == "canary":
                lines = serving.canary(cfg, args.version, args.percent, args.server, args.timeout)
            elif command == "promote":
                lines = serving.promote(cfg, args.server, args.timeout)
            elif command == "settle":
                lines = serving.settle(cfg, args.server, args.timeout, args.without_server)
            else:
                lines = serving.rollback(cfg, args.to, args.reason, args.dry_run, args.server, args.timeout)
    except (RollbackError, ReleaseError) as e:
        raise BadInput(str(e)) from None
    except serving.ServerError as e:  # the first phase is written; the move waits for TF Serving
        print(f"error: {e}", file=sys.stderr)
        return EXIT_FAILED
    print(lines, file=stream, flush=True)
    return EXIT_OK


def print_summary(result, stream: TextIO) -> None:
    from runs.console import format_summary

    print(format_summary(result), file=stream, flush=True)
    trainer = result.component("Trainer")
    if trainer and trainer.outputs.get("model_run"):
        print(f"  tensorboard: tensorboard --logdir {trainer.outputs['model_run'][0]}", file=stream)
    if result.report_path:
        print(f"  report: {result.report_path}", file=stream, flush=True)
    elif result.report_error:
        print(f"  warning: report not written ({result.report_error}); the run's result stands; the traceback is "
              "in the run's log", file=stream, flush=True)


def cmd_init(args, stream: TextIO) -> int:
    from cli import init_project
    from pipeline.data_source import DataError

    quiet_tensorflow()  # the schema is drafted with TFDV
    try:
        return init_project.init(args.data, args.label, args.task, args.positive, args.dir, args.force, stream)
    except (init_project.InitError, DataError) as e:
        raise BadInput(str(e)) from None


def cmd_schema_draft(args, stream: TextIO) -> int:
    from cli import schema_draft as schema_tools

    cfg = config_or_bad_input(args)
    try:
        return schema_tools.draft(cfg, out_path=args.schema_output, diff=args.diff, stream=stream)
    except schema_tools.DataError as e:
        raise BadInput(str(e)) from None


def cmd_predict(args, stream: TextIO) -> int:
    from serving.release import ReleaseError
    from pipeline.data_source import DataError
    from pipeline.predict import predict_csv

    cfg = config_or_bad_input(args)
    try:
        predict_csv(cfg, args.input, args.predictions, model_dir=args.model_dir, stream=stream)
    except ReleaseError as e:  # the serving directory's release.json cannot be read
        raise BadInput(str(e)) from None
    except (DataError, FileNotFoundError) as e:
        # without --config the packaged taxi config is read: say so, most models are not taxi's
        hint = "" if args.config else f" (read with the config of pipeline {cfg.name}: pass --config for your own)"
        raise BadInput(f"{e}{hint}") from None
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
