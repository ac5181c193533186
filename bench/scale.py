"""Scale benchmark: the full pipeline on taxi-like CSVs of 100k and 1M rows (not a test).

    .venv/bin/python bench/scale.py [--rows 100000 1000000] [--epochs 2] [--set k=v ...] [--results FILE]
                                    [--runs-from FILE]
    .venv/bin/python bench/scale.py --smoke    # CI: one run of 1,000 rows, one epoch; a temporary results file

The CSVs are made from the real taxi rows (the CSV inside tfx), resampled with replacement
and a small deterministic jitter on the numeric columns, so the distributions stay
realistic; nothing is downloaded. Training runs in epochs mode, so its length follows the
data (steps = rows x epochs / batch), never a fixed step budget.

For each size it prints the wall time per component (from MLMD), the peak resident memory
of the whole process tree (sampled every 0.5 s; also the run's own process and its Beam worker
processes apart, and each component's peak over its window in MLMD), and rows/s; then
time(largest) / time(next smaller) against the ratio of rows (with two sizes or more). Writes
bench/results/scale.json; --runs-from adds an earlier invocation's runs (a 10M-row run alone).
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from typing import Dict, List, Tuple

import numpy as np
import psutil

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

from bench import smoke  # noqa: E402
from tfxline.pipeline.data import source as data_source  # noqa: E402
from tfxline.runs.summary import collect_run  # noqa: E402
from tfxline.trainer.settings import TRAINING_RUN_FILE  # noqa: E402

# Numeric columns and their jitter: relative for amounts, absolute for coordinates.
RELATIVE = {"fare": 0.03, "tips": 0.03, "trip_miles": 0.03, "trip_seconds": 0.03}
ABSOLUTE = {"pickup_latitude": 2e-4, "pickup_longitude": 2e-4, "dropoff_latitude": 2e-4,
            "dropoff_longitude": 2e-4, "trip_start_timestamp": 600}
INTEGER = {"trip_seconds", "trip_start_timestamp"}
RESULTS = os.path.join(HERE, "results", "scale.json")
SMOKE_ROWS, SMOKE_EPOCHS = 1000, 1


def make_csv(path: str, rows: int, seed: int = 0) -> None:
    with open(data_source.default_data_path(), newline="") as f:
        reader = csv.DictReader(f)
        fields, source = reader.fieldnames, list(reader)
    rng = np.random.default_rng(seed)
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=fields)
        writer.writeheader()
        for start in range(0, rows, 50_000):
            n = min(50_000, rows - start)
            picks = rng.integers(0, len(source), n)
            noise = rng.standard_normal((n, len(RELATIVE) + len(ABSOLUTE)))
            for i, idx in enumerate(picks):
                row = dict(source[idx])
                for j, (col, scale) in enumerate(list(RELATIVE.items()) + list(ABSOLUTE.items())):
                    if row[col] == "":
                        continue  # missing stays missing
                    value = float(row[col])
                    value = (max(0.0, value * (1 + scale * noise[i, j])) if col in RELATIVE
                             else value + scale * noise[i, j])
                    row[col] = str(int(round(value))) if col in INTEGER else f"{value:.6g}"
                writer.writerow(row)


class PeakRSS(threading.Thread):
    """Peak resident memory of a process and all its descendants; every sample kept (wall
    clock, the whole tree), so each component's own peak can be read from its window."""

    def __init__(self, pid: int):
        super().__init__(daemon=True)
        self.root, self.peak, self.running = psutil.Process(pid), 0, True
        self.peak_main = self.peak_workers = 0  # the run's own process; its children (Beam workers)
        self.samples: List[Tuple[float, int]] = []

    def run(self):
        while self.running:
            try:
                rss = []
                for p in [self.root] + self.root.children(recursive=True):
                    try:
                        rss.append(p.memory_info().rss)
                    except psutil.Error:
                        rss.append(0)
                self.peak = max(self.peak, sum(rss))
                self.samples.append((time.time(), sum(rss)))
                self.peak_main = max(self.peak_main, rss[0])
                self.peak_workers = max(self.peak_workers, sum(rss[1:]))
            except psutil.Error:
                return
            time.sleep(0.5)


def component_peaks(metadata_path: str, summary, samples) -> Dict[str, float]:
    """Each component's peak (GB, the whole process tree) over its execution's window in MLMD
    (a component shorter than the 0.5 s sampling may hold no sample: left out)."""
    from tfxline.runs.store import open_store

    nodes = {c.execution_id: c.node_id for c in summary.components}
    peaks = {}
    for execution in open_store(metadata_path).get_executions_by_id(list(nodes)):
        start, end = execution.create_time_since_epoch / 1000, execution.last_update_time_since_epoch / 1000
        inside = [rss for t, rss in samples if start <= t <= end]
        if inside:
            peaks[nodes[execution.id]] = round(max(inside) / 2**30, 2)
    return peaks


