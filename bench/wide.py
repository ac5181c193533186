"""Wide-table benchmark: `init` + `run` on synthetic tables of 5,000 rows and 10 to 1,000 columns
(not a test).

    .venv/bin/python bench/wide.py [--columns 10 100 300 1000] [--rows 5000] [--taxi] [--table CSV:LABEL]
                                   [--results FILE]
    .venv/bin/python bench/wide.py --smoke    # CI: 30 columns x 500 rows, a temporary results file

Each table: a third text columns (3 to 40 values each), a third small-integer codes (2 to 10
values), a third floats; a binary label from a few of them (so a model has something to learn;
HistGradientBoosting's holdout AUC is printed beside the pipeline's). Nothing is downloaded.

For each width it runs `tfxline init` (timed) and then `tfxline run` as a user would, and prints
the wall time per component (from MLMD), the peak resident memory of the whole process tree and
each component's peak over its window (bench/scale.py measures the same), the evaluation AUC,
and whether the model was pushed. --taxi adds the default taxi run in the same invocation, the
yardstick the wide runs are held to. Writes bench/results/wide.json.
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from typing import Dict, List

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

from bench import smoke  # noqa: E402
from bench.scale import component_peaks, measured, tfxline_command  # noqa: E402
from tfxline.runs.summary import collect_run  # noqa: E402

RESULTS = os.path.join(HERE, "results", "wide.json")
SMOKE_COLUMNS, SMOKE_ROWS = [30], 500
LABEL = "label"


def make_table(path: str, rows: int, columns: int, seed: int = 0) -> None:
    """``columns`` features (text, small-integer codes, floats in turn) and a binary label (30 %
    positive) from the first column of each kind (a fixed hash of the text, the code, the float's
    log) plus noise: the trees reach an AUC near 0.70 on it, and every other column is noise a
    model must not overfit."""
    rng = np.random.default_rng(seed)
    names, data = [], []
    for i in range(columns):
        kind = ("text", "code", "num")[i % 3]
        names.append(f"{kind}_{i // 3:03d}")
        if kind == "text":
            levels = int(rng.integers(3, 41))
            words = np.array([f"w{i}v{j}" for j in range(levels)])
            col = words[rng.zipf(1.6, rows) % levels]
        elif kind == "code":
            col = rng.integers(1, int(rng.integers(2, 11)) + 1, rows).astype(str)
        else:
            col = np.char.mod("%.4g", rng.lognormal(rng.normal(), 0.8, rows) * 10.0 ** rng.integers(-1, 3))
        blank = rng.random(rows) < 0.03  # a few missing values in every column
        col = np.where(blank, "", col)
        data.append(col)
    score = rng.normal(0, 1.0, rows)
    signals = [np.array([hash_unit(v) for v in data[0]]),
               np.array([float(v) if v else 0.0 for v in data[1]]) / 5,
               np.log1p(np.array([float(v) if v else 0.0 for v in data[2]])) / 3]
    for values in signals:
        score += 1.2 * (values - values.mean())
    label = (score > np.quantile(score, 0.7)).astype(int)
    with open(path, "w", newline="") as f:
        writer = csv.writer(f, lineterminator="\n")
        writer.writerow(names + [LABEL])
        for r in range(rows):
            writer.writerow([c[r] for c in data] + [label[r]])


def hash_unit(value: str) -> float:
    """A value's fixed place in [0, 1) (not Python's salted hash)."""
    return (sum(ord(c) * 31 ** k for k, c in enumerate(value)) % 1000) / 1000


def columns_of(path: str) -> int:
    with open(path, newline="") as f:
        return len(next(csv.reader(f)))


def rows_of(path: str) -> int:
    with open(path, newline="") as f:
        return sum(1 for _ in f) - 1


def trees_auc(path: str, label: str = LABEL) -> float:
    """HistGradientBoosting's AUC on a random 20 % holdout of the same rows (the yardstick); the
    positive class is the rarer one."""
    import pandas as pd
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.metrics import roc_auc_score
    from sklearn.model_selection import train_test_split

    frame = pd.read_csv(path, keep_default_na=True)
    y = frame.pop(label)
    y = (y == y.value_counts().index[-1]).astype(int)
    for name in frame.columns:
        if frame[name].dtype == object or name.startswith("code"):
            frame[name] = frame[name].astype("category")
    x_train, x_test, y_train, y_test = train_test_split(frame, y, test_size=0.2, random_state=0)
    model = HistGradientBoostingClassifier(categorical_features="from_dtype", random_state=0)
    model.fit(x_train, y_train)
    return round(float(roc_auc_score(y_test, model.predict_proba(x_test)[:, 1])), 4)


def one_run(work: str, name: str, run_args: List[str], init_args: List[str] = None) -> Dict:
    out = os.path.join(work, f"out_{name}")
    shutil.rmtree(out, ignore_errors=True)
    result: Dict = {"table": name}
    if init_args is not None:
        project = os.path.join(work, f"project_{name}")
        shutil.rmtree(project, ignore_errors=True)
        code, wall, _ = measured(tfxline_command("init", *init_args, "--dir", project), os.path.join(work, f"init_{name}.log"))
        if code != 0:
            sys.exit(f"init of {name} failed (exit {code}); see {work}/init_{name}.log")
        result["init_seconds"] = round(wall, 1)
        run_args = ["--config", os.path.join(project, "config.yaml"), *run_args]
    log = os.path.join(work, f"run_{name}.log")
    code, wall, rss = measured(tfxline_command("run", *run_args, "--output", out), log)
    result.update({"exit": code, "wall_seconds": round(wall, 1), "peak_rss_gb": round(rss.peak / 2**30, 2)})
    metadata = os.path.join(out, "metadata.sqlite")
    if os.path.exists(metadata):
        summary = collect_run(metadata, summary_pipeline(metadata))
        result.update({"pushed": bool(summary.pushed), "auc": summary.metrics.get("auc"),
                       "components": {c.node_id: round(c.seconds, 1) for c in summary.components},
                       "peak_rss_gb_by_component": component_peaks(metadata, summary, rss.samples)})
    return result


def summary_pipeline(metadata: str) -> str:
    from tfxline.runs.store import open_store

    contexts = open_store(metadata).get_contexts_by_type("pipeline")
    return contexts[0].name


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--columns", type=int, nargs="*", default=[10, 100, 300, 1000])
    parser.add_argument("--rows", type=int, default=5000)
    parser.add_argument("--taxi", action="store_true", help="the default taxi run too, in this invocation")
    parser.add_argument("--table", action="append", default=[], metavar="CSV:LABEL",
                        help="a table of your own too (a binary label), e.g. ISLR's Caravan exported as CSV")
    parser.add_argument("--work", help="work directory (default: a new temporary one)")
    smoke.add_arguments(parser, RESULTS)
    args = parser.parse_args()
    results_path = smoke.results_path(args, RESULTS)
    if args.smoke:
        args.columns, args.rows = SMOKE_COLUMNS, SMOKE_ROWS
    work = args.work or tempfile.mkdtemp(prefix="tfxline-bench-wide-")
    os.makedirs(work, exist_ok=True)
    results = {"date": time.strftime("%Y-%m-%d"), "machine": f"{os.cpu_count()} CPU cores, "
               f"{platform.machine()}, no GPU", "rows": args.rows, "runs": []}
    if args.smoke:
        results["smoke"] = True
    # a smoke run: two passes over the data, gates that push whatever it scores
    settings = ["training.epochs=2", *smoke.PUSHED] if args.smoke else []
    set_args = [a for s in settings for a in ("--set", s)]
    if args.taxi:
        run = one_run(work, "taxi", [a for s in (smoke.SETTINGS + smoke.PUSHED if args.smoke else [])
                                     for a in ("--set", s)])
        results["taxi"] = run
        print(json.dumps(run), flush=True)
    def table_run(name: str, data: str, label: str, **facts) -> Dict:
        """init + run on one table, beside the trees' AUC (and the taxi run's wall, when measured)."""
        run = one_run(work, name, set_args, ["--data", data, "--label", label])
        run.update(facts, trees_auc=trees_auc(data, label))
        if "taxi" in results:
            run["wall_vs_taxi"] = round(run["wall_seconds"] / results["taxi"]["wall_seconds"], 2)
        print(json.dumps(run), flush=True)
        return run

    for columns in args.columns:
        data = os.path.join(work, f"wide_{columns}.csv")
        if not os.path.exists(data):
            make_table(data, args.rows, columns)
        results["runs"].append(table_run(f"wide_{columns}", data, LABEL, columns=columns))
    for table in args.table:
        path, label = table.rsplit(":", 1)
        name = os.path.splitext(os.path.basename(path))[0]
        results.setdefault("tables", []).append(
            table_run(name, path, label, columns=columns_of(path) - 1, rows=rows_of(path)))
    smoke.write_json(results_path, results)
    failed = [r["table"] for r in results["runs"] + results.get("tables", []) if r["exit"] != 0]
    print(f"results: {results_path}; work dir: {work}")
    if failed:
        sys.exit(f"error: the run of {', '.join(failed)} failed; see its run_*.log in {work}")


if __name__ == "__main__":
    main()
