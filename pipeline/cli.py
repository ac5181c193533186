"""The ``tfxline`` command.

    tfxline run [--config FILE] [--data PATH] [--output DIR] [--set section.key=value ...]
    tfxline schema draft --data PATH [--output FILE] [--diff]

Errors in input or config print one ``error:`` line naming the problem and the fix and
exit 2; a failed pipeline component exits 1. Nothing is pushed unless the whole run,
including the evaluation gate, succeeds.
"""
from __future__ import annotations

import argparse
import os
import sys
from typing import List, Optional, Sequence, TextIO

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT = 0, 1, 2


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tfxline", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="run the whole pipeline locally (LocalDagRunner + SQLite MLMD)")
    add_config_args(run)
    run.add_argument("--no-cache", action="store_true", help="re-execute every component")

    schema = sub.add_parser("schema", help="draft a schema from data, for review")
    schema_sub = schema.add_subparsers(dest="schema_command", required=True)
    draft = schema_sub.add_parser("draft", help="infer a schema from a CSV with TFDV")
    add_config_args(draft)
    draft.add_argument("--diff", action="store_true",
                       help="print the difference between the draft and the configured schema")
    draft.add_argument("--schema-output", metavar="FILE", help="write the draft schema here")
    return parser


def add_config_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", metavar="FILE", help="YAML config (default: the packaged taxi config)")
    p.add_argument("--data", metavar="PATH", help="CSV file or directory of CSVs (data.path)")
    p.add_argument("--output", metavar="DIR", help="output root (output_root)")
    p.add_argument("--schema", metavar="NAME_OR_FILE", help="schema name in schema/ or a .pbtxt (data.schema)")
    p.add_argument("--train-steps", type=int, metavar="N", help="training.train_steps")
    p.add_argument("--strategy", help="runtime.strategy")
    p.add_argument("--precision", help="runtime.precision")
    p.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE",
                   help="override any config key (repeatable)")


def config_from_args(args: argparse.Namespace):
    from pipeline.config import load_config

    return load_config(args.config, args.set, **{
        "data.path": args.data, "output_root": args.output, "data.schema": args.schema,
        "training.train_steps": args.train_steps, "runtime.strategy": args.strategy,
        "runtime.precision": args.precision,
    })


def main(argv: Optional[Sequence[str]] = None, stream: Optional[TextIO] = None) -> int:
    # Entry point: process-wide settings are made here, before TensorFlow is imported.
    from trainer.keras_compat import select_legacy_keras

    select_legacy_keras()
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    stream = stream or sys.stdout
    args = build_parser().parse_args(argv)
    try:
        if args.command == "run":
            return cmd_run(args, stream)
        if args.command == "schema":
            return cmd_schema_draft(args, stream)
    except BadInput as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    return EXIT_FAILED  # argparse guarantees a known command


class BadInput(Exception):
    pass


def _load(args):
    from pipeline.config import ConfigError
    from pipeline.data_source import DataError
    from transforms.features import FeatureSpecError

    try:
        return config_from_args(args)
    except (ConfigError, DataError, FeatureSpecError) as e:
        raise BadInput(str(e)) from None


def cmd_run(args, stream: TextIO) -> int:
    from pipeline import local_runner
    from pipeline.data_source import DataError
    from transforms.features import FeatureSpecError

    cfg = _load(args)
    try:
        result = local_runner.run(cfg, stream=stream, enable_cache=not args.no_cache)
    except (DataError, FeatureSpecError) as e:
        raise BadInput(str(e)) from None
    except Exception as e:  # a component failed: report the root cause in one line
        print(f"error: pipeline failed: {root_cause_message(e)}", file=sys.stderr)
        return EXIT_FAILED
    print_summary(result, stream)
    return EXIT_OK


def root_cause_message(e: BaseException) -> str:
    from components.anomalies_gate import DataAnomaliesError

    chain: List[BaseException] = []
    while e is not None and e not in chain:
        chain.append(e)
        e = e.__cause__ or e.__context__
    for err in chain:
        if isinstance(err, DataAnomaliesError):
            return str(err)
    last = chain[-1]
    first_line = (str(last).strip().splitlines() or [""])[0]
    return f"{type(last).__name__}: {first_line}"


def print_summary(result, stream: TextIO) -> None:
    from pipeline.report_text import format_summary

    print(format_summary(result), file=stream, flush=True)


def cmd_schema_draft(args, stream: TextIO) -> int:
    from pipeline import schema_tools

    cfg = _load(args)
    try:
        return schema_tools.draft(cfg, out_path=args.schema_output, diff=args.diff, stream=stream)
    except schema_tools.DataError as e:
        raise BadInput(str(e)) from None


if __name__ == "__main__":
    sys.exit(main())
