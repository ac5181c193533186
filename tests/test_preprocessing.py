"""preprocessing_fn analyzed and applied for real with tft_beam on literal rows."""
import numpy as np
import pytest
import tensorflow as tf
import tensorflow_transform.beam as tft_beam
from tensorflow_transform.tf_metadata import dataset_metadata, schema_utils

from tfxline.transforms.analyzers import AnalyzerValuesError, FrozenAnalyzers, analyzer_name, needed, read_values
from tfxline.transforms.features import FeatureSpec
from tfxline.transforms.preprocessing import MISSING_STRING, Present, hashed_cross, make_preprocessing_fn

SPEC = FeatureSpec.from_dict({
    "label": {"name": "big_tipper", "transform": "ratio_threshold", "numerator": "tips",
              "denominator": "fare", "threshold": 0.2},
    "inputs": [
        {"name": "fare", "transform": "zscore"},
        {"name": "fare_log", "column": "fare", "transform": "log_zscore"},
        {"name": "fare_bucket", "column": "fare", "transform": "bucketize", "num_buckets": 3},
        {"name": "payment_type", "transform": "vocabulary", "top_k": 2, "oov_buckets": 1},
        {"name": "hour", "transform": "identity", "num_buckets": 24},
        {"name": "lat", "transform": "bucketize", "num_buckets": 4},
    ],
    "crosses": [{"name": "pay_x_hour", "inputs": ["payment_type", "hour"], "hash_buckets": 50}],
})

RAW_SPEC = {
    "fare": tf.io.VarLenFeature(tf.float32),
    "tips": tf.io.VarLenFeature(tf.float32),
    "payment_type": tf.io.VarLenFeature(tf.string),
    "hour": tf.io.VarLenFeature(tf.int64),
    "lat": tf.io.VarLenFeature(tf.float32),
}

FARES = [10.0, 20.0, None, 0.0, 30.0, 40.0, 10.0, 50.0]
TIPS = [3.0, 1.0, 5.0, 2.0, 0.0, 9.0, 2.0, 11.0]
PAYMENTS = ["Cash", "Cash", "Credit Card", "Cash", "Credit Card", None, "Dispute", "Cash"]
HOURS = [0, 5, 23, None, 30, 7, 7, -1]
LATS = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, None]


def rows():
    def v(x):
        return [] if x is None else [x]
    return [{"fare": v(f), "tips": v(t), "payment_type": v(p), "hour": v(h), "lat": v(la)}
            for f, t, p, h, la in zip(FARES, TIPS, PAYMENTS, HOURS, LATS)]


@pytest.fixture(scope="module")
def analyzed(tmp_path_factory):
    """(the transformed rows, the Transform output directory)."""
    metadata = dataset_metadata.DatasetMetadata(schema_utils.schema_from_feature_spec(RAW_SPEC))
    output = str(tmp_path_factory.mktemp("transform_output"))
    with tft_beam.Context(temp_dir=str(tmp_path_factory.mktemp("tft"))):
        (out, _), transform_fn = (rows(), metadata) | tft_beam.AnalyzeAndTransformDataset(
            make_preprocessing_fn(SPEC))
        _ = transform_fn | tft_beam.WriteTransformFn(output)
    return out, output


@pytest.fixture(scope="module")
def transformed(analyzed):
    return analyzed[0]


def column(out, name):
    return np.array([r[name] for r in out])


def test_zscore_matches_numpy_and_missing_becomes_zero(transformed):
    out = transformed
    present = np.array([f for f in FARES if f is not None], dtype=np.float32)
    expected = [(f - present.mean()) / present.std() if f is not None else 0.0 for f in FARES]
    np.testing.assert_allclose(column(out, "fare_xf"), expected, rtol=1e-5, atol=1e-6)


def test_one_column_feeds_several_features_log_zscore_and_buckets(transformed):
    """fare as a number, as log1p then z-score, and as quantile buckets; serving needs fare once."""
    out = transformed
    logs = np.log1p(np.array([f for f in FARES if f is not None], dtype=np.float32))
    expected = [(np.log1p(f) - logs.mean()) / logs.std() if f is not None else 0.0 for f in FARES]
    np.testing.assert_allclose(column(out, "fare_log_xf"), expected, rtol=1e-4, atol=1e-5)
    buckets = column(out, "fare_bucket_xf")
    assert set(buckets) <= {0, 1, 2} and buckets[0] < buckets[-1]  # 10 below 50
    assert SPEC.serving_columns.count("fare") == 1


def test_vocabulary_top_k_and_oov(transformed):
    out = transformed
    got = column(out, "payment_type_xf")
    # top_k=2 by frequency: Cash (4) -> 0, Credit Card (2) -> 1; Dispute and missing -> OOV 2.
    assert list(got) == [0, 0, 1, 0, 1, 2, 2, 0]


