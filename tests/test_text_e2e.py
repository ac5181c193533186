"""A table of reviews (free text beside a number and a category) through `tfxline init`, `run` and
`predict`, as the docs tell a new user (docs/text.md): one run, read by every test here (the run
is what they check: the text scenario has no other; tests/conftest.py lists the suite's runs).

The reviews' label is in phrases whose meaning is in their word order ("not good" against
"good": tests/text_data.py), so the eval AUC the run must reach is only open to a model that reads
2-grams."""
import csv
import json
import os

import pytest
import tensorflow as tf

from tests.conftest import tfxline
from tests.text_data import write_reviews

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def text_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("text")
    data = root / "reviews.csv"
    write_reviews(str(data))
    made = tfxline("init", "--data", str(data), "--label", "label", "--positive", "pos", "--dir", str(root / "p"))
    assert made.returncode == 0, made.stderr
    run = tfxline("run", "--config", str(root / "p" / "config.yaml"))
    return root, made, run


def test_init_reads_the_review_as_free_text(text_run):
    root, made, _ = text_run
    line = next(x for x in made.stdout.splitlines() if x.startswith("  review: "))
    assert line.startswith("  review: text (") and "free text: " in line and "a bag of 1-2-grams" in line
    config = (root / "p" / "config.yaml").read_text()
    assert "{name: review, transform: text, top_k: " in config and "ngrams: 2" in config
    schema = (root / "p" / "schema.pbtxt").read_text()
    assert "natural_language_domain" in schema and "Honestly" not in schema  # no domain of documents


def test_the_run_learns_the_word_order_and_is_pushed(text_run):
    _, _, run = text_run
    assert run.returncode == 0, run.stderr[-3000:]
    assert "blessing: BLESSED" in run.stdout and "pushed to: " in run.stdout, run.stdout
    eval_line = next(x for x in run.stdout.splitlines() if x.strip().startswith("eval (overall):"))
    auc = float(eval_line.split("auc ", 1)[1].split(",")[0])
    # 10% of the labels are flipped: 0.9 is about the most there is. TF-IDF + logistic regression on the same
    # data: 0.62 on 1-grams alone, 0.82 on 1-2-grams; the bag measured 0.75 (Adam moves a rare n-gram as fast
    # as a common one: docs/text.md). Above 0.7, the 2-grams were read.
    assert auc >= 0.7, eval_line


def test_the_pushed_model_serves_raw_text_and_predict_keeps_the_order(text_run, tmp_path):
    root, _, run = text_run
    pushed = next(x for x in run.stdout.splitlines() if "pushed to: " in x).split("pushed to: ", 1)[1].split(" (")[0]
    model = tf.saved_model.load(pushed)
    serve = model.signatures["serving_default"]

    def example(text):
        feature = {"review": tf.train.Feature(bytes_list=tf.train.BytesList(value=[text.encode()]))}
        return tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()

    out = serve(examples=tf.constant([example("Honestly, not good. The plot was thin."),
                                      example("Honestly, NOT BAD. The plot was thin."),
                                      example("")]))
    probabilities = out["probabilities"].numpy().reshape(-1)
    assert probabilities[1] > 0.5 > probabilities[0], probabilities  # "not bad" over "not good"
    rows = tmp_path / "rows.csv"
    write_reviews(str(rows), rows=30, seed=7, with_label=False)
    predictions = tmp_path / "predictions.jsonl"
    done = tfxline("predict", "--config", str(root / "p" / "config.yaml"), "--input", str(rows),
                   "--predictions", str(predictions))
    assert done.returncode == 0, done.stderr[-2000:]
    lines = [json.loads(x) for x in predictions.read_text().splitlines()]
    with open(rows, newline="", encoding="utf-8") as f:
        written = [r["review"] for r in csv.DictReader(f)]
    assert [x["review"] for x in lines] == written  # one row per input, in order, the text as it was
    assert all(0.0 <= x["probability"] <= 1.0 for x in lines)


def test_the_trainer_records_the_text_input_and_what_it_leans_on(text_run):
    root, _, run = text_run
    runs = sorted((root / "p" / "output" / "pipeline_root" / "Trainer" / "model_run").iterdir(), key=os.path.getmtime)
    info = json.loads((runs[-1] / "training_run.json").read_text())
    text_input = next(mi for mi in info["model_inputs"] if mi[0] == "review_xf")
    assert text_input[2] == 2 * text_input[3]  # [length, tokens]: 1- and 2-grams of max_tokens tokens
    assert info["model"]["text_encoder"] == "bag"
    assert "review" in [column for column, _ in info["leans_on"][:2]]  # the text carries the label (and helpful)


