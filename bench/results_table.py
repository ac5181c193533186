"""How the GPU machine's benches (gpu_bench.py, step_profile.py) print and keep their rows: one
table line per row as soon as it is measured, and the results file rewritten whole after each
row, so a run cut off at the GPU machine's per-command limit keeps every row it finished."""
from __future__ import annotations

import os
import platform

from bench import smoke


def record(rows: list, row: dict, results: str) -> None:
    """Rewrite the results file with every row so far, then print the row's line of the table."""
    rows.append(row)
    write_results(results, rows)  # first: a row on the screen is a row in the file
    print(table_row(row), flush=True)


def row_error(e: Exception) -> str:
    """A row that cannot run here (e.g. XLA without ptxas), in one line."""
    return f"{type(e).__name__}: {(str(e).splitlines() or [''])[0][:200]}"


def write_results(path: str, rows: list) -> None:
    """The results file with every row so far (replaced whole: never half-written)."""
    smoke.write_json(path, {"machine": machine(), "rows": rows})


def machine() -> dict:
    return {"cpus": os.cpu_count(), "platform": platform.platform()}


def variant(r) -> str:
    strategy = r.get("strategy", "default")
    return (r.get("source", "files") + ("" if r.get("metrics", True) else ", no metrics")
            + ("" if strategy == "default" else f", {strategy}"))


HEADER = (f"{'device':<7}{'model':<8}{'batch':>6} {'precision':<15}{'spe':>4} {'xla':<4}{'input':<30}"
          f"{'examples/s':>11}{'ms/step':>9}{'ops':>6}{'vars':>5}{'gpu%':>6}{'TFLOP/s':>8}")


def table_row(r) -> str:
    if "skipped" in r:
        return f"{r['skipped']}: skipped ({r['why']})"
    if "model" not in r:
        return f"{r['device']}: {r['error']}"
    head = (f"{r['device']:<7}{r['model']:<8}{r['batch']:>6} {r['precision']:<15}"
            f"{r['steps_per_execution']:>4} {'on' if r['xla'] else 'off':<4}{variant(r):<30}")
    if "error" in r:
        return head + r["error"]
    if r["model"] == "input":
        return (f"{r['device']:<7}{'input pipeline alone (batches from the cached TFRecords)':<69}"
                f"{r['examples_per_s']:>11}{r['ms_per_step']:>9}")
    ops = "-" if r.get("step_ops") is None else r["step_ops"]
    variables = "-" if r.get("variables") is None else r["variables"]
    return head + (f"{r['examples_per_s']:>11}{r['ms_per_step']:>9}{ops:>6}{variables:>5}"
                   f"{'-' if r['gpu_util_percent'] is None else r['gpu_util_percent']:>6}{r.get('tflops', '-'):>8}")
