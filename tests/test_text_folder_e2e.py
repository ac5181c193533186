"""A folder of .txt files, end to end, as the docs tell a new user (issue #72, item 2): `tfxline
init --data FOLDER`, `tfxline run`, `tfxline predict` on a held-out folder. The folder: 3 classes
of short documents (tests/text_folder_data.py: IMDB sample sentences with each class's phrases),
copies of some documents under other names, a README.md and a .DS_Store.

One run (its own scenario: the text-folder pipeline, TextExampleGen; tests/conftest.py lists the
suite's runs), read by every test here: blessed and pushed on the first try; the strays counted in
the run's summary; the examples hold the files' text, each document's copies in one split;
predict's rows, one per held-out file, in order and accurate."""
import csv
import glob
import os

import numpy as np
import pytest

from tests.conftest import tfxline
from tests.text_folder_data import text_folder

pytestmark = [pytest.mark.e2e, pytest.mark.one_stack(
    "1.16", why="a class folder of .txt files read by our TextExampleGen; the text model runs on both stacks in test_text_e2e.py")]

COPIES = 6


@pytest.fixture(scope="module")
def text_folder_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("textfolder")
    counts = text_folder(str(root / "docs"), per_class=80, copies=COPIES)
    text_folder(str(root / "held"), per_class=15, seed=1, strays=False)
    made = tfxline("init", "--data", str(root / "docs"), "--dir", str(root / "project"))
    assert made.returncode == 0, made.stderr
    config = str(root / "project" / "config.yaml")
    run = tfxline("run", "--config", config)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    predictions = root / "predictions.csv"
    predicted = tfxline("predict", "--config", config, "--input", str(root / "held"), "--predictions", str(predictions))
    assert predicted.returncode == 0, predicted.stderr[-2000:]
    return {"root": root, "init": made.stdout, "run": run.stdout, "predict": predicted.stdout, "counts": counts,
            "predictions": list(csv.DictReader(open(predictions))), "output": root / "project" / "output"}


def test_init_says_what_it_decided(text_folder_run):
    out = text_folder_run["init"]
    assert f"{3 * 80 + COPIES} .txt files in 3 classes" in out and "1 other file(s) ignored (README.md)" in out
    assert "label: 3 classes (the sub-folders): multi-class" in out and "\ntext: text (" in out
    assert f"duplicates: {COPIES} .txt file(s) repeat an earlier file's text" in out


def test_the_first_run_is_blessed_and_pushed_and_counts_the_strays(text_folder_run):
    out = text_folder_run["run"]
    assert "blessing: BLESSED" in out and "pushed to: " in out, out
    # README.md; the hidden .DS_Store is skipped, as the pre-flight check's first line and init skip it
    assert "data: 1 file(s) that are not .txt files ignored" in out, out
    assert f"{3 * 80 + COPIES} .txt files from " in out and "(1 other files ignored)" in out, out


def test_the_examples_hold_the_texts_and_copies_share_a_split(text_folder_run):
    import tensorflow as tf

    uri = sorted(glob.glob(str(text_folder_run["output"] / "pipeline_root" / "TextExampleGen" / "examples" / "*")))[-1]
    where = {}
    for split in ("train", "validation", "eval"):
        names = glob.glob(os.path.join(uri, f"Split-{split}", "*.gz"))
        for r in tf.data.TFRecordDataset(names, compression_type="GZIP"):
            e = tf.train.Example.FromString(r.numpy())
            where.setdefault(e.features.feature["text"].bytes_list.value[0], []).append(split)
    assert sum(map(len, where.values())) == 3 * 80 + COPIES and len(where) == 3 * 80
    assert all(len(set(s)) == 1 for s in where.values())
    assert {s for v in where.values() for s in v} == {"train", "validation", "eval"}


def test_predict_gives_one_accurate_row_per_held_out_file_in_order(text_folder_run):
    got = text_folder_run["predictions"]
    paths = sorted(os.path.relpath(p, text_folder_run["root"] / "held")
                   for p in glob.glob(str(text_folder_run["root"] / "held" / "*" / "*.txt")))
    assert [r["path"] for r in got] == paths and len(got) == 45
    assert "predicted classes: " in text_folder_run["predict"]
    accuracy = np.mean([r["predicted_class"] == r["path"].split(os.sep)[0] for r in got])
    assert accuracy >= 0.8, accuracy
    assert all(0 < float(r["probability"]) <= 1 for r in got)
