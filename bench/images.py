"""Image benchmark (not a test): a photo folder through `init` + `run` + `predict`, scored against
gradient-boosted trees, and the image Trainer's speed on this machine's CPU.

    .venv/bin/python bench/images.py [--images 3000] [--held 1000] [--results FILE]
    .venv/bin/python bench/images.py --smoke    # CI: 300 of scikit-learn's digits, a temporary results file

Quality: Fashion-MNIST (Debian's dataset-fashion-mnist: ten kinds of clothing, 28x28 grayscale)
written as a folder a user would have: one sub-folder per class, JPEG and PNG files of sizes 28
to 56 pixels, grayscale and RGB, a stray text file and a truncated JPEG. `tfxline init --data
FOLDER` then `tfxline run` as the docs say, then `tfxline predict` on a CSV of held-out images
(the dataset's test set). The yardstick: scikit-learn's HistGradientBoosting on the same images'
28x28 grayscale pixels, trained on every image of the folder, scored on the same held-out images.

Speed: images/s of the input pipeline alone (decode, resize, crop augmentation: transforms/images.py
in tf.data, on the folder's files), and of the image model's training step on batches held in
memory (the device), float32, mixed_bfloat16 and XLA, for small_cnn at the size init chose and for
mobilenet_v2 at 96 px (its XLA row with --xla-backbones: on this CPU the compile alone took minutes,
and the step ran at 7 images/s under load). The Trainer's own figure from the run (training_run.json) beside them.
Writes bench/results/images.json (docs/performance.md renders it).
"""
from __future__ import annotations

import argparse
import csv
import glob
import gzip
import io
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from typing import Dict, List, Tuple

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
os.environ["TF_USE_LEGACY_KERAS"] = "1"  # as the tfxline command (trainer/keras_compat.py)

from bench import smoke  # noqa: E402
from bench.scale import measured, tfxline_command  # noqa: E402

RESULTS = os.path.join(HERE, "results", "images.json")
FASHION = "/usr/share/datasets/fashion-mnist"
CLASSES = ("tshirt", "trouser", "pullover", "dress", "coat", "sandal", "shirt", "sneaker", "bag", "boot")


def fashion(split: str) -> Tuple[np.ndarray, np.ndarray]:
    """(images [n, 28, 28] uint8, labels [n]) of Fashion-MNIST's train or t10k set (IDX files)."""
    prefix = "train" if split == "train" else "t10k"
    try:
        with gzip.open(os.path.join(FASHION, f"{prefix}-images-idx3-ubyte.gz")) as f:
            images = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 28, 28)
        with gzip.open(os.path.join(FASHION, f"{prefix}-labels-idx1-ubyte.gz")) as f:
            labels = np.frombuffer(f.read(), np.uint8, offset=8)
    except FileNotFoundError:
        sys.exit(f"error: Fashion-MNIST is not in {FASHION}; apt-get install dataset-fashion-mnist (or --smoke)")
    return images, labels


def digits(start: int, count: int) -> Tuple[np.ndarray, np.ndarray]:
    """scikit-learn's digits (the smoke run's data), 8x8 scaled to 0-255."""
    from sklearn.datasets import load_digits

    d = load_digits()
    return (d.images[start:start + count] * (255 / 16)).astype(np.uint8), d.target[start:start + count]


def write_images(root: str, images: np.ndarray, labels: np.ndarray, names, seed: int) -> List[Tuple[str, str]]:
    """Each image to root/<class>/<n>.png|jpg, a side from 28 to 56, every third JPEG, every other RGB;
    returns (path relative to root's parent, class)."""
    from PIL import Image

    rng = np.random.default_rng(seed)
    written = []
    for i, (pixels, label) in enumerate(zip(images, labels)):
        folder = os.path.join(root, names[int(label)])
        os.makedirs(folder, exist_ok=True)
        side = int(rng.integers(28, 57))
        image = Image.fromarray(pixels, mode="L").resize((side, side), Image.BILINEAR)
        if i % 2:
            image = image.convert("RGB")
        jpeg = i % 3 == 0
        path = os.path.join(folder, f"{i:05d}.{'jpg' if jpeg else 'png'}")
        image.save(path, format="JPEG" if jpeg else "PNG", **({"quality": 90} if jpeg else {}))
        written.append((os.path.relpath(path, os.path.dirname(root)), names[int(label)]))
    return written