def test_the_report_shows_eval_texts_and_the_ngrams_the_model_reads(text_run):
    root, _, run = text_run
    runs = sorted((root / "p" / "output" / "pipeline_root" / "Trainer" / "model_run").iterdir(), key=os.path.getmtime)
    info = json.loads((runs[-1] / "training_run.json").read_text())
    ngrams = next(t for t in info["text_ngrams"] if t["column"] == "review")["toward"]
    assert set(ngrams) == {"pos", "not pos"}
    # the phrases that carry the label are among what pushes toward each side (tests/text_data.py)
    assert {"not bad", "really good", "loved it", "not boring", "well worth"} & set(ngrams["pos"]), ngrams
    assert {"not good", "really bad", "hated it", "so boring", "not worth"} & set(ngrams["not pos"]), ngrams
    report = next(x for x in run.stdout.splitlines() if "report: " in x).split("report: ", 1)[1].strip()
    html = open(report, encoding="utf-8").read()
    assert "<h3>Eval texts</h3>" in html and "<h3>What the model reads in review</h3>" in html
    # the review column's documents on the validation rows (trainer/text_profile.py), in the report too
    (profile,) = info["text_columns"]
    assert profile["column"] == "review" and profile["documents"] >= 50 and 0 < profile["tokens"]["p50"] <= profile["cap"]
    assert 0 <= profile["oov_rate"] < 0.5 and len(profile["top_tokens"]) == 12
    assert "<h3>The text in review</h3>" in html and "out of vocabulary" in html
    assert html.count('<tr class="ok">') + html.count('<tr class="bad">') == 12  # the first 12 eval rows


def test_the_transformer_trains_under_a_strategy_and_mixed_precision(text_run, tmp_path):
    """run_fn on the run's examples and Transform graph, as TFX's Trainer calls it: the transformer
    encoder under MirroredStrategy over two logical CPUs and mixed_bfloat16; its output float32 and
    its serving signature answering raw text. (XLA: test_text.py, on the default strategy; on a
    CPU, XLA under MirroredStrategy reads one replica's variables from the other's device.)"""
    from tests.trainer_harness import run_fn_in_a_process
    from tfxline.pipeline.config.load import load_config
    from tfxline.pipeline.factory import trainer_custom_config

    root, _, _ = text_run
    cfg = load_config(str(root / "p" / "config.yaml"), overrides=[
        "model.text_encoder=transformer", "model.text_dim=32", "training.epochs=1", "runtime.strategy=mirrored",
        "runtime.precision=mixed_bfloat16"])
    done = run_fn_in_a_process(root / "p" / "output" / "pipeline_root", "CsvExampleGen", trainer_custom_config(cfg),
                               tmp_path, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    info = json.loads((tmp_path / "model_run" / "training_run.json").read_text())
    assert (info["strategy"], info["replicas"], info["precision"]) == ("MirroredStrategy", 2, "mixed_bfloat16")
    assert info["model"]["text_encoder"] == "transformer" and info["text_ngrams"] == []  # no per-n-gram weights
    model = tf.saved_model.load(str(tmp_path / "serving"))
    feature = {"review": tf.train.Feature(bytes_list=tf.train.BytesList(value=[b"Honestly, not bad."]))}
    example = tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()
    out = model.signatures["serving_default"](examples=tf.constant([example]))
    assert out["probabilities"].dtype == tf.float32


def test_the_pushed_model_carries_its_texts_statistics_for_the_drift_check(text_run):
    """The Trainer writes TFDV's natural-language statistics of the validation reviews beside the
    model (transforms/text_statistics.py); the pushed version carries them and the vocabulary asset
    they name, and the next run's DriftGate (components/text_drift.py) compares the run's own
    training reviews with them: the same text, nothing drifted."""
    import dataclasses

    from tfx.types import artifact_utils, standard_artifacts

    from tfxline.components import text_drift
    from tfxline.pipeline.config.sections import DriftConfig
    from tfxline.transforms import text_statistics

    root, _, run = text_run
    pushed = next(x for x in run.stdout.splitlines() if "pushed to: " in x).split("pushed to: ", 1)[1].split(" (")[0]
    stats, settings = text_statistics.read_reference(pushed)
    (column,) = settings
    assert column["column"] == "review" and text_statistics.read_vocabulary(pushed, column["vocabulary"])
    got = text_statistics.figures(stats, "review")
    assert got["documents"] > 100 and 0 < got["oov_rate"] < 0.2 and got["top_tokens"]
    gen = root / "p" / "output" / "pipeline_root" / "CsvExampleGen" / "examples"
    examples = standard_artifacts.Examples()
    examples.uri = str(max(gen.iterdir(), key=os.path.getmtime))
    examples.split_names = artifact_utils.encode_split_names(["train", "eval"])
    anomalies, lines, compared, off = text_drift.compare(examples, pushed, "the serving model's training data",
                                                    dataclasses.asdict(DriftConfig()))
    assert compared == ["review"] and off == [] and lines == [] and not any(
        m.value > m.threshold for info in anomalies.drift_skew_info for m in info.drift_measurements)
