"""A first run on a photo folder against the full 40-pass run (issue #72, item 9; not a test).

    .venv/bin/python bench/first_run.py [--images 5000] [--side 50] [--budgets 0 10 5] [--work DIR]

Builds a folder of ``--images`` Fashion-MNIST training images (Debian's dataset-fashion-mnist, ten
kinds of clothing), each scaled to ``--side`` px and saved as JPEG in a sub-folder per class, and a
CSV of 1,000 of its test images. For each budget, `tfxline init --data FOLDER` and `tfxline run`
with the config as init wrote it but ``training.time_budget_minutes`` set to the budget (0: no
budget, the 40 passes init plans; init writes 10), then `tfxline predict` on the held-out CSV.
Prints (and writes to bench/results/first_run.json, rendered in docs/performance.md) the run's wall time, the passes the Trainer ran, its training minutes (training_run.json),
the eval accuracy of the run's summary and the held-out accuracy of `predict`. A budget smaller than
init's stands in for a slower machine (5 minutes here: about the passes 10 minutes hold on the
2-core AMD machine, 35 s a pass). The goal: the default first run ends within 15 minutes, its
accuracy within 0.02 of the 40-pass run's.
"""
from __future__ import annotations

import argparse
import csv
import glob
import json
import os
import platform
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from bench.images import CLASSES, fashion  # noqa: E402

TFXLINE = os.path.join(os.path.dirname(sys.executable), "tfxline")
RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "first_run.json")


def write_photos(work: str, count: int, side: int) -> str:
    """The photo folder (work/photos) and the held-out CSV (work/holdout.csv, image and kind)."""
    import numpy as np
    from PIL import Image

    images, labels = fashion("train")
    held, held_labels = fashion("t10k")
    chosen = np.random.default_rng(0).choice(len(images), count, replace=False)

    def save(pixels, path):
        Image.fromarray(pixels).resize((side, side), Image.BILINEAR).convert("RGB").save(path, quality=90)

    for i in chosen:
        folder = os.path.join(work, "photos", CLASSES[labels[i]])
        os.makedirs(folder, exist_ok=True)
        save(images[i], os.path.join(folder, f"{i}.jpg"))
    os.makedirs(os.path.join(work, "holdout"), exist_ok=True)
    with open(os.path.join(work, "holdout.csv"), "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["image", "kind"])
        for j in range(1000):
            path = os.path.join(work, "holdout", f"{j}.jpg")
            save(held[j], path)
            writer.writerow([path, CLASSES[held_labels[j]]])
    return os.path.join(work, "photos")


def tfxline(*args: str) -> subprocess.CompletedProcess:
    done = subprocess.run([TFXLINE, *args], capture_output=True, text=True)
    if done.returncode:
        sys.exit(f"error: tfxline {args[0]} exited {done.returncode}: {done.stderr[-2000:]}")
    return done


def one_run(work: str, photos: str, budget: float) -> dict:
    project = os.path.join(work, f"budget-{budget:g}")
    tfxline("init", "--data", photos, "--dir", project)
    config = os.path.join(project, "config.yaml")
    started = time.monotonic()
    run = tfxline("run", "--config", config, "--set", f"training.time_budget_minutes={budget:g}")
    wall = time.monotonic() - started
    eval_line = next(x for x in run.stdout.splitlines() if x.strip().startswith("eval (overall):"))
    runs = sorted(glob.glob(os.path.join(project, "output", "pipeline_root", "Trainer", "model_run", "*",
                                         "training_run.json")), key=os.path.getmtime)
    info = json.load(open(runs[-1]))
    record = {"budget_minutes": budget, "run_wall_s": round(wall, 1), "passes": info["epochs"],
              "planned_passes": info["max_epochs"], "best_pass": info["best_epoch"], "train_minutes": round(info["train_seconds"] / 60, 1),
              "eval_accuracy": float(eval_line.split("accuracy ", 1)[1].split(",")[0]),
              "pushed": "pushed to: " in run.stdout, "holdout_accuracy": None}
    if not record["pushed"]:  # its gate refused it: nothing to predict with
        return record
    predictions = os.path.join(project, "holdout_predictions.csv")
    tfxline("predict", "--config", config, "--input", os.path.join(work, "holdout.csv"), "--predictions", predictions)
    truth = {r["image"]: r["kind"] for r in csv.DictReader(open(os.path.join(work, "holdout.csv")))}
    rows = list(csv.DictReader(open(predictions)))
    record["holdout_accuracy"] = round(sum(truth[r["image"]] == r["predicted_class"] for r in rows) / len(rows), 4)
    return record


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--images", type=int, default=5000)
    parser.add_argument("--side", type=int, default=50)
    parser.add_argument("--budgets", type=float, nargs="+", default=[0, 10, 5])
    parser.add_argument("--work", default=None)
    parser.add_argument("--results", default=RESULTS, help="the results file (tools/bench_tables.py renders it)")
    args = parser.parse_args()
    work = args.work or tempfile.mkdtemp(prefix="tfxline-first-run-")
    photos = write_photos(work, args.images, args.side)
    print("| time budget (min) | run wall | passes | training | eval accuracy | held-out accuracy |\n"
          "|---|---|---|---|---|---|")
    runs = []
    for budget in args.budgets:
        r = one_run(work, photos, budget)
        runs.append(r)
        print(f"| {budget:g} | {r['run_wall_s'] / 60:.1f} min | {r['passes']} of {r['planned_passes']} | "
              f"{r['train_minutes']:g} min | {r['eval_accuracy']:.4f} | "
              f"{'not pushed' if r['holdout_accuracy'] is None else format(r['holdout_accuracy'], '.4f')} |", flush=True)


    with open(args.results, "w") as f:
        json.dump({"machine": f"{os.cpu_count()} CPU cores, {platform.machine()}, no GPU",
                   "protocol": f"{args.images} Fashion-MNIST training images at {args.side} px JPEG in ten class "
                               "folders; init, run with training.time_budget_minutes per row, predict on 1,000 test "
                               "images (bench/first_run.py)", "runs": runs}, f, indent=2)
    print(f"wrote {args.results}")


if __name__ == "__main__":
    main()
