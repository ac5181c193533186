"""The model builder on literal inputs: no artifacts, no Transform output needed."""
import numpy as np
import pytest
import tensorflow as tf

from tfxline.trainer import precision
from tfxline.trainer.model import Head, ModelInput, build_model, embedding_dim, loss_and_metrics

INPUTS = [ModelInput("fare"), ModelInput("payment_type", 5), ModelInput("hour", 24)]


def batch(n=6):
    return {"fare": tf.constant(np.linspace(-1, 1, n), tf.float32),
            "payment_type": tf.constant([0, 1, 2, 3, 4, 0], tf.int64)[:n],
            "hour": tf.constant([0, 5, 10, 15, 20, 23], tf.int64)[:n]}


@pytest.mark.parametrize("head, shape", [(Head("binary"), (6, 1)), (Head("multiclass", 3), (6, 3)),
                                         (Head("regression"), (6, 1))])
def test_heads_produce_the_right_shape(head, shape):
    model = build_model(INPUTS, head, hidden_units=(8,))
    out = model(batch())
    assert out.shape == shape
    assert out.dtype == tf.float32
    if head.task == "binary":
        assert np.all((out.numpy() >= 0) & (out.numpy() <= 1))
    if head.task == "multiclass":
        np.testing.assert_allclose(out.numpy().sum(axis=1), 1.0, rtol=1e-5)


def test_a_regression_head_starts_at_the_labels_scale():
    """label_mean + label_scale * the network: a label in thousands (grams, seconds) is a
    standardised target for the network, and the untrained model already predicts near its mean."""
    plain = build_model(INPUTS, Head("regression"), hidden_units=(8,))
    tf.keras.utils.set_random_seed(1)
    scaled = build_model(INPUTS, Head("regression", label_mean=4200.0, label_scale=800.0), hidden_units=(8,))
    tf.keras.utils.set_random_seed(1)
    same = build_model(INPUTS, Head("regression"), hidden_units=(8,))
    np.testing.assert_allclose(scaled(batch()).numpy(), 4200.0 + 800.0 * same(batch()).numpy(), rtol=1e-5)
    assert "label_scale" in {layer.name for layer in scaled.layers}
    assert "label_scale" not in {layer.name for layer in plain.layers}


def test_label_moments_read_the_label_alone(tmp_path):
    from tfxline.trainer.data import label_moments, parser

    path = str(tmp_path / "part.gz")
    values = np.linspace(1000.0, 5000.0, 101)
    with tf.io.TFRecordWriter(path, options="GZIP") as w:
        for v in values:
            w.write(tf.train.Example(features=tf.train.Features(feature={
                "y": tf.train.Feature(float_list=tf.train.FloatList(value=[v])),
                "x": tf.train.Feature(int64_list=tf.train.Int64List(value=[1]))})).SerializeToString())
    mean, std, low, high = label_moments([path], "y", parser({"y": tf.io.FixedLenFeature([], tf.float32),
                                                             "x": tf.io.FixedLenFeature([], tf.int64)}))
    assert mean == pytest.approx(values.mean(), rel=1e-6) and std == pytest.approx(values.std(), rel=1e-5)
    assert (low, high) == (1000.0, 5000.0)


def test_a_regression_output_stays_inside_the_labels_widened_range():
    """An input 50 standard deviations out (a data-entry error) goes through the network's linear
    extrapolation; the output is clipped to the label's training range widened by 10% each side."""
    tf.keras.utils.set_random_seed(3)
    head = Head("regression", label_mean=3000.0, label_scale=800.0, label_min=1000.0, label_max=5000.0)
    model = build_model(INPUTS, head, hidden_units=(8,))
    assert model.get_layer("label_range").get_config()["low"] == pytest.approx(600.0)
    far = dict(batch(2), fare=tf.constant([50.0, -50.0]))
    bounded = model(far).numpy()
    assert np.all((bounded >= 600.0) & (bounded <= 5400.0))
    unbounded = build_model(INPUTS, Head("regression", label_mean=3000.0, label_scale=800.0), hidden_units=(8,))
    unbounded.set_weights(model.get_weights())  # the same network without the range: an old head still builds
    raw = unbounded(far).numpy()
    assert np.abs(raw - 3000.0).max() > 2400.0  # what the clip stopped
    np.testing.assert_allclose(bounded, np.clip(raw, 600.0, 5400.0), rtol=1e-6)
    with tf.GradientTape() as tape:  # outside the range it still learns towards its label
        loss = tf.reduce_sum(model(far))
    assert all(g is not None and float(tf.reduce_sum(tf.abs(g))) > 0
               for g in tape.gradient(loss, model.trainable_weights)[-2:])


