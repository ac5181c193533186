"""The wide-and-deep Keras model over the transformed features.

No artifact I/O here: the model is built from literal ``ModelInput``s (name and
cardinality), so a unit test can build and call it on literal tensors.
"""
from __future__ import annotations

import dataclasses
import functools
import math
import weakref
from typing import Any, Optional, Sequence

import numpy as np
import tensorflow as tf

from tfxline import task_types
from tfxline.patches import tf_custom_gradients  # noqa: F401 - its exit hook: our custom gradients' graphs go before TF does
from tfxline.trainer import text as text_lib
from tfxline.trainer.embedding_ops import gather_with_dense_gradient
from tfxline.trainer.keras_compat import keras
from tfxline.transforms.preprocessing import widened


@dataclasses.dataclass(frozen=True)
class ModelInput:
    """One transformed feature: categorical when ``cardinality`` is set, else numeric; text when
    ``length`` is set too ([length] n-gram ids of ``cardinality`` values, its first ``tokens`` the
    document's tokens in order: transforms/text.py)."""

    name: str
    cardinality: Optional[int] = None
    length: Optional[int] = None
    tokens: Optional[int] = None
    raw_text: bool = False  # the [batch] text itself, for a pretrained encoder (trainer/text_pretrained.py)

    @property
    def is_text(self) -> bool:
        return self.length is not None or self.raw_text

    @property
    def is_categorical(self) -> bool:
        return self.cardinality is not None and not self.is_text


@dataclasses.dataclass(frozen=True)
class Head:
    """The task's output (its task type gives the units, activation, loss and metrics)."""

    task: str
    num_classes: int = 2
    label_mean: float = 0.0    # regression: the output is label_mean + label_scale * the network's
    label_scale: float = 1.0
    label_min: Optional[float] = None  # regression: the train split's label range (learnt space); the
    label_max: Optional[float] = None  # output is clipped to it, widened (None: no clip, older heads)

    @property
    def units(self) -> int:
        return task_types.get(self.task).units(self.num_classes)


def embedding_dim(cardinality: int, max_dim: int) -> int:
    """The usual 6 * cardinality^0.25 rule of thumb, capped."""
    return max(2, min(max_dim, int(math.ceil(6 * cardinality ** 0.25))))


