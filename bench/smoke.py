"""What every bench's smoke mode shares (``--smoke``: the bench's whole code path at the smallest
sizes, so a bench that breaks fails CI; tests/test_bench_smoke.py runs them): where results go,
and the rule that a smoke run never writes under bench/results/, whose files the docs' tables are
rendered from. Standard library only: the GPU machine's TensorFlow-only bundle imports it too.
"""
from __future__ import annotations

import csv
import json
import os
import sys
import tempfile

RESULTS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
ENV = "TFXLINE_BENCH_SMOKE"  # set by a smoke run: its child processes (workers, scorers) are smoke runs too
# A pipeline run a smoke run makes for itself: every 15th taxi row, a few training steps; gates that
# pass whatever such a model scores, so it is pushed (bench/tflite.py reads the served model).
ROWS = 1000
SETTINGS = ["training.mode=steps", "training.train_steps=20", "training.eval_steps=2"]
PUSHED = ["evaluation.min_auc=0", "evaluation.min_accuracy=0"]


def add_arguments(parser, default_results: str) -> None:
    """--smoke and --results on a bench's parser."""
    parser.add_argument("--smoke", action="store_true",
                        help="the whole bench at the smallest sizes (CI), results in a temporary folder "
                             "unless --results; never under bench/results/")
    parser.add_argument("--results", default=None,
                        help=f"the results file (default: {os.path.relpath(default_results)}; "
                             "with --smoke a temporary file)")


def results_path(args, default_results: str) -> str:
    """Where this run writes its results. A smoke run refuses bench/results/ (exit 2) before it
    does any work, and gets a fresh temporary file when none is given."""
    if not args.smoke:
        return args.results or default_results
    os.environ[ENV] = "1"
    if args.results is None:
        folder = tempfile.mkdtemp(prefix="tfxline-bench-smoke-")
        return os.path.join(folder, os.path.basename(default_results))
    refuse_committed(args.results)
    return args.results


def under_results(path: str) -> bool:
    """Whether ``path`` (its real location: links, '..' and a relative path resolved) is in bench/results/."""
    real, results = os.path.realpath(path), os.path.realpath(RESULTS_DIR)
    return real == results or real.startswith(results + os.sep)


def refuse_committed(path: str) -> None:
    if under_results(path):
        sys.exit(f"error: a smoke run writes no results under bench/results/ ({path}): its files are the "
                 "figures the docs show; give --results a path elsewhere, or leave it out for a temporary file")


def is_smoke() -> bool:
    return os.environ.get(ENV) == "1"


def write_json(path: str, data, sort_keys: bool = False, newline: bool = False) -> None:
    """The results file, replaced whole (never half-written; a hard link to a committed file is
    not written through). In a smoke run, and in any process it started, a path under
    bench/results/ is refused here too, whatever chose it."""
    if is_smoke():
        refuse_committed(path)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path + ".tmp", "w") as f:
        json.dump(data, f, indent=2, sort_keys=sort_keys)
        if newline:
            f.write("\n")
    os.replace(path + ".tmp", path)


def every_nth_row(source: str, dest: str, rows: int) -> str:
    """A CSV of about ``rows`` rows, every Nth of ``source`` (its header kept, its spread of
    values too): the small input of a smoke run."""
    with open(source, newline="") as f:
        lines = list(csv.reader(f))
    header, body = lines[0], lines[1:]
    step = max(1, len(body) // rows)
    os.makedirs(os.path.dirname(os.path.abspath(dest)), exist_ok=True)
    with open(dest, "w", newline="") as f:
        csv.writer(f, lineterminator="\n").writerows([header] + body[::step][:rows])
    return dest


def taxi_rows(dest: str) -> str:
    """The smoke runs' CSV (ROWS taxi rows), written once."""
    if not os.path.isfile(dest):
        from tfxline.pipeline.data import source as data_source

        every_nth_row(data_source.default_data_path(), dest, ROWS)
    return dest