def test_categoricals_share_one_table_per_part_with_per_feature_offsets():
    """One gather for the deep part and one for the wide part, whatever the feature count:
    feature i's index j is row offsets[i] + j of one table."""
    model = build_model(INPUTS, Head("binary"), hidden_units=(8, 4))
    names = {layer.name for layer in model.layers}
    assert {"categorical_indices", "embeddings", "wide", "numerics", "deep_0", "deep_1", "prediction"} <= names
    embeddings = model.get_layer("embeddings")
    assert embeddings.table.shape == (5 + 24, embedding_dim(24, 16))
    assert model.get_layer("wide").table.shape == (5 + 24, 1)
    rows = embeddings(tf.constant([[1, 2], [4, 23]], tf.int64)).numpy()
    table = embeddings.table.numpy()
    np.testing.assert_array_equal(rows[0], table[[1, 5 + 2]])
    np.testing.assert_array_equal(rows[1], table[[4, 5 + 23]])
    # An out-of-range index stays inside its own feature's rows.
    np.testing.assert_array_equal(embeddings(tf.constant([[9, -3]], tf.int64)).numpy()[0], table[[4, 5]])
    gathers = [op for op in tf.function(model).get_concrete_function(
        {k: tf.TensorSpec(v.shape, v.dtype) for k, v in batch().items()}).graph.get_operations()
        if op.type in ("GatherV2", "ResourceGather")]
    assert len(gathers) == 2


def test_batch_norm_and_dropout_layers_when_asked():
    model = build_model(INPUTS, Head("binary"), hidden_units=(8,), dropout=0.2, batch_norm=True)
    names = {layer.name for layer in model.layers}
    assert {"deep_0_bn", "deep_0_dropout"} <= names
    assert model(batch(), training=True).shape == (6, 1)


@pytest.mark.parametrize("policy", ["mixed_float16", "mixed_bfloat16"])
def test_mixed_precision_keeps_float32_output_and_restores_policy(policy):
    from tfxline.trainer.keras_compat import keras

    before = keras().mixed_precision.global_policy().name
    with precision.precision_policy(policy):
        model = build_model(INPUTS, Head("binary"), hidden_units=(8,))
        assert model.get_layer("deep_0").compute_dtype != "float32"
        assert model(batch()).dtype == tf.float32
    assert keras().mixed_precision.global_policy().name == before


def test_model_trains_on_a_separable_toy_problem():
    tf.keras.utils.set_random_seed(0)
    model = build_model(INPUTS, Head("binary"), hidden_units=(8,))
    loss, metrics = loss_and_metrics(Head("binary"))
    model.compile(optimizer=tf.keras.optimizers.Adam(0.05), loss=loss, metrics=metrics)
    x = batch()
    y = tf.constant([0, 0, 0, 1, 1, 1], tf.int64)
    first = model.evaluate(x, y, verbose=0)[0]
    model.fit(x, y, epochs=40, verbose=0)
    assert model.evaluate(x, y, verbose=0)[0] < first * 0.5


def test_autograph_skip_rule_is_added_once():
    from tensorflow.python.autograph.core import config as autograph_config

    from tfxline.patches.autograph import skip_autograph_for_libraries

    skip_autograph_for_libraries()
    skip_autograph_for_libraries()
    prefixes = [getattr(r, "_prefix", None) for r in autograph_config.CONVERSION_RULES]
    assert prefixes.count("tf_keras") == 1 and prefixes.count("tensorflow_transform") == 1


def test_embedding_gradient_is_dense_and_equals_the_plain_gather_gradient():
    """One segment sum, not IndexedSlices (XLA's sparse-update path measured ~200x slower);
    the values are those of tf.gather's own gradient, duplicates summed."""
    from tfxline.trainer.embedding_ops import gather_with_dense_gradient

    table = tf.Variable(np.arange(12, dtype=np.float32).reshape(6, 2))
    rows = tf.constant([[0, 3], [3, 5]], tf.int64)
    weights = tf.constant(np.arange(8, dtype=np.float32).reshape(2, 2, 2))
    with tf.GradientTape(persistent=True) as tape:
        ours = tf.reduce_sum(gather_with_dense_gradient(table, rows) * weights)
        plain = tf.reduce_sum(tf.gather(table, rows) * weights)
    dense = tape.gradient(ours, table)
    assert isinstance(dense, tf.Tensor)
    np.testing.assert_allclose(dense.numpy(), tf.convert_to_tensor(tape.gradient(plain, table)).numpy())
    assert float(ours) == float(plain)
