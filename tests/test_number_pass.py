"""transforms/number_pass.py: every numeric feature's mean, variance, range and quantile
boundaries from one analyzer of each kind, equal to tft's own per-feature analyzers over each
column's present values (the way the preprocessing learnt them before, one analyzer each), and
read back per feature from the Transform output (the frozen TFLite preprocessing, the report)."""
import numpy as np
import pytest
import tensorflow as tf
import tensorflow_transform as tft
import tensorflow_transform.beam as tft_beam
from tensorflow_transform.tf_metadata import dataset_metadata, schema_utils

from tfxline.transforms import analyzers, number_pass
from tfxline.transforms.features import FeatureSpec
from tfxline.transforms.preprocessing import make_preprocessing_fn, measured_values

RNG = np.random.default_rng(3)
N = 300
COLUMNS = {"a": RNG.normal(5, 2, N), "b": RNG.lognormal(0, 1.5, N), "c": RNG.uniform(-3, 9, N)}
# c: absent from every row of the first two batches (64 rows each), present after
MISSING = {"a": RNG.random(N) < 0.1, "b": RNG.random(N) < 0.4, "c": np.arange(N) < 150}
SPEC = FeatureSpec.from_dict({"label": {"name": "y", "transform": "regression"}, "inputs": [
    {"name": "a", "transform": "zscore"}, {"name": "b", "transform": "log_zscore"},
    {"name": "b_bucket", "column": "b", "transform": "bucketize", "num_buckets": 8},
    {"name": "c_bucket", "column": "c", "transform": "bucketize", "num_buckets": 8},
    {"name": "a_bucket", "column": "a", "transform": "bucketize", "num_buckets": 5}]})
RAW = {**{k: tf.io.VarLenFeature(tf.float32) for k in COLUMNS}, "y": tf.io.FixedLenFeature([], tf.float32)}


def rows():
    return [{**{k: [] if MISSING[k][i] else [float(v[i])] for k, v in COLUMNS.items()}, "y": 1.0} for i in range(N)]


def analyze(fn, tmp_path):
    metadata = dataset_metadata.DatasetMetadata(schema_utils.schema_from_feature_spec(RAW))
    with tft_beam.Context(temp_dir=str(tmp_path / "tft"), desired_batch_size=64):  # merged across batches
        (out, _), transform_fn = (rows(), metadata) | tft_beam.AnalyzeAndTransformDataset(fn)
        _ = transform_fn | tft_beam.WriteTransformFn(str(tmp_path / "out"))
    return out[0]


def test_the_statistics_equal_tfts_own_per_feature_analyzers(tmp_path):
    numeric = number_pass.numeric_features(SPEC.inputs)

    def fn(inputs):
        measured = [measured_values(f, inputs[f.source]) for f in numeric]
        vectors, boundaries = number_pass.learn(numeric, tf.stack([m.values for m in measured], axis=1),
                                                tf.stack([m.present for m in measured], axis=1))
        learnt = {f.name: {kind: vectors[kind][i] for kind in number_pass.KINDS} for i, f in enumerate(numeric)}
        for num_buckets, indices in number_pass.bucket_groups(numeric).items():
            learnt.update({numeric[i].name: {**learnt[numeric[i].name], "boundaries": boundaries[num_buckets][row]}
                           for row, i in enumerate(indices)})
        out = {}
        for f, m in zip(numeric, measured):
            values = tf.boolean_mask(m.values, m.present)   # the column's present values, as before
            theirs = {"mean": tft.mean(values), "var": tft.var(values), "max": tft.max(values),
                      "negated_min": tft.max(-values)}
            if f.transform == "bucketize":
                theirs["boundaries"] = tft.quantiles(values, f.num_buckets, epsilon=0.01 / f.num_buckets)
            for kind, value in theirs.items():
                out[f"{f.name}/{kind}/ours"] = tf.reshape(learnt[f.name][kind], [1, -1])
                out[f"{f.name}/{kind}/theirs"] = tf.reshape(value, [1, -1])
        size = tf.shape(inputs["y"])[0]
        return {k: tf.tile(v, [size, 1]) for k, v in out.items()}

    row = analyze(fn, tmp_path)
    ours = {k[:-len("/ours")]: v for k, v in row.items() if k.endswith("/ours")}
    assert len(ours) == 4 * 5 + 3
    for key, value in ours.items():
        np.testing.assert_allclose(value, row[key + "/theirs"], rtol=1e-5, err_msg=key)
    present_a = COLUMNS["a"][~MISSING["a"]]
    assert ours["a/mean"][0] == pytest.approx(present_a.mean(), rel=1e-5)     # the absent cells are not zeros
    assert -ours["a/negated_min"][0] == pytest.approx(present_a.min(), rel=1e-5)


def test_the_preprocessing_learns_them_in_one_analyzer_of_each_kind_and_reads_them_back(tmp_path):
    traced = {}

    def fn(inputs):
        out = make_preprocessing_fn(SPEC)(inputs)
        traced["ops"] = [op.name for op in tf.compat.v1.get_default_graph().get_operations()]   # names only: pickled
        return out

    analyze(fn, tmp_path)
    scopes = {n.split("/")[0] for n in traced["ops"]}
    for kind in ("mean", "var", "max", "quantiles"):   # one per kind; quantiles one per num_buckets (8 and 5)
        assert len({s for s in scopes if s == kind or s.startswith(kind + "_")}) == (2 if kind == "quantiles" else
                                                                                       1 + (kind == "max")), scopes
    spec_values = analyzers.feature_values(str(tmp_path / "out" / "transform_fn"), SPEC,
                                           analyzers.needed(SPEC), analyzers.optional(SPEC))
    assert spec_values[analyzers.analyzer_name(SPEC.input("a"), "mean")] == pytest.approx(
        COLUMNS["a"][~MISSING["a"]].mean(), rel=1e-5)
    assert len(spec_values[analyzers.analyzer_name(SPEC.input("a_bucket"), "boundaries")]) == 4
    assert len(spec_values[analyzers.analyzer_name(SPEC.input("c_bucket"), "boundaries")]) == 7
