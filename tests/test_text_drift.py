"""The DriftGate's text check (components/text_drift.py): a new day's documents against the
serving model's, by TFDV's natural-language statistics of their tokens (transforms/text_statistics.py).
The executor called directly on tf.Examples of generated reviews (tests/text_data.py), the serving
model's reference written as the Trainer writes it; the pushed layout itself (the vocabulary
asset the reference names) is checked on the text scenario's run (tests/test_text_e2e.py)."""
import builtins
import collections
import csv
import dataclasses
import json
import os

import pytest
import tensorflow as tf
from tfx.types import artifact_utils, standard_artifacts

from tfxline.components import drift_gate as dg
from tfxline.components import text_drift
from tfxline.pipeline.config.sections import DriftConfig
from tfxline.serving.push import METADATA_FILE
from tfxline.transforms import text as text_lib
from tfxline.transforms import text_statistics
from tests.text_data import write_reviews

CAP = 64


def reviews(tmp_path, rows, seed):
    path = tmp_path / f"reviews-{seed}.csv"
    write_reviews(str(path), rows=rows, seed=seed)
    with open(path, newline="", encoding="utf-8") as f:
        return [row["review"] for row in csv.DictReader(f)]


def examples_of(tmp_path, name, documents, column="review"):
    """An ExampleGen-like artifact: the documents as tf.Examples in Split-train (GZIP TFRecords)."""
    uri = tmp_path / name
    os.makedirs(uri / "Split-train")
    with tf.io.TFRecordWriter(str(uri / "Split-train" / "data_tfrecord-00000-of-00001.gz"), "GZIP") as w:
        for doc in documents:
            feature = {"stars": tf.train.Feature(int64_list=tf.train.Int64List(value=[3]))}
            if doc:  # an empty review: the column is missing, as the CSV ExampleGen leaves it
                feature[column] = tf.train.Feature(bytes_list=tf.train.BytesList(value=[doc.encode()]))
            w.write(tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString())
    examples = standard_artifacts.Examples()
    examples.uri, examples.split_names = str(uri), artifact_utils.encode_split_names(["train", "eval"])
    return examples


def serving_model(tmp_path, training_docs, validation_docs):
    """A pushed version (serving/<3>) with a vocabulary asset learnt on ``training_docs`` (tokens seen
    twice) and the reference the Trainer writes: the validation documents as the model reads them."""
    serving = tmp_path / "serving"
    model = serving / "3"
    os.makedirs(model / "assets")
    (model / "saved_model.pb").write_bytes(b"pb")  # a complete version (serving/push.py)
    (model / METADATA_FILE).write_text(json.dumps({"data": {}}))  # no statistics of the raw columns
    tokens = text_lib.tokens(tf.constant(training_docs), CAP).to_list()  # the Transform's rules
    counts = collections.Counter(t.decode() for doc in tokens for t in doc)
    vocabulary = [t for t, n in counts.most_common() if n >= 2]
    (model / "assets" / "review_vocab").write_text("".join(f"{t}\n" for t in vocabulary))
    tokens = text_statistics.tokens_from_text(validation_docs, CAP, set(vocabulary))
    text_statistics.write_reference(str(model), {"review": tokens},
                                    [{"column": "review", "max_tokens": CAP, "vocabulary": "review_vocab"}])
    return str(serving)


def thresholds(**drift):
    return dict(dataclasses.asdict(DriftConfig(**drift)), columns=[])  # the text check alone


def gate(tmp_path, examples, serving, settings):
    out = standard_artifacts.ExampleAnomalies()
    out.uri = str(tmp_path / f"out-{examples.uri.rsplit('/', 1)[-1]}")
    dg.Executor().Do({"statistics": [standard_artifacts.ExampleStatistics()], "schema": [standard_artifacts.Schema()],
                      "examples": [examples]}, {"drift_anomalies": [out]},
                     {"serving_dir": serving, "span_ledger": str(tmp_path / "spans"), "thresholds": json.dumps(settings)})
    return out


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    root = tmp_path_factory.mktemp("text-drift")
    docs = reviews(root, 1600, seed=1)
    return root, serving_model(root, docs[:1200], docs[1200:])


def test_a_new_day_of_the_same_reviews_passes_and_says_its_text_was_compared(served, tmp_path):
    _, serving = served
    out = gate(tmp_path, examples_of(tmp_path, "same", reviews(tmp_path, 800, seed=2)), serving, thresholds())
    assert out.get_string_custom_property("compared_with") == "serving version 3's text (review)"
    assert out.get_int_custom_property("drifted") == 0


def test_other_text_is_stopped_naming_its_tokens_vocabulary_and_length(served, tmp_path):
    """A day of Python's own one-line docstrings in place of reviews: other words (the tokens'
    L-infinity distance), most of them outside the serving model's vocabulary, and shorter."""
    _, serving = served
    other = sorted({(getattr(builtins, n).__doc__ or "").split("\n")[0] for n in dir(builtins)} - {""})
    with pytest.raises(dg.DataDriftError) as stopped:
        gate(tmp_path, examples_of(tmp_path, "other", other * 3), serving, thresholds())
    message = str(stopped.value)
    assert "review's tokens: L-infinity distance " in message and "vs serving version 3's training data > 0.05" in message
    assert "review: out-of-vocabulary rate " in message and "(a rise of " in message
    assert "tokens a document vs " in message and "beyond x1.5 either way" in message
    assert "drift.text_token_threshold, drift.text_oov_rise, drift.text_length_ratio" in message
    scores = {s.labels.get("feature"): s.value for s in stopped.value.drift_samples if s.name == "tfxline_drift_score"}
    assert scores["review"] > 0.05  # Prometheus hears the tokens' distance as any column's


def test_a_columns_zero_threshold_turns_its_text_check_off_and_a_table_has_none(served, tmp_path):
    _, serving = served
    other = examples_of(tmp_path, "off", ["print the value"] * 50)
    out = gate(tmp_path, other, serving, thresholds(features={"review": 0}))
    assert out.get_string_custom_property("compared_with") == "nothing to compare with: the statistics of " \
        "serving version 3's training data are gone; text not checked: review (drift.features.<column>: 0)"
    # a pipeline without text: no text_* keys (pipeline/factory.drift_thresholds), nothing compared
    table = {k: v for k, v in thresholds().items() if not k.startswith(text_drift.TEXT_DRIFT_PREFIX)}
    assert gate(tmp_path, examples_of(tmp_path, "table", ["print"] * 5), serving, table).get_int_custom_property(
        "drifted") == 0