def add_strays(root: str, first_class: str) -> None:
    from PIL import Image

    with open(os.path.join(root, first_class, "notes.txt"), "w") as f:
        f.write("photographed on the shop floor\n")
    buffer = io.BytesIO()
    Image.fromarray(np.full((40, 40, 3), 90, np.uint8)).save(buffer, format="JPEG")
    with open(os.path.join(root, first_class, "truncated.jpg"), "wb") as f:
        f.write(buffer.getvalue()[: len(buffer.getvalue()) // 2])


def trees_accuracy(train: np.ndarray, train_y: np.ndarray, held: np.ndarray, held_y: np.ndarray) -> float:
    from sklearn.ensemble import HistGradientBoostingClassifier

    model = HistGradientBoostingClassifier(random_state=0, max_iter=100 if len(train) > 500 else 30)
    model.fit(train.reshape(len(train), -1), train_y)
    return round(float((model.predict(held.reshape(len(held), -1)) == held_y).mean()), 4)


def quality(work: str, images: np.ndarray, labels: np.ndarray, held: np.ndarray, held_y: np.ndarray,
            names, smoke_run: bool) -> Dict:
    folder, held_dir = os.path.join(work, "photos"), os.path.join(work, "held")
    shutil.rmtree(folder, ignore_errors=True)
    shutil.rmtree(held_dir, ignore_errors=True)
    write_images(folder, images, labels, names, seed=0)
    add_strays(folder, names[int(labels[0])])
    rows = write_images(held_dir, held, held_y, names, seed=1)
    held_csv = os.path.join(work, "held.csv")
    with open(held_csv, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["image", "label"])
        writer.writerows(rows)
    project, out = os.path.join(work, "project"), os.path.join(work, "out")
    shutil.rmtree(project, ignore_errors=True)
    shutil.rmtree(out, ignore_errors=True)
    code, init_wall, _ = measured(tfxline_command("init", "--data", folder, "--dir", project),
                                  os.path.join(work, "init.log"))
    if code:
        sys.exit(f"init failed (exit {code}); see {work}/init.log")
    config = os.path.join(project, "config.yaml")
    pushed = [*smoke.PUSHED, "evaluation.min_accuracy_lift=-1"]  # a smoke run's two passes are pushed whatever they score
    extra = [a for s in (["training.epochs=2", *pushed] if smoke_run else []) for a in ("--set", s)]
    code, run_wall, rss = measured(tfxline_command("run", "--config", config, "--output", out, *extra),
                                   os.path.join(work, "run.log"))
    predictions = os.path.join(work, "predictions.csv")
    pcode, predict_wall, _ = measured(tfxline_command("predict", "--config", config, "--output", out, "--input",
                                                      held_csv, "--predictions", predictions),
                                      os.path.join(work, "predict.log"))
    got = list(csv.DictReader(open(predictions))) if pcode == 0 else []
    trained = json.load(open(sorted(glob.glob(os.path.join(out, "pipeline_root", "Trainer", "model_run", "*",
                                                           "training_run.json")))[-1]))
    with open(config) as f:
        size = int(next(line for line in f if "transform: image" in line).split("size:")[1].split(",")[0])
    return {"images": len(images), "held_out": len(held), "classes": len(set(int(y) for y in labels)),
            "image_size": size, "exit": code, "pushed": "pushed to: " in open(os.path.join(work, "run.log")).read(),
            "init_seconds": round(init_wall, 1), "run_seconds": round(run_wall, 1),
            "predict_seconds": round(predict_wall, 1), "peak_rss_gb": round(rss.peak / 2**30, 2),
            "accuracy": round(float(np.mean([r["predicted_class"] == r["label"] for r in got])), 4) if got else None,
            "trees_accuracy": trees_accuracy(images, labels, held, held_y),
            "trainer_images_per_second": trained["examples_per_second"], "epochs": trained["epochs"],
            "train_seconds": trained["train_seconds"]}, folder


def input_rate(folder: str, size: int, batch: int = 64, batches: int = 40) -> float:
    """Images/s of decode + resize + crop augmentation in tf.data (AUTOTUNE), on the folder's files."""
    import tensorflow as tf

    from tfxline.transforms import images

    contents = [open(p, "rb").read() for p in sorted(glob.glob(os.path.join(folder, "*", "*")))
                if images.is_image_name(p) and "truncated" not in p]
    ds = (tf.data.Dataset.from_tensor_slices(contents).repeat().batch(batch)
          .map(lambda b: images.decode_batch(b, size, "crop"), num_parallel_calls=tf.data.AUTOTUNE)
          .prefetch(tf.data.AUTOTUNE))
    it = iter(ds)
    for _ in range(5):
        next(it)
    start = time.perf_counter()
    for _ in range(batches):
        next(it)
    return round(batches * batch / (time.perf_counter() - start), 1)


def step_rate(backbone: str, size: int, precision: str, xla: bool, batch: int = 64, steps: int = 20) -> float:
    """Images/s of the image model's training step on one batch held in memory."""
    import tensorflow as tf

    from tfxline.trainer import images as trainer_images
    from tfxline.trainer.keras_compat import keras
    from tfxline.trainer.model import Head
    from tfxline.trainer.precision import precision_policy
    from tfxline.transforms import features as F

    k = keras()
    k.backend.clear_session()
    spec = F.FeatureSpec.from_dict({"label": {"name": "label", "transform": "class_vocabulary"},
                                    "inputs": [{"name": "image", "transform": "image", "size": size}]})
    with precision_policy(precision):
        model = trainer_images.build_model(spec, Head("multiclass", num_classes=10), backbone)
        model.compile(optimizer=k.optimizers.Adam(1e-3), loss="sparse_categorical_crossentropy",
                      jit_compile=xla, steps_per_execution=steps)
        x = tf.random.uniform([batch, size, size, 3], 0, 255)
        y = tf.random.uniform([batch], 0, 10, tf.int64)
        ds = tf.data.Dataset.from_tensors(({"image_xf": x}, y)).repeat()
        model.fit(ds, steps_per_epoch=steps, epochs=1, verbose=0)  # traced and warmed up
        start = time.perf_counter()
        model.fit(ds, steps_per_epoch=steps * 2, epochs=1, verbose=0)
        return round(steps * 2 * batch / (time.perf_counter() - start), 1)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=3000)
    parser.add_argument("--held", type=int, default=1000)
    parser.add_argument("--work", help="work directory (default: a new temporary one)")
    parser.add_argument("--xla-backbones", action="store_true",
                        help="also MobileNetV2's step under XLA (on a CPU its compile alone takes minutes)")
    parser.add_argument("--speed-only", action="store_true",
                        help="measure the speed rows again on a quiet machine; the quality row and the folder from "
                             "the results file and --work of an earlier invocation")
    smoke.add_arguments(parser, RESULTS)
    args = parser.parse_args()
    results_path = smoke.results_path(args, RESULTS)
    work = args.work or tempfile.mkdtemp(prefix="tfxline-bench-images-")
    os.makedirs(work, exist_ok=True)
    if args.smoke:
        (images, labels), (held, held_y), names = digits(0, 300), digits(1500, 100), [str(d) for d in range(10)]
    else:
        train, train_y = fashion("train")
        test, test_y = fashion("t10k")
        (images, labels), (held, held_y), names = (train[:args.images], train_y[:args.images]), \
            (test[:args.held], test_y[:args.held]), CLASSES
    results = {"date": time.strftime("%Y-%m-%d"), "machine": f"{os.cpu_count()} CPU cores, {platform.machine()}, "
               "no GPU", "data": "scikit-learn digits" if args.smoke else "Fashion-MNIST"}
    if args.smoke:
        results["smoke"] = True
    if args.speed_only:
        with open(results_path) as f:
            results["quality"] = json.load(f)["quality"]
        folder = os.path.join(work, "photos")
    else:
        results["quality"], folder = quality(work, images, labels, held, held_y, names, args.smoke)
    print(json.dumps(results["quality"]), flush=True)
    size = results["quality"]["image_size"]
    results["input_images_per_second"] = input_rate(folder, size, batches=5 if args.smoke else 40)
    print(json.dumps({"input_images_per_second": results["input_images_per_second"]}), flush=True)
    rows = []
    for backbone, side in (("small_cnn", size), ("mobilenet_v2", 96)):
        for precision, xla in (("float32", False), ("mixed_bfloat16", False), ("float32", True)):
            if (args.smoke and (backbone != "small_cnn" or xla)) or (xla and backbone != "small_cnn"
                                                                      and not args.xla_backbones):
                continue
            rate = step_rate(backbone, side, precision, xla, steps=2 if args.smoke else 20)
            rows.append({"backbone": backbone, "size": side, "precision": precision, "xla": xla,
                         "images_per_second": rate})
            print(json.dumps(rows[-1]), flush=True)
    results["trainer"] = rows
    smoke.write_json(results_path, results)
    print(f"wrote {results_path}")


if __name__ == "__main__":
    main()