def build_model(model_inputs: Sequence[ModelInput], head: Head, hidden_units: Sequence[int],
                dropout: float = 0.0, embedding_max_dim: int = 16, batch_norm: bool = False,
                text_encoder: str = "bag", text_dim: int = 64, text_saved_model: str = "",
                text_fine_tune: bool = False):
    """Wide (a linear weight per category) + deep (embeddings and numerics into an MLP), plus each
    text input's encoder (``text_encoder``, ``text_dim`` wide, or the SavedModel ``text_saved_model``
    fine-tuned or not: trainer/text.py) adding its own logits, not through the MLP.

    Shaped for few, large kernels (a GPU runs one per op): the categorical indices go in as
    one [batch, features] block through one table for all features (per-feature row offsets:
    one gather for the deep part, one for the wide part); the numerics are one dense
    [batch, numerics] block. Every feature's embedding has the width the largest
    cardinality's rule-of-thumb gives (capped at ``embedding_max_dim``). Inputs are rank-1
    tensors keyed by feature name; the output is float32 whatever the precision policy.
    """
    k = keras()
    layers = _layers()
    categorical = [mi for mi in model_inputs if mi.is_categorical]
    texts = [mi for mi in model_inputs if mi.is_text]
    numeric = [mi for mi in model_inputs if not mi.is_categorical and not mi.is_text]
    if not model_inputs:
        raise ValueError("the model needs at least one input")
    inputs = {mi.name: k.Input(shape=(mi.length,) if mi.is_text and not mi.raw_text else (), name=mi.name,
                               dtype="string" if mi.raw_text else "int64" if mi.cardinality is not None else "float32")
              for mi in model_inputs}
    deep_parts, logits = [], []
    for mi in texts:  # each text's own logits (trainer/text.py): the table's columns keep the MLP
        logits += text_lib.encode(inputs[mi.name], mi, text_encoder, text_dim, head.units, dropout,
                                  text_saved_model, text_fine_tune)
    if categorical:
        cards = [int(mi.cardinality or 0) for mi in categorical]  # set: each is categorical
        indices = layers["Stack"](dtype_name="int64", name="categorical_indices")(
            [inputs[mi.name] for mi in categorical])
        dim = embedding_dim(max(cards), embedding_max_dim)
        emb = layers["FusedEmbedding"](cards, dim, name="embeddings")(indices)
        deep_parts.append(k.layers.Reshape((len(cards) * dim,), name="embeddings_flat")(emb))
        wide = layers["FusedEmbedding"](cards, head.units, initializer="zeros", name="wide")(indices)
        logits.append(layers["SumFeatures"](name="wide_logits")(wide))
    if numeric:
        deep_parts.append(layers["Stack"](name="numerics")([inputs[mi.name] for mi in numeric]))
    if deep_parts:
        logits.insert(0, _deep_logits(k, deep_parts, head, hidden_units, dropout, batch_norm))
    logit = logits[0] if len(logits) == 1 else k.layers.Add(name="wide_and_deep")(logits)
    # The output layer computes in float32 (mixed precision keeps the rest in 16 bit).
    output = k.layers.Activation(task_types.get(head.task).activation, dtype="float32", name="prediction")(logit)
    if (head.label_mean, head.label_scale) != (0.0, 1.0):  # a standardised label (regression)
        output = k.layers.Rescaling(head.label_scale, offset=head.label_mean, dtype="float32",
                                    name="label_scale")(output)
    if head.label_min is not None and head.label_max is not None:  # bounded to the label's range (regression)
        low, high = widened(float(head.label_min), float(head.label_max))
        output = layers["ClipRange"](low, high, dtype="float32", name="label_range")(output)
    return k.Model(inputs=inputs, outputs=output, name="wide_and_deep")


def _deep_logits(k, deep_parts, head: Head, hidden_units: Sequence[int], dropout: float, batch_norm: bool):
    """The deep part: the embeddings and numerics through the MLP to the head's logits."""
    deep = deep_parts[0] if len(deep_parts) == 1 else k.layers.Concatenate(name="deep_input")(deep_parts)
    for i, units in enumerate(hidden_units):
        deep = k.layers.Dense(units, use_bias=not batch_norm, name=f"deep_{i}")(deep)
        if batch_norm:
            deep = k.layers.BatchNormalization(name=f"deep_{i}_bn")(deep)
        deep = k.layers.Activation("relu", name=f"deep_{i}_relu")(deep)
        if dropout:
            # A tf.random.Generator (stateful) so a resumed training continues its masks.
            deep = k.layers.Dropout(dropout, rng_type="stateful", name=f"deep_{i}_dropout")(deep)
    return k.layers.Dense(head.units, name="deep_logits")(deep)


_PREDICTIONS: "weakref.WeakKeyDictionary[Any, Any]" = weakref.WeakKeyDictionary()


def predictions(model):
    """``features -> the model's float32 outputs`` for a dict of its inputs (extra keys
    ignored): one traced function per model, for every caller and batch size. An eager call of a
    functional model walks its graph in Python, input by input (a 1,000-column table: 42 s of its
    Trainer's 166 s for eight validation batches), and each new trace of a model of 1,333 inputs
    holds memory (trainer/decision.py and trainer/importance.py share this one)."""
    if model not in _PREDICTIONS:
        specs = {name: tf.TensorSpec(t.shape, t.dtype, name=name) for name, t in model.input.items()}
        traced = tf.function(lambda inputs: tf.cast(model(inputs, training=False), tf.float32),
                             input_signature=[specs], autograph=False)
        _PREDICTIONS[model] = lambda features: traced({name: features[name] for name in specs})
    return _PREDICTIONS[model]


