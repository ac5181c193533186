"""A photo folder, end to end, as the docs tell a new user (issue #66): `tfxline init --data
FOLDER`, `tfxline run`, `tfxline predict` on a CSV of held-out image paths. The folder: 600 of
scikit-learn's digits as PNG and JPEG files of mixed sizes, crops of its two sample photos (real
JPEGs), copies of some files under other names, a text file, a .DS_Store and a truncated JPEG.

One run (its own scenario: the image pipeline), read by every test here: blessed and pushed on the
first try; the examples hold encoded bytes, each image's copies in one split; TFDV's image
statistics; the truncated file left out and named; predict's rows, in order and accurate; the
pushed SavedModel's serving_images signature called as TF Serving's REST API would, agreeing with
predict; the TFLite model on decoded pixels."""
import base64
import csv
import glob
import hashlib
import json
import os
import re
import shutil

import numpy as np
import pytest

from tests import tf_serving_rest
from tests.conftest import tfxline
from tests.image_data import TRUNCATED, digits_folder

pytestmark = pytest.mark.e2e

COPIES = 20  # files copied under another name in their class


@pytest.fixture(scope="module")
def image_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("images")
    folder, held = root / "photos", root / "held"
    digits_folder(str(folder), limit=600)
    for i, path in enumerate(sorted(glob.glob(str(folder / "[0-9]" / "*.png")))[:COPIES]):
        shutil.copy(path, path.replace(".png", f"_copy{i}.png"))
    counts = digits_folder(str(held), limit=200, start=1500, photos=False, strays=False)
    rows = [{"image": os.path.relpath(p, root), "label": os.path.basename(os.path.dirname(p))}
            for p in sorted(glob.glob(str(held / "*" / "*")))]
    with open(root / "held.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, ["image", "label"])
        writer.writeheader()
        writer.writerows(rows)
    made = tfxline("init", "--data", str(folder), "--dir", str(root / "project"))
    assert made.returncode == 0, made.stderr
    config = str(root / "project" / "config.yaml")
    run = tfxline("run", "--config", config)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    predictions = root / "predictions.csv"
    predicted = tfxline("predict", "--config", config, "--input", str(root / "held.csv"),
                        "--predictions", str(predictions))
    assert predicted.returncode == 0, predicted.stderr[-2000:]
    return {"root": root, "init": made.stdout, "run": run.stdout, "predict": predicted.stdout, "rows": rows,
            "predictions": list(csv.DictReader(open(predictions))), "held": sum(counts.values()),
            "output": root / "project" / "output"}


def test_init_says_what_it_decided(image_run):
    out = image_run["init"]
    assert "images in 12 classes" in out and "other file(s) ignored (notes.txt)" in out
    assert "image size 32 x 32" in out and "small_cnn from scratch" in out


def test_the_first_run_is_blessed_and_pushed_with_a_tflite_model(image_run):
    out = image_run["run"]
    assert "blessing: BLESSED" in out and "pushed to: " in out, out
    assert "tflite: model.tflite (none" in out and "TFLite builtins only" in out, out
    assert "1 image(s) that do not decode left out (" in out and TRUNCATED in out, out
    assert "too good to be true" not in out  # an image model reads no column that could leak the label
    # init's time budget: the Trainer timed its passes and says how long it took (trainer/budget.py)
    runs = sorted((image_run["output"] / "pipeline_root" / "Trainer" / "model_run").iterdir(), key=os.path.getmtime)
    budget = json.loads((runs[-1] / "training_run.json").read_text())["budget"]
    assert budget["minutes"] == 10 and budget["planned_passes"] == 40 and 1 <= budget["passes"] <= 40
    assert budget["seconds_per_pass"] > 0 and budget["all_passes_minutes"] > 0
    line = next(x for x in out.splitlines() if x.startswith("  training: "))
    assert f"for {budget['passes']} of 40 passes" in line and "training.time_budget_minutes (10)" in line, line
    assert budget["stopped_by_budget"] or "early stopping ended it" in line or "all of them ran" in line, line


def test_the_report_shows_eval_images_with_their_true_and_predicted_class(image_run):
    report = [line.split("report: ", 1)[1] for line in image_run["run"].splitlines() if "report: " in line][-1]
    html = open(report.strip()).read()
    figures = re.findall(r'<figure class="(ok|bad)"><img src="data:image/(png|jpeg);base64,', html)
    assert len(figures) == 12 and figures.count(("bad", "png")) + figures.count(("bad", "jpeg")) <= 4, figures
    assert "<h3>Eval images</h3>" in html


def examples_by_split(output):
    import tensorflow as tf

    uri = sorted(glob.glob(str(output / "pipeline_root" / "ImageExampleGen" / "examples" / "*")))[-1]
    out = {}
    for split in ("train", "validation", "eval"):
        files = glob.glob(os.path.join(uri, f"Split-{split}", "*.gz"))
        out[split] = [tf.train.Example.FromString(r.numpy())
                      for r in tf.data.TFRecordDataset(files, compression_type="GZIP")]
    return out


def test_examples_hold_the_files_bytes_and_copies_share_a_split(image_run):
    splits = examples_by_split(image_run["output"])
    where = {}
    for split, examples in splits.items():
        for e in examples:
            data = e.features.feature["image"].bytes_list.value[0]
            assert data[:4] in (b"\x89PNG", b"\xff\xd8\xff\xe0"), data[:8]  # encoded, never pixels
            where.setdefault(hashlib.sha256(data).hexdigest(), set()).add(split)
    total = sum(len(v) for v in splits.values())
    assert total == 600 + 48 + COPIES  # the truncated file left out; notes.txt and .DS_Store ignored
    assert len(where) == total - COPIES and all(len(s) == 1 for s in where.values())
    assert all(len(v) for v in splits.values())


def test_statistics_profile_the_images(image_run):
    import tensorflow_data_validation as tfdv

    stats_dir = sorted(glob.glob(str(image_run["output"] / "pipeline_root" / "StatisticsGen" / "statistics" / "*")))[-1]
    stats = tfdv.load_stats_binary(os.path.join(stats_dir, "Split-train", "FeatureStats.pb"))
    by_name = {f.path.step[0]: f for f in stats.datasets[0].features}
    assert "image_format_histogram" in {c.name for c in by_name["image"].custom_stats}  # TFDV's image domain stats
    # the sizes and formats ImageExampleGen records beside each image (what the drift gate compares)
    assert by_name["image_width"].num_stats.min == 24 and by_name["image_width"].num_stats.max >= 64
    formats = {b.label for b in by_name["image_format"].string_stats.rank_histogram.buckets}
    assert formats == {"JPEG", "PNG"}, formats


def test_predict_gives_one_accurate_row_per_held_out_image_in_order(image_run):
    got, rows = image_run["predictions"], image_run["rows"]
    assert [r["image"] for r in got] == [r["image"] for r in rows]
    assert "predicted class" in image_run["predict"] or "predicted classes" in image_run["predict"]
    accuracy = np.mean([r["predicted_class"] == r["label"] for r in got])
    assert accuracy >= 0.85, accuracy
    assert all(set(json.loads(r["probabilities"])) >= {str(d) for d in range(10)} for r in got)


def test_the_bytes_signature_called_as_tf_serving_would_agrees_with_predict(image_run):
    import tensorflow as tf

    serving = image_run["output"] / "serving"
    model_dir = sorted(p for p in glob.glob(str(serving / "*" / "[0-9]*")) if os.path.isdir(p))[-1]
    loaded = tf.saved_model.load(model_dir)
    rows = image_run["rows"][:16]
    body = {"signature_name": "serving_images",
            "instances": [{"b64": base64.b64encode(open(image_run["root"] / r["image"], "rb").read()).decode()}
                          for r in rows]}
    out = tf_serving_rest.predict(loaded, json.loads(json.dumps(body)))
    predicted = image_run["predictions"][:16]
    for probabilities, row in zip(out["probabilities"], predicted):
        assert np.allclose(sorted(probabilities), sorted(json.loads(row["probabilities"]).values()), atol=1e-5)
    # where TF Serving refuses a request, so does the stand-in: text that is not base64; a b64 object
    # with another key (then an object of named inputs, whose keys are not the signature's)
    with pytest.raises(tf_serving_rest.RestError, match="Unable to base64 decode"):
        tf_serving_rest.predict(loaded, {"signature_name": "serving_images", "instances": [{"b64": "no!"}]})
    with pytest.raises(tf_serving_rest.RestError, match="keys must be equal to: images"):
        tf_serving_rest.predict(loaded, {"signature_name": "serving_images", "instances": [{"b64": "AA==", "x": 1}]})


def pretrained_like(k, folder):
    """A MobileNetV2 without its top whose batch normalization holds statistics of data it has seen,
    as a pretrained file's does (a fresh network's 0 and 1 make a deep one's gradients vanish in
    inference mode), saved as folder/mobilenet_v2_no_top.h5."""
    import tensorflow as tf

    model = k.applications.MobileNetV2(include_top=False, weights=None, input_shape=(32, 32, 3))
    for layer in model.layers:
        if isinstance(layer, k.layers.BatchNormalization):
            layer.momentum = 0.0  # the moving statistics become this batch's
    model(tf.random.uniform([32, 32, 32, 3], -1, 1, seed=0), training=True)
    model.save_weights(str(folder / "mobilenet_v2_no_top.h5"))
    return model


def test_transfer_learning_from_a_weights_file_in_two_phases_mirrored_and_mixed(image_run, tmp_path):
    """run_fn on the run's examples and Transform graph, as TFX's Trainer calls it: MobileNetV2 from a
    weights file this test saves (no download), its backbone frozen for the first epoch and then
    trained, under MirroredStrategy over two logical CPUs and mixed_bfloat16."""
    import tensorflow as tf

    from tests.trainer_harness import run_fn_in_a_process
    from tfxline.pipeline.config.load import load_config
    from tfxline.pipeline.factory import trainer_custom_config
    from tfxline.trainer.keras_compat import keras

    saved = pretrained_like(keras(), tmp_path)
    weights = str(tmp_path / "mobilenet_v2_no_top.h5")
    cfg = load_config(str(image_run["root"] / "project" / "config.yaml"), overrides=[
        "model.backbone=mobilenet_v2", f"model.weights={weights}", "model.frozen_epochs=1", "training.epochs=2",
        "training.batch_size=32", "runtime.strategy=mirrored", "runtime.precision=mixed_bfloat16"])
    done = run_fn_in_a_process(image_run["output"] / "pipeline_root", "ImageExampleGen", trainer_custom_config(cfg),
                               tmp_path)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    info = json.loads((tmp_path / "model_run" / "training_run.json").read_text())
    assert info["frozen_epochs"] == 1 and info["epochs"] == 2 and info["replicas"] == 2
    assert info["precision"] == "mixed_bfloat16"
    loaded = tf.saved_model.load(str(tmp_path / "serving"))
    trained = next(v for v in loaded.variables if v.name == "Conv1/kernel:0").numpy()  # the backbone's first layer
    start = next(w for w in saved.weights if w.name == "Conv1/kernel:0").numpy()
    assert trained.shape == start.shape and not np.allclose(trained, start)  # the second phase trained the backbone
