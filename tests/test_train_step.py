"""The training step: gradient accumulation against a plain large-batch run on the same data
and start weights; training without the training-batch metrics against Keras' own step.

N micro-batches of B accumulated must give the same updates as one batch of N x B; the
control (plain batches of B, same number of examples) must not, or the test proves nothing.
"""
import numpy as np
import pytest
import tensorflow as tf

from tfxline.trainer import precision
from tfxline.trainer.train_step import training_model
from tfxline.patches.autograph import skip_autograph_for_libraries
from tfxline.trainer.keras_compat import keras
from tfxline.trainer.model import Head, build_model, loss_and_metrics
from tests.synthetic import INPUTS, dataset, max_diff

MICRO, N = 32, 4
skip_autograph_for_libraries()  # as run_fn does; else tracing re-parses tf_keras' source


def trained_weights(batch_size, accumulation, initial, epochs=2, train_metrics=True, validation=None):
    model = build_model(INPUTS, Head("binary"), hidden_units=(16, 8))
    model.set_weights(initial)
    trainable = training_model(model, accumulation, train_metrics)
    loss, metrics = loss_and_metrics(Head("binary"))
    trainable.compile(optimizer=keras().optimizers.Adam(0.01), loss=loss, metrics=metrics)
    history = trainable.fit(dataset(batch_size), epochs=epochs, verbose=0, validation_data=validation)
    return model.get_weights(), history.history


@pytest.fixture(scope="module")
def initial():
    tf.keras.utils.set_random_seed(3)
    return build_model(INPUTS, Head("binary"), hidden_units=(16, 8)).get_weights()


def test_accumulated_micro_batches_equal_one_large_batch(initial):
    accumulated, hist_acc = trained_weights(MICRO * N, N, initial)
    large, hist_large = trained_weights(MICRO * N, 1, initial)
    small, _ = trained_weights(MICRO, 1, initial)
    assert max_diff(initial, large) > 1e-2  # the model did train
    assert max_diff(accumulated, large) < 1e-5
    assert max_diff(small, large) > 1e-2  # control: plain small batches really differ
    # The reported metrics are those of the whole batch, not of the last micro-batch.
    np.testing.assert_allclose(hist_acc["auc"], hist_large["auc"], rtol=1e-4)
    np.testing.assert_allclose(hist_acc["loss"], hist_large["loss"], rtol=1e-4)


def test_the_model_only_ever_sees_micro_batches():
    k = keras()
    seen = []

    class Probe(k.layers.Layer):
        def call(self, x):
            seen.append(x.shape[0])  # traced shape: the batch size the layer is built for
            return x

    inp = k.Input(shape=(1,), name="x")
    model = k.Model(inp, k.layers.Dense(1)(Probe()(inp)))
    trainable = training_model(model, N)
    trainable.compile(optimizer="sgd", loss="mse")
    x = np.arange(MICRO * N, dtype="float32").reshape(-1, 1)
    trainable.fit(tf.data.Dataset.from_tensor_slices((x, x)).batch(MICRO * N), epochs=1, verbose=0)
    assert seen and all(s in (None, MICRO) for s in seen)


def test_accumulation_with_float16_loss_scaling_trains(initial):
    with precision.precision_policy("mixed_float16"):
        model = build_model(INPUTS, Head("binary"), hidden_units=(16, 8))
        model.set_weights(initial)
        trainable = training_model(model, N)
        loss, metrics = loss_and_metrics(Head("binary"))
        optimizer = precision.wrap_optimizer(keras().optimizers.Adam(0.01), "mixed_float16")
        trainable.compile(optimizer=optimizer, loss=loss, metrics=metrics)
        history = trainable.fit(dataset(MICRO * N), epochs=3, verbose=0).history
    assert np.all(np.isfinite(history["loss"])) and history["loss"][-1] < history["loss"][0]


@pytest.mark.parametrize("accumulation", [1, N])
def test_without_train_metrics_the_same_training_and_validation_metrics(initial, accumulation):
    validation = dataset(MICRO * N).take(2)
    plain, hist_plain = trained_weights(MICRO * N, accumulation, initial, validation=validation)
    lean, hist_lean = trained_weights(MICRO * N, accumulation, initial, train_metrics=False, validation=validation)
    assert max_diff(initial, plain) > 1e-2
    assert max_diff(lean, plain) < 1e-6  # the same updates: only what is measured differs
    assert set(hist_lean) == {"loss", "val_loss", "val_auc", "val_accuracy"}
    assert "auc" in hist_plain
    for key in hist_lean:
        np.testing.assert_allclose(hist_lean[key], hist_plain[key], rtol=1e-5)


def test_one_step_with_train_metrics_means_the_plain_model():
    model = build_model(INPUTS, Head("binary"), hidden_units=(4,))
    assert training_model(model, 1) is model
    assert training_model(model, 1, train_metrics=False) is not model
    with pytest.raises(ValueError, match=">= 1"):
        training_model(model, 0)


def test_jit_compiled_training_step_trains(initial):
    model = build_model(INPUTS, Head("binary"), hidden_units=(16, 8))
    model.set_weights(initial)
    trainable = training_model(model, N)
    loss, metrics = loss_and_metrics(Head("binary"))
    trainable.compile(optimizer=keras().optimizers.Adam(0.01), loss=loss, metrics=metrics,
                      jit_compile=True)
    history = trainable.fit(dataset(MICRO * N), epochs=3, verbose=0).history
    assert history["loss"][-1] < history["loss"][0]