def validation_outputs(model, validation, steps: int):
    """The model's float32 [rows, units] outputs on the first ``steps`` batches of ``validation``
    ((features, label) batches), and their labels flat: one traced forward function (``predictions``)."""
    forward = predictions(model)
    outputs, labels = [], []
    for features, label in validation.take(steps):
        outputs.append(np.asarray(forward(features)))
        labels.append(np.reshape(np.asarray(label), [-1]))
    return np.concatenate(outputs), np.concatenate(labels)


@tf.custom_gradient
def clip_passing_gradient(x, low, high):
    """``x`` clipped to [low, high], whose gradient is the identity's: a prediction outside the
    range (early in training) still learns towards its label instead of getting no gradient."""
    def grad(dy):
        return dy, tf.zeros_like(low), tf.zeros_like(high)

    return tf.minimum(tf.maximum(x, low), high), grad


@functools.lru_cache(maxsize=None)
def _layers():
    """The model's own layers (defined on first use: Keras is chosen at the entry point)."""
    k = keras()

    class Stack(k.layers.Layer):
        """Rank-1 columns -> one [batch, columns] block (one op instead of a reshape each)."""

        def __init__(self, dtype_name: str = "", **kwargs):
            super().__init__(**kwargs)
            self.dtype_name = dtype_name

        def call(self, columns):
            dtype = self.dtype_name or self.compute_dtype
            return tf.stack([tf.cast(c, dtype) for c in columns], axis=1)

        def get_config(self):
            return dict(super().get_config(), dtype_name=self.dtype_name)

    class FusedEmbedding(k.layers.Layer):
        """Every categorical feature's embedding in one table: feature i's index j is row
        offsets[i] + j. [batch, features] int64 -> [batch, features, output_dim]."""

        def __init__(self, cardinalities, output_dim: int, initializer="uniform", **kwargs):
            super().__init__(**kwargs)
            self.cardinalities = [int(c) for c in cardinalities]
            self.output_dim = int(output_dim)
            self.initializer = initializer
            self.offsets = np.cumsum([0] + self.cardinalities[:-1]).astype(np.int64)
            self.max_index = np.asarray(self.cardinalities, np.int64) - 1

        def build(self, input_shape):
            self.table = self.add_weight(
                name="table", shape=(sum(self.cardinalities), self.output_dim),
                initializer=k.initializers.get(self.initializer), trainable=True)
            super().build(input_shape)

        def call(self, indices):
            # Transform keeps indices in range; clipping keeps a bad one inside its own feature.
            rows = tf.clip_by_value(indices, 0, self.max_index) + self.offsets
            table = tf.convert_to_tensor(self.table)  # read here: the gradient flows to it dense
            return tf.cast(gather_with_dense_gradient(table, rows), self.compute_dtype)

        def get_config(self):
            return dict(super().get_config(), cardinalities=self.cardinalities,
                        output_dim=self.output_dim, initializer=self.initializer)

    class SumFeatures(k.layers.Layer):
        """[batch, features, units] -> [batch, units]: the wide part's linear logit."""

        def call(self, x):
            return tf.reduce_sum(x, axis=1)

    class ClipRange(k.layers.Layer):
        """The output inside [low, high]: every path that runs the model (serving_default,
        TFLite, predict) bounded to the label's widened training range."""

        def __init__(self, low: float, high: float, **kwargs):
            super().__init__(**kwargs)
            self.low, self.high = float(low), float(high)

        def call(self, x):
            return clip_passing_gradient(x, tf.constant(self.low, x.dtype), tf.constant(self.high, x.dtype))

        def get_config(self):
            return dict(super().get_config(), low=self.low, high=self.high)

    return {"Stack": Stack, "FusedEmbedding": FusedEmbedding, "SumFeatures": SumFeatures, "ClipRange": ClipRange}


def loss_and_metrics(head: Head):
    """(loss, metrics) the model compiles with: the task type's."""
    return task_types.get(head.task).loss_and_metrics(keras())
