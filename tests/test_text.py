"""Text inputs: the spec's rules, and the Transform's n-gram ids analysed and applied for real with
tft_beam on literal rows (transforms/text.py)."""
import os

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_transform as tft
import tensorflow_transform.beam as tft_beam
from tensorflow_transform.tf_metadata import dataset_metadata, schema_utils

from tfxline.transforms import text as text_lib
from tfxline.transforms.features import FeatureSpec, FeatureSpecError, transformed_name, vocabulary_name
from tfxline.transforms.preprocessing import make_preprocessing_fn

SPEC = FeatureSpec.from_dict({
    "label": {"name": "label", "transform": "binary", "positive": "pos"},
    "inputs": [{"name": "review", "transform": "text", "top_k": 50, "ngrams": 2, "max_tokens": 6, "min_count": 2},
               {"name": "stars", "transform": "zscore"}],
})
RAW_SPEC = {"review": tf.io.VarLenFeature(tf.string), "stars": tf.io.VarLenFeature(tf.float32),
            "label": tf.io.VarLenFeature(tf.string)}
REVIEWS = ["Great film!<br /><br />Great cast.", "not good, NOT good at all", "great great great",
           None, "Not good", "a GREAT film", "good film", "unseen words only here"]


def rows():
    return [{"review": [] if r is None else [r.encode()], "stars": [float(i)], "label": [b"pos" if i % 2 else b"neg"]}
            for i, r in enumerate(REVIEWS)]


@pytest.fixture(scope="module")
def analyzed(tmp_path_factory):
    metadata = dataset_metadata.DatasetMetadata(schema_utils.schema_from_feature_spec(RAW_SPEC))
    output = str(tmp_path_factory.mktemp("transform_output"))
    with tft_beam.Context(temp_dir=str(tmp_path_factory.mktemp("tft"))):
        (out, _), transform_fn = (rows(), metadata) | tft_beam.AnalyzeAndTransformDataset(make_preprocessing_fn(SPEC))
        _ = transform_fn | tft_beam.WriteTransformFn(output)
    return out, tft.TFTransformOutput(output)


def test_normalisation_lowers_strips_markup_and_splits_punctuation():
    out = text_lib.tokens(tf.constant(["Great film!<br /><br />Great cast.", "Don't  STOP", ""]), 4)
    assert out.to_list() == [[b"great", b"film", b"!", b"great"], [b"don't", b"stop"], []]
    grams = text_lib.ngrams(text_lib.tokens(tf.constant(["not good at all"]), 3), 2)
    assert grams.to_list() == [[b"not", b"good", b"at", b"not good", b"good at"]]


def test_the_vocabulary_holds_ngrams_seen_in_two_documents_or_more(analyzed):
    _, output = analyzed
    vocabulary = set(output.vocabulary_by_name(vocabulary_name("review")))
    assert {b"great", b"good", b"not good", b"film", b"not"} <= vocabulary
    assert b"unseen" not in vocabulary and b"cast" not in vocabulary  # one document only (min_count 2)
    assert b"<br" not in vocabulary and b"br" not in vocabulary  # markup removed


def test_ids_are_a_fixed_block_unigrams_first_padded(analyzed):
    out, output = analyzed
    name = transformed_name("review")
    assert output.transformed_feature_spec()[name] == tf.io.FixedLenFeature([12], tf.int64)
    vocabulary = output.vocabulary_by_name(vocabulary_name("review"))
    size = len(vocabulary)
    index = {v: i for i, v in enumerate(vocabulary)}
    not_good = np.asarray(out[4][name])  # "Not good": its tokens, padded; then its 2-gram, padded
    assert list(not_good[:6]) == [index[b"not"], index[b"good"]] + [text_lib.PAD] * 4  # the tokens' segment
    assert list(not_good[6:]) == [index[b"not good"]] + [text_lib.PAD] * 5  # a sequence encoder reads none of it
    assert list(np.asarray(out[3][name])) == [text_lib.PAD] * 12  # a missing review: an empty document
    unseen = np.asarray(out[7][name])
    assert list(unseen[:4]) == [size] * 4 and unseen[6] == size  # out of vocabulary: the one OOV bucket
    long = np.asarray(out[1][name])  # 7 tokens read as 6 (max_tokens): 6 unigrams and 5 bigrams
    assert (long != text_lib.PAD).sum() == 11


