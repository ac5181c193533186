"""bench/tables.py --family (issue #73): what a run records of ``model.family`` beside its score,
and the one results row per table that holds the run as init wrote it (``model.family: auto``)
and the same config run with ``--set model.family=network``, for the wall-time ratio.

The Trainer's ``training_run.json`` has ``family`` (configured, chosen, each candidate's
validation score, the margin, one standard error of the metric on those rows, each candidate's
training seconds) and ``trees`` (the forest's size and importances) when trees trained.

The goal (issue #73, "Done when"): with nothing edited after init, AUC or accuracy at least the
trees' − 0.005, RMSE at most 1.05 × the trees'; auto's wall time at most 1.5 × the network-only
run's on tables under 100,000 rows.
"""
from __future__ import annotations

import contextlib
import json
import os
import resource
import subprocess
import time
from typing import Any, Callable, Dict, Iterator, Optional

from tables_spec import FAMILY_TABLES

FAMILY_GOAL = ("model.family auto: AUC or accuracy >= trees - 0.005, RMSE <= 1.05 x trees; "
               "wall time <= 1.5 x the network-only run's under 100,000 rows")
NETWORK_SET = "model.family=network"
MAX_WALL_RATIO = 1.5


def meets(metric: str, model: float, trees: float) -> bool:
    """Issue #73's bar against scikit-learn's HistGradientBoosting with default settings."""
    return model <= 1.05 * trees if metric == "rmse" else model >= trees - 0.005


def family_of(training: Dict[str, Any]) -> Dict[str, Any]:
    """What score() adds from the Trainer's full record (``training``: training_run.json, {} when
    there is none): the family configured and kept, every candidate's validation score, and what
    each took to train."""
    family = training.get("family") or {}
    seconds = family.get("seconds") or {}
    return {
        "family_configured": family.get("configured") or "network",
        "family": family.get("chosen") or "network",
        "family_metric": family.get("metric"),
        "family_scores": family.get("scores"),   # validation: network, trees, average (auto only)
        "family_margin": family.get("margin"), "family_noise": family.get("noise"),
        "family_runner_up": family.get("runner_up"), "validation_rows": family.get("validation_rows"),
        "network_train_seconds": seconds.get("network"), "trees_train_seconds": seconds.get("trees"),
        "forest_trees": (training.get("trees") or {}).get("trees"),
    }


def row(auto: Optional[dict], network: Optional[dict]) -> Optional[dict]:
    """One table's results row: the auto run's score, the network-only run's under ``network``
    (its eval score on the same split, its wall time), and the ratio of the two wall times."""
    if auto is None:
        return None
    out = {k: v for k, v in auto.items() if k not in ("tuning", "tuned_values")}
    out["family_goal_met"] = meets(auto["metric"], auto["model"], auto["trees"])
    out["network"] = None if network is None else {
        k: network.get(k) for k in ("model", "ratio", "blessed", "pushed", "run_id", "run_seconds",
                                    "trainer_seconds", "epochs", "best_epoch", "components", "run_cpu_seconds")}
    walls = (auto.get("run_seconds"), (network or {}).get("run_seconds"))
    out["wall_ratio"] = round(walls[0] / walls[1], 2) if all(walls) else None
    out["cpu_ratio"] = ratio(auto.get("run_cpu_seconds"), (network or {}).get("run_cpu_seconds"))
    return out


def ratio(a: Optional[float], b: Optional[float]) -> Optional[float]:
    return round(a / b, 2) if a and b else None


RESOURCES_FILE = "run_resources.json"  # beside a table's config and run: the run command's wall and CPU seconds


@contextlib.contextmanager
def resources(folder: str) -> Iterator[None]:
    """Records the wall and CPU seconds (user + system, of the child processes the block waits
    for) of a ``tfxline run`` in ``folder``: on a machine shared with other work the CPU seconds
    move less than the wall time."""
    before, started = resource.getrusage(resource.RUSAGE_CHILDREN), time.monotonic()
    yield
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    with open(os.path.join(folder, RESOURCES_FILE), "w") as f:
        json.dump({"wall_seconds": round(time.monotonic() - started, 1), "cpu_seconds": round(cpu, 1),
                   "load_average": os.getloadavg()[0]}, f)


def cpu_seconds(folder: str) -> Optional[float]:
    path = os.path.join(folder, RESOURCES_FILE)
    if not os.path.isfile(path):
        return None
    with open(path) as f:
        return json.load(f).get("cpu_seconds")


