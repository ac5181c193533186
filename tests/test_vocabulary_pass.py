"""transforms/vocabulary_pass.py: every vocabulary in one analyzer, each file the same as
tft.vocabulary writes for the same values (order, ties, top_k, filtered values, integer keys, an
empty vocabulary), so the Trainer and the frozen TFLite preprocessing read it unchanged."""
import os

import pytest
import tensorflow as tf
import tensorflow_transform as tft
import tensorflow_transform.beam as tft_beam
from tensorflow_transform.tf_metadata import dataset_metadata, schema_utils

from tfxline.transforms import vocabulary_pass
from tfxline.transforms.analyzers import TftAnalyzers
from tfxline.transforms.features import FeatureSpec, InputFeature
from tfxline.transforms.preprocessing import make_preprocessing_fn

# ties (b and c twice, a three times), an empty value and a multi-line one (tft writes neither),
# an integer column, a column with no value tft would write (an empty vocabulary: its dummy)
ROWS = [{"t": t, "n": n, "e": b"", "y": 1.0} for t, n in zip(
    [b"a", b"b", b"c", b"a", b"", b"x\ny", b"c", b"b", b"a", b"d"], [3, 1, 3, 2, 7, 7, 7, 1, 3, 0])]
SPEC = {"t": tf.io.FixedLenFeature([], tf.string), "n": tf.io.FixedLenFeature([], tf.int64),
        "e": tf.io.FixedLenFeature([], tf.string), "y": tf.io.FixedLenFeature([], tf.float32)}
TOP_K = {"t": 3, "n": 10, "e": 5}
OOV = {"t": 3, "n": 1, "e": 0}


def analyze(fn, tmp_path, batch_size=3):
    metadata = dataset_metadata.DatasetMetadata(schema_utils.schema_from_feature_spec(SPEC))
    with tft_beam.Context(temp_dir=str(tmp_path / "tft"), desired_batch_size=batch_size):
        (out, _), transform_fn = (ROWS, metadata) | tft_beam.AnalyzeAndTransformDataset(fn)
        _ = transform_fn | tft_beam.WriteTransformFn(str(tmp_path / "out"))
    return out, tft.TFTransformOutput(str(tmp_path / "out"))


@pytest.mark.parametrize("batch_size", [3, 100])  # counts merged across batches; one batch
def test_each_file_and_id_is_what_tft_vocabulary_gives(tmp_path, batch_size):
    """The files, and the ids the one table of all vocabularies gives, with 3, 1 and no
    out-of-vocabulary buckets (hashed, one, -1)."""
    def fn(inputs):
        features = [InputFeature(name=k, transform="vocabulary", top_k=top_k, oov_buckets=OOV[k])
                    for k, top_k in TOP_K.items()]
        analyzers, keys = TftAnalyzers(), [inputs[k] for k in TOP_K]
        analyzers.learn_vocabularies(features, keys)
        out = {}
        for k, ids in zip(TOP_K, analyzers.vocabulary_ids(features, keys, keys)):
            out[f"ours_{k}"] = ids
            out[f"theirs_{k}"] = tft.compute_and_apply_vocabulary(inputs[k], top_k=TOP_K[k], num_oov_buckets=OOV[k],
                                                                  vocab_filename=f"theirs_{k}")
        return out

    out, output = analyze(fn, tmp_path, batch_size)
    for k in TOP_K:
        ours, theirs = output.vocabulary_by_name(f"{k}_vocab"), output.vocabulary_by_name(f"theirs_{k}")
        assert ours == theirs, (k, ours, theirs)
        assert [row[f"ours_{k}"] for row in out] == [row[f"theirs_{k}"] for row in out], k
    assert output.vocabulary_by_name("t_vocab") == [b"a", b"c", b"b"]   # top 3, ties by the larger value
    assert output.vocabulary_by_name("e_vocab") == [vocabulary_pass.EMPTY_STRING_DUMMY]
    unseen = {row["ours_t"] for row in out} - {0, 1, 2}   # d, x\ny and '': hashed into the 3 buckets after a, c, b
    assert unseen and unseen <= {3, 4, 5}
    assert {row["ours_e"] for row in out} == {-1}


def test_the_preprocessing_learns_every_vocabulary_in_one_analyzer(tmp_path):
    """Three vocabulary features, one ptransform analyzer, and no tft.vocabulary of their own."""
    spec = FeatureSpec.from_dict({"label": {"name": "y", "transform": "regression"}, "inputs": [
        {"name": "t", "transform": "vocabulary", "top_k": 3}, {"name": "n_code", "column": "n", "transform": "vocabulary"},
        {"name": "e", "transform": "vocabulary"}]})
    traced = {}

    def fn(inputs):
        out = make_preprocessing_fn(spec)(inputs)
        # names only: Beam pickles this function, and the dict with it
        traced["ops"] = [op.name for op in tf.compat.v1.get_default_graph().get_operations()]
        return out

    out, output = analyze(fn, tmp_path)
    ops = traced["ops"]
    assert len({n.split("/")[0] for n in ops if "vocabulary_pass" in n}) == 1
    scopes = {part for n in ops for part in n.split("/")}
    assert not scopes & {"vocabulary", "compute_and_apply_vocabulary"}, scopes   # tft.vocabulary's own
    assert output.vocabulary_by_name("t_vocab") == [b"a", b"c", b"b"]
    assert output.vocabulary_size_by_name("n_code_vocab") == 5
    assert {row["t_xf"] for row in out} == {0, 1, 2, 3}   # d, x\ny and '' share the one OOV bucket
    assert os.path.basename(output.vocabulary_file_by_name("e_vocab")) == "e_vocab"