def tfxline_command(*args: str) -> List[str]:
    """This venv's ``tfxline`` with ``args``."""
    return [os.path.join(os.path.dirname(sys.executable), "tfxline"), *args]


def measured(cmd: List[str], log_path: str) -> Tuple[int, float, PeakRSS]:
    """Run ``cmd`` (its output to ``log_path``): (exit code, wall seconds, its process tree's memory)."""
    started = time.monotonic()
    with open(log_path, "w") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT)
        sampler = PeakRSS(proc.pid)
        sampler.start()
        code = proc.wait()
        sampler.running = False
    return code, time.monotonic() - started, sampler


def run_pipeline(data: str, out: str, overrides, log_path: str):
    cmd = tfxline_command("run", "--data", data, "--output", out, *[a for o in overrides for a in ("--set", o)])
    code, wall, sampler = measured(cmd, log_path)
    if code != 0:
        sys.exit(f"pipeline on {data} failed (exit {code}); see {log_path}")
    return wall, sampler


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE")
    parser.add_argument("--work", help="work directory (default: a new temporary one)")
    parser.add_argument("--runs-from", metavar="FILE",
                        help="a results file of an earlier invocation on the same code and overrides: its runs join "
                             "this one's (a 10M-row run takes most of an hour; measure it alone, then the rest)")
    smoke.add_arguments(parser, RESULTS)
    args = parser.parse_args()
    results_path = smoke.results_path(args, RESULTS)
    if args.smoke:
        args.rows, args.epochs = [SMOKE_ROWS], SMOKE_EPOCHS
    work = args.work or tempfile.mkdtemp(prefix="tfxline-bench-scale-")
    os.makedirs(work, exist_ok=True)
    overrides = ["training.mode=epochs", f"training.epochs={args.epochs}",
                 "training.early_stopping_patience=0", *args.set]
    results = {"date": time.strftime("%Y-%m-%d"), "machine": f"{os.cpu_count()} CPU cores, "
               f"{platform.machine()}, no GPU", "overrides": overrides, "runs": []}
    if args.smoke:
        results["smoke"] = True
    for rows in args.rows:
        data = os.path.join(work, f"taxi_{rows}.csv")
        if not os.path.exists(data):
            started = time.monotonic()
            make_csv(data, rows)
            print(f"generated {rows} rows in {time.monotonic() - started:.0f} s: {data}", flush=True)
        out = os.path.join(work, f"out_{rows}")
        shutil.rmtree(out, ignore_errors=True)  # a --work reused: a fresh output root, nothing served from cache
        wall, rss = run_pipeline(data, out, overrides, os.path.join(work, f"run_{rows}.log"))
        summary = collect_run(os.path.join(out, "metadata.sqlite"), "taxi")
        with open(os.path.join(summary.model_uri, "..", "..", "model_run",
                               os.path.basename(summary.model_uri), TRAINING_RUN_FILE)) as f:
            training = json.load(f)
        run = {"rows": rows, "wall_seconds": round(wall, 1), "peak_rss_gb": round(rss.peak / 2**30, 2),
               "peak_rss_gb_run_process": round(rss.peak_main / 2**30, 2),
               "peak_rss_gb_beam_workers": round(rss.peak_workers / 2**30, 2),
               "rows_per_second": round(rows / wall), "train_steps": training["steps"],
               "epochs": training["epochs"],
               "components": {c.node_id: round(c.seconds, 1) for c in summary.components},
               "peak_rss_gb_by_component": component_peaks(os.path.join(out, "metadata.sqlite"), summary,
                                                           rss.samples),
               "auc": summary.metrics.get("auc")}
        results["runs"].append(run)
        print(json.dumps(run), flush=True)
    if args.runs_from:
        with open(args.runs_from) as f:
            earlier = json.load(f)
        if earlier["overrides"] != overrides:
            sys.exit(f"error: {args.runs_from} was measured with {earlier['overrides']}, not {overrides}")
        results["runs"] = sorted(earlier["runs"] + results["runs"], key=lambda r: r["rows"])
    if len(results["runs"]) > 1:  # the largest size against the next smaller one (10M vs 1M)
        small, large = results["runs"][-2], results["runs"][-1]
        results["time_ratio"] = round(large["wall_seconds"] / small["wall_seconds"], 2)
        results["rows_ratio"] = large["rows"] / small["rows"]
        print(f"time({large['rows']}) / time({small['rows']}) = {results['time_ratio']} "
              f"(rows x{results['rows_ratio']:.0f}; goal <= 11 for 10x)")
    smoke.write_json(results_path, results)
    if args.smoke and not args.work:  # a smoke run's CSV and outputs are worth nothing after it
        shutil.rmtree(work, ignore_errors=True)
        print(f"results: {results_path}")
    else:
        print(f"results: {results_path}; work dir: {work} (--work {work} reuses its CSVs)")


if __name__ == "__main__":
    main()
