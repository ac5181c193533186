"""Text inputs: the spec's rules, and the Transform's n-gram ids analysed and applied for real with
tft_beam on literal rows (transforms/text.py)."""
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
    not_good = np.asarray(out[4][name])  # "Not good": not, good, then the 2-gram, then padding
    assert list(not_good[:3]) == [index[b"not"], index[b"good"], index[b"not good"]]
    assert list(not_good[3:]) == [text_lib.PAD] * 9
    assert list(np.asarray(out[3][name])) == [text_lib.PAD] * 12  # a missing review: an empty document
    unseen = np.asarray(out[7][name])
    assert list(unseen[:4]) == [size] * 4 and unseen[4] == size  # out of vocabulary: the one OOV bucket
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
