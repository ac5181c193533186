"""End-to-end benchmark: this project's pipeline vs TFX's own taxi example, side by side.

    .venv/bin/python bench/e2e.py [--rounds N] [--set section.key=value ...] [--results FILE]
    .venv/bin/python bench/e2e.py --smoke     # CI: 1,000 rows, a few training steps each side

In one invocation, on the same machine and the same taxi CSV (the one inside tfx):
  1. this project's pipeline (`tfxline run`, a fresh output root: nothing cached);
  2. TFX's `taxi_pipeline_native_keras.py`, unchanged, with TF_USE_LEGACY_KERAS=1, in a
     temporary HOME laid out as it expects ($HOME/taxi/data/simple, $HOME/taxi/<module>).
With --rounds N > 1 the two alternate, N times each, so noise on a shared machine hits both.

Prints each pipeline's wall time and the ratio, each component's duration (from the MLMD
execution records), and both models' AUC and accuracy on the same eval rows: the rows that
both pipelines' hash splits hold out (each pipeline's own eval split contains rows the
other trained on). Writes bench/results/e2e.json. A benchmark, not a test.

--smoke runs the same, once, on every 15th row of the CSV (1,000 rows), ours with a few training
steps (bench/smoke.py's SETTINGS) and a copy of the example with SMOKE_EXAMPLE_CHANGES (a few
steps, Beam in one process), the two side by side, and writes its JSON to a temporary file
(bench/smoke.py): it proves the bench runs; its times are no figures.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import glob
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time

os.environ["TF_USE_LEGACY_KERAS"] = "1"
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

from bench import smoke  # noqa: E402
from tfxline.pipeline.data import source as data_source  # noqa: E402
from tfxline.runs.summary import collect_run  # noqa: E402

RESULTS = os.path.join(HERE, "results", "e2e.json")
EXAMPLE_NAME = "chicago_taxi_native_keras"
# Lines of the example's script as it writes them, and the smoke run's: its Trainer's steps, and
# Beam in the process (its worker processes start for each Beam component: minutes on 2 busy cores).
SMOKE_EXAMPLE_CHANGES = {"TrainArgs(num_steps=1000)": "TrainArgs(num_steps=20)",
                         "EvalArgs(num_steps=150)": "EvalArgs(num_steps=2)",
                         "'--direct_running_mode=multi_processing'": "'--direct_running_mode=in_memory'"}


def tfx_example_dir() -> str:
    import tfx

    return os.path.join(os.path.dirname(tfx.__file__), "examples", "chicago_taxi_pipeline")


def timed(cmd, env, cwd, log_path) -> float:
    started = time.monotonic()
    with open(log_path, "w") as log:
        proc = subprocess.run(cmd, env=env, cwd=cwd, stdout=log, stderr=subprocess.STDOUT)
    if proc.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed (exit {proc.returncode}); see {log_path}")
    return time.monotonic() - started


def run_ours(work: str, overrides, data, code: str = "", label: str = "ours") -> dict:
    """``tfxline run`` on ``data`` (None: the config's, the taxi CSV inside tfx); ``code``: a
    checkout of another commit to run instead (--before), with this venv's packages."""
    out = os.path.join(work, label)
    if code:
        cmd = [sys.executable, "-c", "import sys, cli.main as m; m.entry() if hasattr(m, 'entry') else sys.exit(m.main())", "run", "--output", out]
    else:
        cmd = [os.path.join(os.path.dirname(sys.executable), "tfxline"), "run", "--output", out]
    cmd += ["--data", data] if data else []
    for o in overrides:
        cmd += ["--set", o]
    env = dict(os.environ, PYTHONPATH=code) if code else dict(os.environ)
    wall = timed(cmd, env, code or ROOT, os.path.join(work, f"{label}.log"))
    return {"wall_seconds": wall, "metadata": os.path.join(out, "metadata.sqlite"), "name": "taxi"}


def run_example(work: str, data, smoke_run: bool) -> dict:
    home = os.path.join(work, "home")
    taxi = os.path.join(home, "taxi")
    os.makedirs(os.path.join(taxi, "data", "simple"))
    shutil.copy(data or data_source.default_data_path(), os.path.join(taxi, "data", "simple", "data.csv"))
    shutil.copy(os.path.join(tfx_example_dir(), "taxi_utils_native_keras.py"), taxi)
    script = os.path.join(tfx_example_dir(), "taxi_pipeline_native_keras.py")
    if smoke_run:
        script = shortened_example(script, os.path.join(work, "taxi_pipeline_smoke.py"))
    # TFX's example leaves an sdist of TFX (~50 MB) in the temp dir per Beam component
    # (tfx.utils.dependency_utils, which this project skips: patches/tfx_packaging.py): here, in
    # the work root, removed with it.
    tmp = os.path.join(work, "tmp")
    os.makedirs(tmp, exist_ok=True)
    env = dict(os.environ, HOME=home, TF_USE_LEGACY_KERAS="1", TMPDIR=tmp)
    wall = timed([sys.executable, script], env, home, os.path.join(work, "example.log"))
    metadata = os.path.join(home, "tfx", "metadata", EXAMPLE_NAME, "metadata.db")
    return {"wall_seconds": wall, "metadata": metadata, "name": EXAMPLE_NAME}


def shortened_example(script: str, dest: str) -> str:
    """A copy of the example's script with SMOKE_EXAMPLE_CHANGES; each must be there once (a TFX
    release that changes them fails the smoke run here, not silently)."""
    with open(script) as f:
        text = f.read()
    for old, new in SMOKE_EXAMPLE_CHANGES.items():
        if text.count(old) != 1:
            sys.exit(f"error: {script} has {text.count(old)} '{old}', not one; update e2e.SMOKE_EXAMPLE_CHANGES")
        text = text.replace(old, new)
    with open(dest, "w") as f:
        f.write(text)
    return dest


def components(run: dict) -> dict:
    summary = collect_run(run["metadata"], run["name"])
    return summary, {c.node_id: round(c.seconds, 1) for c in summary.components}


def eval_rows(summary) -> dict:
    """The eval split's examples keyed by content (the two pipelines serialize the same
    row with the features in a different order, so bytes cannot be compared)."""
    import tensorflow as tf

    gen = next(c for c in summary.components if c.node_id == "CsvExampleGen")
    files = glob.glob(os.path.join(gen.outputs["examples"][0], "Split-eval", "*"))
    rows = {}
    for record in tf.data.TFRecordDataset(files, compression_type="GZIP"):
        example = tf.train.Example.FromString(record.numpy())
        key = tuple(sorted((k, v.SerializeToString()) for k, v in example.features.feature.items()))
        rows[key] = record.numpy()
    return rows


def score(model_dir: str, rows) -> dict:
    """AUC and accuracy of a serving_default(examples) model on raw rows (label: tips > 20%)."""
    import numpy as np
    import tensorflow as tf

    labels = []
    for raw in rows:
        ex = tf.train.Example.FromString(raw)
        f = ex.features.feature
        tips = f["tips"].float_list.value[0] if f["tips"].float_list.value else 0.0
        fare = f["fare"].float_list.value[0] if f["fare"].float_list.value else 0.0
        labels.append(float(tips > 0.2 * fare))
    serve = tf.saved_model.load(model_dir).signatures["serving_default"]
    out = serve(examples=tf.constant(rows))
    scores = np.asarray(next(iter(out.values()))).reshape(-1)
    auc = tf.keras.metrics.AUC(num_thresholds=1000)
    auc.update_state(labels, scores)
    return {"auc": round(float(auc.result()), 4),
            "accuracy": round(float(np.mean((scores > 0.5) == np.asarray(labels, bool))), 4)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE",
                        help="config override for this project's run (e.g. a lever under test)")
    parser.add_argument("--keep", action="store_true", help="keep the work directory")
    parser.add_argument("--before", metavar="REV",
                        help="also run this project at git commit REV in each round (a worktree, the same venv): "
                             "the before / after figures of a change, measured in the same rounds")
    smoke.add_arguments(parser, RESULTS)
    args = parser.parse_args()
    results_path = smoke.results_path(args, RESULTS)
    overrides = [*smoke.SETTINGS, *args.set] if args.smoke else args.set
    results = {"date": time.strftime("%Y-%m-%d"), "machine": f"{os.cpu_count()} CPU cores, "
               f"{platform.machine()}, no GPU", "overrides": overrides, "rounds": []}
    work_root = tempfile.mkdtemp(prefix="tfxline-bench-e2e-")
    data = None
    if args.smoke:
        data = smoke.taxi_rows(os.path.join(work_root, "taxi.csv"))
        results["smoke"] = True
    before_code = ""
    if args.before:
        before_code = os.path.join(work_root, "before-code")
        subprocess.run(["git", "-C", ROOT, "worktree", "add", "--detach", before_code, args.before], check=True,
                       stdout=subprocess.DEVNULL)
        results["before_commit"] = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", args.before],
                                                  check=True, capture_output=True, text=True).stdout.strip()
    for i in range(1 if args.smoke else args.rounds):
        work = os.path.join(work_root, f"round{i}")
        os.makedirs(work)
        if args.smoke:  # side by side: each pipeline keeps about one core busy
            with concurrent.futures.ThreadPoolExecutor(2) as pool:
                ours, example = pool.submit(run_ours, work, overrides, data), pool.submit(run_example, work, data, True)
                ours, example = ours.result(), example.result()
        else:
            before = run_ours(work, overrides, data, before_code, "before") if before_code else None
            ours, example = run_ours(work, overrides, data), run_example(work, data, False)
        s_ours, c_ours = components(ours)
        s_ex, c_ex = components(example)
        ours_eval, example_eval = eval_rows(s_ours), eval_rows(s_ex)
        shared = [ours_eval[k] for k in sorted(set(ours_eval) & set(example_eval))]
        example_model = glob.glob(os.path.join(s_ex.model_uri, "Format-Serving"))[0]
        results["rounds"].append({
            "ours": {"wall_seconds": round(ours["wall_seconds"], 1), "components": c_ours,
                     "own_eval": s_ours.metrics, "shared_eval": score(s_ours.model_uri + "/Format-Serving", shared)},
            "tfx_example": {"wall_seconds": round(example["wall_seconds"], 1), "components": c_ex,
                            "own_eval": s_ex.metrics, "shared_eval": score(example_model, shared)},
            "shared_eval_rows": len(shared),
            "ratio": round(ours["wall_seconds"] / example["wall_seconds"], 3),
        })
        if args.before and not args.smoke:
            results["rounds"][-1]["before"] = {"wall_seconds": round(before["wall_seconds"], 1),
                                               "components": components(before)[1]}
            results["rounds"][-1]["before_ratio"] = round(before["wall_seconds"] / example["wall_seconds"], 3)
        r = results["rounds"][-1]
        print(f"round {i + 1}: ours {r['ours']['wall_seconds']} s, TFX example "
              f"{r['tfx_example']['wall_seconds']} s, ratio {r['ratio']}", flush=True)
    ratios = [r["ratio"] for r in results["rounds"]]
    results["median_ratio"] = sorted(ratios)[len(ratios) // 2]
    if args.before and not args.smoke:
        before_ratios = sorted(r["before_ratio"] for r in results["rounds"])
        results["median_before_ratio"] = before_ratios[len(before_ratios) // 2]
    smoke.write_json(results_path, results)
    last = results["rounds"][-1]
    print(f"\n{'component':32s} {'ours':>8s} {'example':>8s}")
    for node in sorted(set(last["ours"]["components"]) | set(last["tfx_example"]["components"])):
        print(f"{node:32s} {last['ours']['components'].get(node, ''):>8} "
              f"{last['tfx_example']['components'].get(node, ''):>8}")
    print(f"\nshared eval rows: {last['shared_eval_rows']}")
    for who in ("ours", "tfx_example"):
        own = {k: round(v, 4) for k, v in last[who]['own_eval'].items() if k in ('auc', 'binary_accuracy', 'accuracy')}
        print(f"{who:12s} wall {last[who]['wall_seconds']:7.1f} s   shared eval {last[who]['shared_eval']}"
              f"   own eval {json.dumps(own)}")
    print(f"ratio ours/example (median of {len(ratios)}): {results['median_ratio']}  (goal <= 0.35)")
    if "median_before_ratio" in results:
        print(f"before ({results['before_commit']}): median ratio {results['median_before_ratio']}")
    if before_code:
        subprocess.run(["git", "-C", ROOT, "worktree", "remove", "--force", before_code], check=False)
    if not args.keep:
        shutil.rmtree(work_root, ignore_errors=True)
    print(f"results: {results_path}")


if __name__ == "__main__":
    main()