def test_identity_sends_missing_and_out_of_range_to_default(transformed):
    out = transformed
    assert list(column(out, "hour_xf")) == [0, 5, 23, 0, 0, 7, 7, 0]


def test_bucketize_uses_quantiles_of_present_values(transformed):
    out = transformed
    got = column(out, "lat_xf")
    # Values 1..7 into 4 quantile buckets: monotone, all buckets used, missing (mean 4) in the middle.
    assert list(got[:7]) == sorted(got[:7])
    assert set(got[:7]) == {0, 1, 2, 3}
    assert got[7] == got[3]


def test_label_ratio_threshold_with_zero_and_missing_fare(transformed):
    out = transformed
    # tips > 0.2 * fare; fare missing or 0 -> 0 (ratio undefined).
    assert list(column(out, "big_tipper")) == [1, 0, 0, 0, 0, 1, 0, 1]


def test_cross_is_a_deterministic_hash_in_range(transformed):
    out = transformed
    got = column(out, "pay_x_hour_xf")
    assert got.min() >= 0 and got.max() < 50
    assert got[5] == got[6]  # same (OOV payment, hour 7) pair -> same bucket
    assert len(set(got)) > 3


def test_cross_is_exact_when_the_product_fits_and_spreads_when_hashed():
    a = tf.constant([0, 0, 1, 1, 2, -1], tf.int64)
    b = tf.constant([0, 1, 0, 1, 3, 2], tf.int64)
    exact = hashed_cross([a, b], [3, 4], 20).numpy()  # (3 + 1) * (4 + 1) = 20 cells
    assert len(set(exact.tolist())) == 6 and exact.min() >= 0 and exact.max() < 20
    grid = tf.constant([[i, j] for i in range(100) for j in range(100)], tf.int64)
    hashed = hashed_cross([grid[:, 0], grid[:, 1]], [100, 100], 500).numpy()
    counts = np.bincount(hashed, minlength=500)
    assert hashed.min() >= 0 and hashed.max() < 500
    assert counts.max() <= 3 * counts.mean()  # 10000 pairs spread over the buckets, not piled up


def test_frozen_analyzers_reproduce_the_transform_on_dense_inputs_with_missing_marks(analyzed):
    """The TFLite model's preprocessing: the Transform's values read back from its graph, raw
    columns as dense values with a present mask, must give the Transform's outputs."""
    out, output_dir = analyzed
    frozen = FrozenAnalyzers.load(output_dir, SPEC)
    assert frozen.values[analyzer_name(SPEC.input("fare"), "mean")] == pytest.approx(
        np.mean([f for f in FARES if f is not None]))

    def present(values, missing, dtype):
        mask = [v is not None for v in values]
        return Present(tf.constant([missing if v is None else v for v in values], dtype), tf.constant(mask))

    inputs = {"fare": present(FARES, 0.0, tf.float32), "payment_type": present(PAYMENTS, "", tf.string),
              "hour": present(HOURS, 0, tf.int64), "lat": present(LATS, 0.0, tf.float32)}
    got = make_preprocessing_fn(SPEC, frozen, with_label=False)(inputs)
    assert "big_tipper" not in got
    for name, value in got.items():
        np.testing.assert_allclose(value.numpy(), column(out, name), rtol=1e-6, err_msg=name)


def test_a_transform_output_without_named_analyzers_says_to_rerun(analyzed, tmp_path):
    _, output_dir = analyzed
    other = FeatureSpec.from_dict(dict(SPEC.to_dict(), inputs=[{"name": "tips", "transform": "zscore"}], crosses=[]))
    with pytest.raises(AnalyzerValuesError, match="holds no value for tfxline_analyzer_.*fix: run the pipeline again"):
        read_values(output_dir + "/transform_fn", needed(other))


def test_missing_string_placeholder_is_not_a_real_value():
    assert MISSING_STRING not in PAYMENTS


def _analyze(spec, raw_spec, rows, tmp_path):
    metadata = dataset_metadata.DatasetMetadata(schema_utils.schema_from_feature_spec(raw_spec))
    with tft_beam.Context(temp_dir=str(tmp_path / "tft")):
        (out, _), _ = (rows, metadata) | tft_beam.AnalyzeAndTransformDataset(make_preprocessing_fn(spec))
    return out


