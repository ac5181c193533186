"""Gradient accumulation: the update of an N x larger batch at the memory of one micro-batch.

``with_gradient_accumulation(model, n)`` returns a Keras model to compile and fit in
place of ``model``. It is fed batches of ``n`` micro-batches (the input pipeline batches
``n x batch_size`` per replica). Each training step walks the micro-batches in order in a
``tf.while_loop`` (one iteration at a time, so only one micro-batch's activations are
alive), sums their gradients, and applies the mean once. The optimizer therefore sees
exactly the gradient of the whole batch (the loss is a per-micro-batch mean of equal-size
micro-batches), and it is called once per step, unconditionally, which keeps the
cross-replica reduction of every tf.distribute strategy in its usual place.

The wrapper holds no weights of its own; export the inner model.
"""
from __future__ import annotations

import functools

import tensorflow as tf

from trainer.keras_compat import keras


def with_gradient_accumulation(model, steps: int):
    """``model`` itself when ``steps`` is 1, else a wrapper that accumulates ``steps``."""
    if steps < 1:
        raise ValueError(f"gradient accumulation steps must be >= 1, got {steps}")
    return model if steps == 1 else _model_class()(model, steps)


@functools.lru_cache(maxsize=None)
def _model_class():
    k = keras()

    class GradientAccumulationModel(k.Model):
        def __init__(self, inner, steps: int):
            super().__init__(name=f"{inner.name}_accumulating")
            self.inner = inner
            self.accumulation_steps = steps

        def call(self, inputs, training=None):
            return self.inner(inputs, training=training)

        def train_step(self, data):
            x, y, sample_weight = k.utils.unpack_x_y_sample_weight(data)
            n = self.accumulation_steps
            variables = self.trainable_variables
            optimizer = self.optimizer
            loss_scaled = isinstance(optimizer, k.mixed_precision.LossScaleOptimizer)

            def split(t):  # [n * micro, ...] -> [n, micro, ...]: static shapes for XLA
                return None if t is None else tf.reshape(
                    t, tf.concat([[n, tf.shape(t)[0] // n], tf.shape(t)[1:]], axis=0))

            xs, ys, ws = tf.nest.map_structure(split, (x, y, sample_weight))

            def body(i, grads, predictions):
                xi, yi, wi = tf.nest.map_structure(
                    lambda t: None if t is None else tf.gather(t, i), (xs, ys, ws))
                with tf.GradientTape() as tape:
                    prediction = self(xi, training=True)
                    loss = self.compute_loss(xi, yi, prediction, wi)
                    if loss_scaled:
                        loss = optimizer.get_scaled_loss(loss)
                step_grads = tape.gradient(loss, variables)
                if loss_scaled:
                    step_grads = optimizer.get_unscaled_gradients(step_grads)
                # Embedding gradients arrive as IndexedSlices; summing needs them dense.
                grads = [g + tf.convert_to_tensor(s) for g, s in zip(grads, step_grads)]
                return i + 1, grads, predictions.write(i, prediction)

            zeros = [tf.zeros_like(v) for v in variables]
            predictions = tf.TensorArray(self.inner.output.dtype, size=n)
            _, grads, predictions = tf.while_loop(
                lambda i, *_: i < n, body, (tf.constant(0), zeros, predictions),
                parallel_iterations=1)  # one micro-batch at a time: that bounds the memory
            optimizer.apply_gradients(zip([g / n for g in grads], variables))
            # Metrics over the whole batch, in the original row order.
            stacked = predictions.stack()
            y_pred = tf.reshape(stacked, tf.concat([[-1], tf.shape(stacked)[2:]], axis=0))
            return self.compute_metrics(x, y, y_pred, sample_weight)

    return GradientAccumulationModel
