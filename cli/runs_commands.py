"""The recorded runs: ``tfxline runs`` (and ``runs show RUN_ID|latest``), ``tfxline report``
and ``tfxline gc``, from the MLMD store and what each run wrote under the output root."""
from __future__ import annotations

import argparse
import os
from typing import TextIO

from tfxline.cli.common import EXIT_OK, BadInput, add_config_args, config_or_bad_input, count, quiet_tensorflow
from tfxline.cli.run_command import print_summary


def add_commands(sub) -> None:
    rep = sub.add_parser("report", help="write the HTML report of a recorded run")
    add_config_args(rep)
    rep.add_argument("run_dir", nargs="?", metavar="RUN_DIR",
                     help="<output>/runs/<run id> (default: the latest run of the pipeline under --output)")
    rep.set_defaults(func=cmd_report)

    runs = sub.add_parser("runs", help="the pipeline's runs from its MLMD store, newest first")
    add_config_args(runs)
    runs.add_argument("--last", type=count, default=20, metavar="N", help="how many runs (default 20)")
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


def cmd_report(args, stream: TextIO) -> int:
    run_dir = args.run_dir or _latest_run_dir(config_or_bad_input(args, data=False))
    quiet_tensorflow()  # before the report's modules, which import TensorFlow
    from tfxline.runs.report import collect, render

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
    from tfxline.runs.store import describe_store, latest_run_id, open_store, store_exists

    run_id = latest_run_id(open_store(cfg.metadata_store), cfg.name) if store_exists(cfg.metadata_store) else None
    if run_id is None:
        raise BadInput(f"no recorded run of pipeline {cfg.name} in {describe_store(cfg.metadata_store)}; run the "
                       "pipeline "
                       "first (tfxline run), or pass a run directory")
    return os.path.join(cfg.output_root, "runs", run_id)


LATEST_RUN = "latest"  # `tfxline runs show latest`: the alerts' one command needs no run id


def cmd_runs(args, stream: TextIO) -> int:
    """The runs' table, or one run's summary (``show RUN_ID``, ``show latest``): from MLMD, with
    each run's error line and wall time as it recorded them under the output root (MLMD holds
    neither)."""
    from tfxline.runs import history
    from tfxline.runs.store import describe_store, latest_run_id, open_store, store_exists
    from tfxline.runs.summary import collect_run

    cfg = config_or_bad_input(args, data=False)
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
            from tfxline.runs.console import component_seconds_line
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
    from tfxline.local.lock import one_run_at_a_time
    from tfxline.runs import retention
    from tfxline.runs.store import store_exists

    cfg = config_or_bad_input(args, data=False)
    keep = args.keep_runs if args.keep_runs is not None else cfg.retention.keep_runs
    if keep < 1:
        raise BadInput(f"--keep-runs must be >= 1, got {keep}" if args.keep_runs is not None else
                       "say how many runs to keep: --keep-runs N, or retention.keep_runs in the config")
    if not store_exists(cfg.metadata_store):
        raise BadInput(f"no metadata store at {cfg.metadata_path}; run the pipeline first (tfxline run), "
                       f"or pass the --config (pipeline {cfg.name} now) and --output it used")
    with one_run_at_a_time(cfg, stream):  # never under a run writing the same store
        retention.run_retention(cfg, stream, keep_runs=keep, dry_run=args.dry_run)
    return EXIT_OK