def test_whole_numbers_written_as_floats_are_categories_and_classes(tmp_path):
    """pandas writes integers beside empty cells as 81.0: a vocabulary over them, and a class
    label of them, use their integers (a missing value is its own category, not 0)."""
    spec = FeatureSpec.from_dict({"label": {"name": "grade", "transform": "class_vocabulary"},
                                  "inputs": [{"name": "rooms", "transform": "vocabulary", "top_k": 10}]})
    raw = {"rooms": tf.io.VarLenFeature(tf.float32), "grade": tf.io.VarLenFeature(tf.float32)}
    rooms = [3.0, 0.0, None, 3.0, 5.0, 0.0]
    grades = [7.0, 9.0, 7.0, 7.0, 9.0, 8.0]
    out = _analyze(spec, raw, [{"rooms": [] if r is None else [r], "grade": [g]} for r, g in zip(rooms, grades)], tmp_path)
    ids = [row["rooms_xf"] for row in out]
    assert ids[0] == ids[3] and ids[1] == ids[5] and len({ids[0], ids[1], ids[2], ids[4]}) == 4
    classes = [row["grade"] for row in out]
    assert classes[0] == classes[2] == classes[3] and len({classes[0], classes[1], classes[5]}) == 3


def test_a_numeric_binary_label_with_its_positive_value_named(tmp_path):
    spec = FeatureSpec.from_dict({"label": {"name": "y", "transform": "binary", "positive": 2},
                                  "inputs": [{"name": "x", "transform": "zscore"}]})
    raw = {"x": tf.io.VarLenFeature(tf.float32), "y": tf.io.VarLenFeature(tf.float32)}
    out = _analyze(spec, raw, [{"x": [float(i)], "y": [v]} for i, v in enumerate([1.0, 2.0, 2.0, 1.0])], tmp_path)
    assert [row["y"] for row in out] == [0, 1, 1, 0]


def test_numeric_inputs_are_clipped_to_the_widened_training_range(tmp_path):
    """A value 50 standard deviations out (a data-entry error) is the learnt edge: the training
    split's [min, max] widened by 10% of its width each side (log space for log_zscore); the
    frozen analyzers (the TFLite model's preprocessing) read the same range from the Transform."""
    spec = FeatureSpec.from_dict({"label": {"name": "y", "transform": "regression"},
                                  "inputs": [{"name": "x", "transform": "zscore"},
                                             {"name": "x_log", "column": "x", "transform": "log_zscore"}]})
    raw = {"x": tf.io.VarLenFeature(tf.float32), "y": tf.io.VarLenFeature(tf.float32)}
    train = np.arange(1.0, 11.0)
    far = train.mean() + 50 * train.std()
    evaluated = [far, -far, None, 5.0]
    metadata = dataset_metadata.DatasetMetadata(schema_utils.schema_from_feature_spec(raw))
    output = str(tmp_path / "transform_output")
    with tft_beam.Context(temp_dir=str(tmp_path / "tft")):
        transform_fn = ([{"x": [v], "y": [1.0]} for v in train], metadata) | tft_beam.AnalyzeDataset(
            make_preprocessing_fn(spec))
        (out, _) = (([{"x": [] if v is None else [v], "y": [1.0]} for v in evaluated], metadata),
                    transform_fn) | tft_beam.TransformDataset()
        _ = transform_fn | tft_beam.WriteTransformFn(output)
    logs = np.log1p(train)
    edges = (1.0 - 0.9, 10.0 + 0.9)  # [1, 10] widened by 0.9 each side
    log_edges = (logs.min() - 0.1 * np.ptp(logs), logs.max() + 0.1 * np.ptp(logs))
    expected_x = [(edges[1] - train.mean()) / train.std(), (edges[0] - train.mean()) / train.std(), 0.0,
                  (5.0 - train.mean()) / train.std()]
    expected_log = [(log_edges[1] - logs.mean()) / logs.std(), (log_edges[0] - logs.mean()) / logs.std(), 0.0,
                    (np.log1p(5.0) - logs.mean()) / logs.std()]  # -far: log1p(max(x, 0)) = 0, below the edge
    np.testing.assert_allclose(column(out, "x_xf"), expected_x, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(column(out, "x_log_xf"), expected_log, rtol=1e-5, atol=1e-6)

    frozen = FrozenAnalyzers.load(output, spec)
    present = Present(tf.constant([0.0 if v is None else v for v in evaluated], tf.float32),
                      tf.constant([v is not None for v in evaluated]))
    got = make_preprocessing_fn(spec, frozen, with_label=False)({"x": present})
    np.testing.assert_allclose(got["x_xf"].numpy(), column(out, "x_xf"), rtol=1e-6)
    np.testing.assert_allclose(got["x_log_xf"].numpy(), column(out, "x_log_xf"), rtol=1e-6)
    # A Transform written before ranges were learnt clips nothing, and neither does its frozen copy.
    old = FrozenAnalyzers({k: v for k, v in frozen.values.items() if not k.endswith(("_min", "_max"))}, {})
    unclipped = make_preprocessing_fn(spec, old, with_label=False)({"x": present})["x_xf"].numpy()
    assert unclipped[0] == pytest.approx(50.0, rel=1e-4)