@pytest.mark.parametrize("field,value,message", [
    ("ngrams", 4, "ngrams 4; set it to a whole number from 1 to 3"),
    ("max_tokens", 0, "max_tokens 0; set it to a whole number from 1 to 4096"),
    ("min_count", True, "min_count: expected an integer, got True"),
])
def test_bad_text_settings_are_one_line(field, value, message):
    raw = {"label": {"name": "label", "transform": "binary", "positive": "pos"},
           "inputs": [{"name": "review", "transform": "text", field: value}]}
    with pytest.raises(FeatureSpecError, match=message):
        FeatureSpec.from_dict(raw)


def test_text_settings_belong_to_text_inputs():
    raw = {"label": {"name": "label", "transform": "binary", "positive": "pos"},
           "inputs": [{"name": "stars", "transform": "zscore", "ngrams": 2}]}
    with pytest.raises(FeatureSpecError, match="ngrams applies to transform text: remove ngrams:"):
        FeatureSpec.from_dict(raw)


# ---- init: which columns are free text, which are IDs ----------------------------------------

def _init(tmp_path, rows, label, *extra):
    import csv
    import io
    import contextlib

    from tfxline.cli import main as cli

    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / "data.csv"
    with open(path, "w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows(rows)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = cli.main(["init", "--data", str(path), "--label", label, "--dir", str(tmp_path / "p"), *extra])
    return code, out.getvalue(), path


def test_init_tells_free_text_from_categories_codes_dates_and_ids(tmp_path):
    """A review column (several words a value, many values) is text; a few phrases are a category; a
    date written m/d/y and aircraft codes are no text; whole numbers rising with the row order (a
    time-ordered message ID) and mostly empty ID-named columns (in_reply_to_user_id_str) are IDs. A
    table whose only input is text trains (init used to refuse it: 'no column but the label')."""
    from tests.text_data import imdb_sentences

    sentences = imdb_sentences()
    header = ["id_str", "posted", "review", "mood", "when", "atype", "in_reply_to_user_id_str", "score", "label"]
    rows = [header] + [[str(5 * i + 3), str(10_000_000 + 37 * i + i % 3), sentences[i % len(sentences)], ["Very good", "Not so good"][i % 2],
                        f"{i % 12 + 1}/{i % 28 + 1}/1990 0:00:00", ["B-737-300", "MD-80", "A-320"][i % 3],
                        str(900 + i) if i % 7 == 0 else "", str(i % 5), "yes" if i % 3 else "no"]
                       for i in range(400)]
    code, out, _ = _init(tmp_path, rows, "label")
    assert code == 0, out
    lines = {line.split(":", 1)[0].strip(): line for line in out.splitlines() if line.startswith("  ")}
    assert lines["review"].startswith("  review: text (") and "free text: " in lines["review"]
    assert "vocabulary" in lines["mood"] and "vocabulary" in lines["when"] and "vocabulary" in lines["atype"]
    assert "left out (an ID: whole numbers, 400 values in 400 rows, rising with the row order" in lines["posted"]
    assert "left out (an ID by its name" in lines["id_str"]
    assert "left out (an ID by its name" in lines["in_reply_to_user_id_str"]
    only_text = [["review", "label"]] + [[r[2], r[-1]] for r in rows[1:]]
    code, out, _ = _init(tmp_path / "only", only_text, "label")
    assert code == 0 and "  review: text (" in out, out
    # a text model's first run fits its passes into 10 minutes; a table's has no budget
    assert "time_budget_minutes: 10   # the Trainer times its passes" in (tmp_path / "only" / "p" / "config.yaml").read_text()


def test_a_new_days_reviews_are_no_anomaly_against_the_schema_init_wrote(tmp_path):
    """init's schema gives the review column TFDV's natural_language_domain, not a string domain of
    the 100 documents it saw: the next day's reviews validate (they were all 'unexpected string
    values', and the AnomaliesGate stopped the first run)."""
    import pandas as pd
    import tensorflow_data_validation as tfdv
    from google.protobuf import text_format
    from tensorflow_metadata.proto.v0 import schema_pb2

    from tests.text_data import imdb_sentences

    sentences = imdb_sentences()
    rows = [["review", "label"]] + [[" ".join(sentences[i:i + 3]), "yes" if i % 2 else "no"] for i in range(100)]
    code, out, _ = _init(tmp_path, rows, "label")
    assert code == 0, out
    schema = text_format.Parse((tmp_path / "p" / "schema.pbtxt").read_text(), schema_pb2.Schema())
    review = next(f for f in schema.feature if f.name == "review")
    assert review.HasField("natural_language_domain") and not review.domain and len(schema.string_domain) == 1
    frame = pd.DataFrame({"review": [" ".join(sentences[i:i + 2]) for i in range(200, 260)], "label": ["yes"] * 60})
    anomalies = tfdv.validate_statistics(tfdv.generate_statistics_from_dataframe(frame), schema)
    assert not anomalies.anomaly_info, anomalies


def test_a_text_pipeline_compiles_for_kubeflow_and_refuses_a_phone_model(tmp_path):
    from tfxline.kubeflow import compile as kfp_compile
    from tfxline.kubeflow import spec as kfp_spec
    from tfxline.pipeline.config import ConfigError
    from tfxline.pipeline.config.load import load_config
    from tfxline.pipeline.factory import trainer_custom_config
    from tests.text_data import write_reviews

    (tmp_path / "d").mkdir()
    write_reviews(str(tmp_path / "d" / "reviews.csv"), rows=300)
    from tfxline.cli import main as cli

    assert cli.main(["init", "--data", str(tmp_path / "d" / "reviews.csv"), "--label", "label", "--positive", "pos",
                     "--dir", str(tmp_path / "p")]) == 0
    config = str(tmp_path / "p" / "config.yaml")
    cfg = load_config(config)
    job = kfp_compile.compile_pipeline(cfg, image="example/tfxline:test", pipeline_root="gs://bucket/root",
                                       output=str(tmp_path / "pipeline.json"))
    kfp_spec.check_open_source_kfp(job)
    model = trainer_custom_config(cfg)["model"]
    assert model["text_encoder"] == "bag" and "text_dim" in model  # read only where a text input is
    assert "text_encoder" not in trainer_custom_config(load_config("taxi"))["model"]  # a table's cache key as before
    with pytest.raises(ConfigError, match="serving.tflite: dynamic: the text feature\\(s\\) review are tokenised"):
        load_config(config, ["serving.tflite=dynamic"])


# ---- serving: a text dataset's raw strings ------------------------------------------------------

def test_a_text_only_model_serves_raw_strings_as_tf_serving_rest_sends_them(tmp_path):
    """A spec whose one input is text exports ``serving_texts``: TF Serving REST's plain list of
    strings ({"instances": ["...", "..."]}, checked by tests/tf_serving_rest.py's json_tensor rules),
    giving what serving_default gives for the same text in tf.Examples. In a process of its own, as
    the Trainer exports: in the suite's process another module's traces left AutoGraph converting
    the label's unit as the label transform."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", "import sys; from tests.test_text import check_serving_texts; "
                           "check_serving_texts(sys.argv[1])", str(tmp_path)], capture_output=True, text=True,
                          timeout=600, cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stderr[-3000:]


def check_serving_texts(work: str) -> None:
    import pathlib

    root = pathlib.Path(work)
    from tests import tf_serving_rest
    from tfxline.trainer import export
    from tfxline.trainer import model as model_lib

    spec = FeatureSpec.from_dict({"label": {"name": "label", "transform": "binary", "positive": "pos"},
                                  "inputs": [{"name": "review", "transform": "text", "top_k": 50, "max_tokens": 6}]})
    raw = {"review": tf.io.VarLenFeature(tf.string), "label": tf.io.VarLenFeature(tf.string)}
    metadata = dataset_metadata.DatasetMetadata(schema_utils.schema_from_feature_spec(raw))
    output = str(root / "transform_output")
    with tft_beam.Context(temp_dir=str(root / "tft")):
        transform_fn = ([{"review": [r.encode()] if r else [], "label": [b"pos" if i % 2 else b"neg"]}
                         for i, r in enumerate(REVIEWS)], metadata) | tft_beam.AnalyzeDataset(make_preprocessing_fn(spec))
        _ = transform_fn | tft_beam.WriteTransformFn(output)
    from tensorflow_transform.tf_metadata import metadata_io

    metadata_io.write_metadata(metadata, f"{output}/{tft.TFTransformOutput.RAW_METADATA_DIR}")
    tf_transform_output = tft.TFTransformOutput(output)
    size = tf_transform_output.vocabulary_size_by_name(vocabulary_name("review"))
    model = model_lib.build_model([model_lib.ModelInput("review_xf", size + 1, 12, 6)], model_lib.Head("binary"), [4])
    target = str(root / "model")
    export.export(model, tf_transform_output, spec, target)
    loaded = tf.saved_model.load(target)
    texts = ["Great film!", "not good at all", ""]
    out = tf_serving_rest.predict(loaded, {"signature_name": export.TEXTS_SIGNATURE, "instances": texts})

    def example(text):
        feature = {"review": tf.train.Feature(bytes_list=tf.train.BytesList(value=[text.encode()] if text else []))}
        return tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()

    default = loaded.signatures["serving_default"](examples=tf.constant([example(t) for t in texts]))
    np.testing.assert_allclose(np.asarray(out["probabilities"]).reshape(-1),
                               default["probabilities"].numpy().reshape(-1), rtol=1e-6)
    assert set(out) == set(default)  # the same outputs, class and all, as serving_default
    with pytest.raises(tf_serving_rest.RestError):
        tf_serving_rest.predict(loaded, {"signature_name": export.TEXTS_SIGNATURE, "instances": [{"b64": "no!"}]})
    print("ok")


def test_the_ngrams_a_bag_leans_on_toward_each_class():
    """trainer/text_weights.py: a binary bag's largest linear weights toward the positive class and
    its most negative away from it; a multi-class one's weight against the other classes' mean (an
    n-gram every class weighs alike tells none apart)."""
    from tfxline.trainer import text_weights

    one = text_weights.toward(np.array([[2.0], [-1.5], [0.1], [-0.2]]), ["great", "awful", "the", "a"],
                              ["pos", "not pos"])
    assert one == {"pos": ["great", "the"], "not pos": ["awful", "a"]}
    three = text_weights.toward(np.array([[3.0, 0.0, 0.0], [0.0, 2.0, 0.0], [1.0, 1.0, 1.0]]),
                                ["refund", "thanks", "the"], ["a", "b", "c"])
    assert three == {"a": ["refund"], "b": ["thanks"], "c": []}


@pytest.mark.parametrize("encoder", ["bag", "transformer"])
def test_the_text_encoders_compile_with_xla_under_mixed_precision_and_keep_a_float32_output(encoder):
    """Each encoder's training step XLA-compiled (runtime.jit_compile) under mixed_bfloat16: the loss
    falls on a batch it can learn, and the output is float32 whatever the policy."""
    from tfxline.trainer import model as model_lib
    from tfxline.trainer.keras_compat import keras
    from tfxline.trainer.precision import precision_policy

    k = keras()
    ids = np.full((64, 12), -1, np.int64)
    ids[:, 0] = np.arange(64) % 2  # the first token says the class
    ids[:, 1:4] = 5
    y = (np.arange(64) % 2).astype(np.float32)
    with precision_policy("mixed_bfloat16"):
        model = model_lib.build_model([model_lib.ModelInput("t_xf", 20, 12, 6)], model_lib.Head("binary"), [8],
                                      text_encoder=encoder, text_dim=16)
        model.compile(optimizer=k.optimizers.Adam(0.01), loss="binary_crossentropy", jit_compile=True)
        history = model.fit({"t_xf": ids}, y, epochs=8, batch_size=16, verbose=0).history["loss"]
        out = model({"t_xf": tf.constant(ids)})
    assert out.dtype == tf.float32 and history[-1] < history[0], history


def test_permutation_importance_passes_are_sized_by_a_text_inputs_ids():
    """trainer/importance.py measures many columns in one forward pass of up to 8,192 rows; a text
    row of 704 ids counts as 11 (a 25,000-document bench's Trainer peaked at 3.1 GB on 7,323 rows)."""
    from tfxline.trainer import importance

    assert importance.row_cost({"a_xf": np.zeros(10), "b_xf": np.zeros(10)}) == 1
    assert importance.row_cost({"a_xf": np.zeros(10), "review_xf": np.zeros((10, 704), np.int64)}) == 11


def test_the_text_profile_reads_length_oov_and_commonest_tokens_off_the_ids(analyzed):
    """trainer/text_profile.py, on the Transform's own ids: each document's tokens (at most
    max_tokens 6), the share cut there or empty, the tokens out of the vocabulary (seen in one
    document only: min_count 2) and the commonest, as the run report shows them per text column."""
    from tfxline.trainer import text_profile

    out, output = analyzed
    name = transformed_name("review")
    ids = np.stack([np.asarray(row[name]) for row in out])
    (got,) = text_profile.text_profiles({name: ids}, output, SPEC)
    # tokens: 6 (of 6: "great film ! great cast ."), 6 (of 7), 3, 0, 2, 3, 2, 4: 26 in all
    assert (got["column"], got["documents"], got["cap"]) == ("review", 8, 6)
    assert got["tokens"] == {"p10": 1.4, "p50": 3.0, "p90": 6.0, "max": 6}
    assert (got["at_cap"], got["empty"]) == (2 / 8, 1 / 8)
    # out of vocabulary: "!", "cast", "." (review 0), ",", "at" (1), "a" (5), all four of review 7
    assert got["oov_rate"] == pytest.approx(10 / 26)
    assert got["top_tokens"][0] == ["great", pytest.approx(6 / 26)]
    assert text_profile.text_profiles({}, output, SPEC) == []  # no ids read: nothing to say
    # as the Trainer calls it: its validation batches, the text ids only, at most MAX_DOCUMENTS of them
    batches = tf.data.Dataset.from_tensor_slices(({name: ids, "stars_xf": np.zeros(8, np.float32)},
                                                  np.zeros(8))).batch(3)
    assert text_profile.text_profiles(text_profile.validation_ids(batches, 3, SPEC), output, SPEC) == [got]
    text_profile.MAX_DOCUMENTS = 5
    try:
        assert len(text_profile.validation_ids(batches, 3, SPEC)[name]) == 5
    finally:
        text_profile.MAX_DOCUMENTS = 10_000
    raw = tf.data.Dataset.from_tensor_slices(({name: tf.constant(REVIEWS[:3] + [""] + REVIEWS[4:])}, np.zeros(8)))
    assert text_profile.validation_ids(raw.batch(4), 2, SPEC) == {}  # raw text (a pretrained encoder)


def test_tfdv_natural_language_statistics_of_the_validation_text_are_written_beside_the_model(analyzed, tmp_path):
    """transforms/text_statistics.py through the Trainer's call: TFDV's NLStatsGenerator on the
    documents' tokens as the model reads them (an out-of-vocabulary id written [UNK]) gives the
    profile's figures: the out-of-vocabulary rate (1 - TFDV's feature_coverage), the tokens per
    document and the commonest token; the columns' settings name the vocabulary in the model's assets."""
    from tfxline.trainer import text_profile
    from tfxline.transforms import text_statistics

    out, output = analyzed
    name = transformed_name("review")
    ids = np.stack([np.asarray(row[name]) for row in out])
    text_profile.write_statistics(str(tmp_path), {name: ids}, output, SPEC)
    stats, settings = text_statistics.read_reference(str(tmp_path))
    assert [s["column"] for s in settings] == ["review"] and settings[0]["max_tokens"] == 6
    assert settings[0]["vocabulary"] == os.path.basename(output.vocabulary_file_by_name(vocabulary_name("review")))
    got = text_statistics.figures(stats, "review")
    assert (got["documents"], got["mean_tokens"]) == (8, round(26 / 8, 1))
    assert got["oov_rate"] == pytest.approx(10 / 26, abs=1e-4)
    assert got["top_tokens"][0] == ["great", 6]
    assert text_statistics.read_reference(str(tmp_path / "none")) is None
    text_profile.write_statistics(str(tmp_path / "table"), {}, output, SPEC)  # no text ids: nothing written
    assert text_statistics.read_reference(str(tmp_path / "table")) is None