def commit() -> Optional[str]:
    """The product's commit the runs measured: $TFXLINE_BENCH_COMMIT (a copy of a commit's tree,
    run where the checkout may move on), else git's HEAD (None without git)."""
    if os.environ.get("TFXLINE_BENCH_COMMIT"):
        return os.environ["TFXLINE_BENCH_COMMIT"]
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              check=True).stdout.strip() or None
    except (OSError, subprocess.CalledProcessError):
        return None


def write_wide(table: dict, csv_dir: str, rows: int = 5000) -> None:
    """A ``wide:N`` table's CSV (bench/wide.py's: N columns, ``rows`` rows), unless it is there."""
    path = os.path.join(csv_dir, f"{table['name']}.csv")
    if table["source"].startswith("wide:") and not os.path.isfile(path):
        from bench import wide

        os.makedirs(csv_dir, exist_ok=True)
        wide.make_table(path, rows, int(table["source"].partition(":")[2]))


def main(args, init_and_run: Callable, read_score: Callable, results_path: str) -> int:
    """bench/tables.py --family: each table as init wrote it, then with model.family=network
    (one after the other, so both see the machine alike); family.json."""
    from bench import smoke

    for table in [t for t in FAMILY_TABLES if not args.only or t["name"] in args.only]:
        init_and_run(table, args.csv, args.work, args.set, args.rerun, keep_score=args.keep_scores)
        init_and_run(table, args.csv, args.network_work, [*args.set, NETWORK_SET], args.rerun,
                     keep_score=args.keep_scores)
        for _ in range(args.timing_rounds):
            timing_round(os.path.join(args.work, table["name"]), args.set)
    rows = [r for r in (row(read_score(args.work, t["name"]), read_score(args.network_work, t["name"]))
                        for t in FAMILY_TABLES) if r]
    for r in rows:
        r["timing"] = timings(os.path.join(args.work, r["name"]))
    smoke.write_json(results_path, {"goal": FAMILY_GOAL, "commit": commit(), "machine": f"{os.cpu_count()} CPU cores",
                                    "tables": rows})
    for r in rows:
        print(f"{r['name']:<16}{r['metric']:<9}{r.get('family', '?'):<9}{r['model']:>11}{r['trees']:>11}"
              f"  {'ok' if r['family_goal_met'] else 'MISSES'}  network {(r['network'] or {}).get('model')}"
              f"  wall x{r['wall_ratio']}  blessed {r['blessed']}")
    print(f"results: {results_path}")
    return 0


TIMING_FILE = "timing.json"  # beside a table's config: the timing rounds' wall and CPU seconds


def timing_round(folder: str, sets) -> None:
    """One more pair of runs of the table's config, auto then network alone, each in a fresh output
    folder (removed after), timed (``resources``) and appended to ``folder``/timing.json: on a
    machine shared with other work, one pair's ratio is one draw of the noise."""
    import shutil
    import sys

    config, record = os.path.join(folder, "config", "config.yaml"), {}
    for kind, extra in (("auto", []), ("network", [NETWORK_SET])):
        out = os.path.join(folder, f"timing-{kind}")
        shutil.rmtree(out, ignore_errors=True)
        cmd = [os.path.join(os.path.dirname(sys.executable), "tfxline"), "run", "--config", config, "--output", out]
        with resources(folder):
            subprocess.run([*cmd, *(a for s in [*sets, *extra] for a in ("--set", s))], check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        with open(os.path.join(folder, RESOURCES_FILE)) as f:
            record[kind] = json.load(f)
        os.remove(os.path.join(folder, RESOURCES_FILE))
        shutil.rmtree(out, ignore_errors=True)
    rounds = timings(folder) + [record]
    with open(os.path.join(folder, TIMING_FILE), "w") as f:
        json.dump(rounds, f, indent=1)
    print(f"timing {os.path.basename(folder)}: wall {record['auto']['wall_seconds']} / "
          f"{record['network']['wall_seconds']} s, cpu {record['auto']['cpu_seconds']} / "
          f"{record['network']['cpu_seconds']} s", flush=True)


def timings(folder: str) -> list:
    path = os.path.join(folder, TIMING_FILE)
    if not os.path.isfile(path):
        return []
    with open(path) as f:
        return json.load(f)
