"""The training step, where it differs from Keras' own: gradient accumulation, and training
without the compiled metrics on the training batches.

``training_model(model, accumulation_steps, train_metrics)`` returns the Keras model to
compile and fit in place of ``model``: ``model`` itself for Keras' usual step, else a wrapper
(holding no weights of its own; checkpoint and export the inner model).

Gradient accumulation (N > 1): the update of an N x larger batch at the memory of one
micro-batch. The wrapper is fed batches of N micro-batches (the input pipeline batches
``N x batch_size`` per replica). Each step walks the micro-batches in order in a
``tf.while_loop`` (one iteration at a time, so only one micro-batch's activations are alive),
sums their gradients and applies the mean once: the optimizer sees exactly the gradient of
the whole batch (the loss is a per-micro-batch mean of equal-size micro-batches), called once
per step, unconditionally, which keeps every tf.distribute strategy's cross-replica reduction
in its usual place.

Training metrics off: the step updates only the loss; the compiled metrics (AUC, accuracy)
are computed on the validation data only, which is all early stopping and the report's
validation curves read. AUC and accuracy on every training batch are several kernels per step
(bench/gpu_bench.py's "no metrics" row measures them).
"""
from __future__ import annotations

import functools

import tensorflow as tf

from tfxline.trainer.keras_compat import keras


def training_model(model, accumulation_steps: int = 1, train_metrics: bool = True):
    """``model`` itself for Keras' usual step, else the wrapper that implements the step."""
    if accumulation_steps < 1:
        raise ValueError(f"gradient accumulation steps must be >= 1, got {accumulation_steps}")
    if accumulation_steps == 1 and train_metrics:
        return model
    return _model_class()(model, accumulation_steps, train_metrics)


@functools.lru_cache(maxsize=None)
def _model_class():
    k = keras()

    class TrainingModel(k.Model):
        def __init__(self, inner, accumulation_steps: int, train_metrics: bool):
            super().__init__(name=f"{inner.name}_training")
            self.inner = inner
            self.accumulation_steps = accumulation_steps
            self.train_metrics = train_metrics

        def call(self, inputs, training=None):
            return self.inner(inputs, training=training)

        def train_step(self, data):
            x, y, sample_weight = k.utils.unpack_x_y_sample_weight(data)
            if self.accumulation_steps == 1:
                with tf.GradientTape() as tape:
                    y_pred = self(x, training=True)
                    loss = self.compute_loss(x, y, y_pred, sample_weight)
                self.optimizer.minimize(loss, self.trainable_variables, tape=tape)
            else:
                y_pred = self._accumulated_step(x, y, sample_weight)
            if self.train_metrics:
                return self.compute_metrics(x, y, y_pred, sample_weight)
            # compute_loss updated the loss tracker; the compiled metrics wait for validation.
            return {m.name: m.result() for m in self.compiled_loss.metrics}

        def _accumulated_step(self, x, y, sample_weight):
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
                # Embedding gradients may arrive as IndexedSlices; summing needs them dense.
                grads = [g + tf.convert_to_tensor(s) for g, s in zip(grads, step_grads)]
                return i + 1, grads, predictions.write(i, prediction)

            zeros = [tf.zeros_like(v) for v in variables]
            predictions = tf.TensorArray(self.inner.output.dtype, size=n)
            _, grads, predictions = tf.while_loop(
                lambda i, *_: i < n, body, (tf.constant(0), zeros, predictions),
                parallel_iterations=1)  # one micro-batch at a time: that bounds the memory
            optimizer.apply_gradients(zip([g / n for g in grads], variables))
            # The whole batch's predictions, in the original row order (for the metrics).
            stacked = predictions.stack()
            return tf.reshape(stacked, tf.concat([[-1], tf.shape(stacked)[2:]], axis=0))

    return TrainingModel


# Ops that launch no device kernel of their own (constants, reads and handles, plumbing).
NO_KERNEL_OPS = frozenset({"Const", "NoOp", "Identity", "IdentityN", "Placeholder", "ReadVariableOp",
                           "VarHandleOp", "StopGradient", "_Arg", "_Retval"})


def step_kernel_ops(trained_model) -> int:
    """The ops one compiled training step runs that launch a kernel: what a launch-bound GPU
    pays per step (bench/gpu_bench.py's "ops" column). ``trained_model``: a compiled model
    that has trained at least one step (its train function is traced), with steps_per_execution
    1 (else the loop's ops are counted too)."""
    function = trained_model.train_function
    if function is None:
        raise ValueError("the model has not trained yet: its train function is not traced")
    # A first trace that creates variables (optimizer slots) is traced again without: the
    # step that runs from then on is the smaller one.
    return min(_kernel_ops(f.graph) for f in function._list_all_concrete_functions())


def _kernel_ops(graph, seen=None) -> int:
    seen = set() if seen is None else seen
    count = sum(op.type not in NO_KERNEL_OPS for op in graph.get_operations())
    for name, nested in graph._functions.items():  # while/cond bodies, custom gradients
        if name not in seen and hasattr(nested, "graph"):
            seen.add(name)
            count += _kernel_ops(nested.graph, seen)
    return count
