"""The ``tfxline`` command.

    tfxline init --data CSV --label COLUMN [--task T] [--positive VALUE] [--dir DIR] [--force] [--tune]
    tfxline init --data IMAGE_FOLDER [--dir DIR] [--force]
    tfxline run [--config FILE] [--data PATH] [--output DIR] [--set section.key=value ...] [--span N]
    tfxline schema draft --data PATH [--schema-output FILE] [--diff]
    tfxline predict --input rows.csv|IMAGE_FOLDER --predictions out.csv
    tfxline runs [--last N]  |  tfxline runs show RUN_ID|latest
    tfxline report [RUN_DIR]
    tfxline gc [--keep-runs N] [--dry-run]
    tfxline serving  |  tfxline serving rollback [--to VERSION] [--reason TEXT] [--dry-run]
    tfxline serving canary VERSION --percent P  |  tfxline serving promote   [--server URL]
    tfxline serving settle --server URL | --without-server
    tfxline compile | submit | run-compiled ...   (Kubeflow / Vertex AI: cli/kubeflow.py)

The exit codes: EXIT_CODES below, the help's epilog.
"""
from __future__ import annotations

import argparse
import atexit
import os
import sys
import threading
import time
from typing import Optional, Sequence, TextIO

from tfxline.cli import data_commands, kubeflow, run_command, runs_commands, serving_commands
from tfxline.cli.common import (  # noqa: F401 - the exit codes, read here too
    EXIT_BAD_INPUT,
    EXIT_BROKEN_PIPE,
    EXIT_FAILED,
    EXIT_OK,
    BadInput,
    Parser,
)

INTERRUPTED_THREADS_WAIT_S = 5.0  # fast_exit's wait for other threads after an interrupt
# The help's epilog: a constant, not the docstring, which `python -OO` (PYTHONOPTIMIZE=2) strips.
EXIT_CODES = """Errors in input or config print one 'error:' line naming the problem and the fix and
exit 2; a failed pipeline component exits 1. Nothing is pushed unless the whole run,
including the evaluation gate, succeeds."""


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="tfxline", description="The TFX pipeline: run it locally, or compile it for Kubeflow Pipelines v2 / "
        "Vertex AI and submit it.", epilog=EXIT_CODES)
    sub = parser.add_subparsers(dest="command", required=True)

    data_commands.add_init(sub)
    run_command.add_commands(sub)          # run
    data_commands.add_schema(sub)
    runs_commands.add_commands(sub)        # report, runs, gc
    serving_commands.add_commands(sub)
    data_commands.add_predict(sub)
    kubeflow.add_commands(sub)             # compile, submit, run-compiled
    return parser


def main(argv: Optional[Sequence[str]] = None, stream: Optional[TextIO] = None) -> int:
    from tfxline.local.process import interruption_exit_code, interruption_name, interruption_of, signals_stop_run

    signals: list = []
    try:
        with signals_stop_run() as signals:  # SIGTERM as Ctrl-C, from the start: one line and its exit code
            return _command(argv, stream or sys.stdout)
    except BrokenPipeError:  # stdout's reader left (tfxline runs | head -1): stop there, as Unix tools do
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # the exit's flush writes nowhere
        except (OSError, ValueError):  # a stdout with no file descriptor (a test's capture): nothing to flush
            pass
        return EXIT_BROKEN_PIPE
    except (Exception, KeyboardInterrupt) as e:
        # Ctrl-C or SIGTERM outside a run's components (those are recorded: local/runner.py), as
        # such or as what a library made of it
        stop = interruption_of(e, signals)
        if stop is None:
            raise
        print(f"interrupted ({interruption_name(stop)})", file=sys.stderr)
        return interruption_exit_code(stop)


def _command(argv: Optional[Sequence[str]], stream: TextIO) -> int:
    # Entry point: process-wide settings are made here, before TensorFlow is imported.
    from tfxline.trainer.keras_compat import select_legacy_keras

    select_legacy_keras()
    from tfxline.cli.quiet import quiet_libraries

    quiet_libraries()
    from tfxline.pipeline.config import ConfigError
    args = build_parser().parse_args(argv)
    try:
        return args.func(args, stream)
    except BadInput as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except ConfigError as e:  # e.g. a MySQL metadata store whose password is not in the environment
        print(f"error: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT


def entry() -> None:
    """The ``tfxline`` console command: ``main()``, then :func:`fast_exit`."""
    from tfxline.local import malloc_arenas

    malloc_arenas.limit()   # before TensorFlow starts its threads
    fast_exit(main())


def fast_exit(code: int) -> None:
    """End the process as a normal exit would, less the interpreter's teardown.

    After a pipeline run, tearing down TensorFlow's, Beam's and TFX's modules and objects takes
    ~2 s (bench/e2e.py) and writes nothing. What a normal exit does that matters is done here
    first, in its order: wait for non-daemon threads, run the atexit handlers (logging's
    flush and close, tempfile's and weakref finalizers), flush stdout and stderr.
    """
    # An interrupted command (exit 130, 141, 143) waits a few seconds at most: a thread of the
    # work it stopped (a Beam bundle's) may never end, and the user asked to stop.
    deadline = time.monotonic() + INTERRUPTED_THREADS_WAIT_S if code > 128 else None
    for thread in threading.enumerate():
        if thread is not threading.main_thread() and not thread.daemon:
            thread.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
    atexit._run_exitfuncs()
    for f in (sys.stdout, sys.stderr):
        try:
            f.flush()
        except (OSError, ValueError):  # a closed or broken pipe: nothing more to write
            pass
    os._exit(code)


if __name__ == "__main__":
    entry()
