"""The wide-and-deep Keras model over the transformed features.

No artifact I/O here: the model is built from literal ``ModelInput``s (name and
cardinality), so a unit test can build and call it on literal tensors.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Dict, Optional, Sequence

from trainer.keras_compat import keras
from transforms import features as F


@dataclasses.dataclass(frozen=True)
class ModelInput:
    """One transformed feature: categorical when ``cardinality`` is set, else numeric."""

    name: str
    cardinality: Optional[int] = None

    @property
    def is_categorical(self) -> bool:
        return self.cardinality is not None


@dataclasses.dataclass(frozen=True)
class Head:
    """The task's output: units, activation, loss and metrics."""

    task: str
    num_classes: int = 2

    @property
    def units(self) -> int:
        return self.num_classes if self.task == F.TASK_MULTICLASS else 1


def embedding_dim(cardinality: int, max_dim: int) -> int:
    """The usual 6 * cardinality^0.25 rule of thumb, capped."""
    return max(2, min(max_dim, int(math.ceil(6 * cardinality ** 0.25))))


def build_model(model_inputs: Sequence[ModelInput], head: Head, hidden_units: Sequence[int],
                dropout: float = 0.0, embedding_max_dim: int = 16):
    """Wide (linear over one-hot categories) + deep (embeddings and numerics into an MLP).

    Inputs are rank-1 tensors keyed by feature name; the output is computed in float32
    whatever the mixed-precision policy.
    """
    k = keras()
    inputs: Dict[str, object] = {}
    wide_parts, deep_parts = [], []
    for mi in model_inputs:
        if mi.is_categorical:
            inp = k.Input(shape=(), name=mi.name, dtype="int64")
            idx = k.layers.Reshape((1,), name=f"{mi.name}_idx")(inp)
            wide = k.layers.Embedding(mi.cardinality, head.units, name=f"{mi.name}_wide")(idx)
            wide_parts.append(k.layers.Flatten()(wide))
            emb = k.layers.Embedding(
                mi.cardinality, embedding_dim(mi.cardinality, embedding_max_dim),
                name=f"{mi.name}_embedding")(idx)
            deep_parts.append(k.layers.Flatten()(emb))
        else:
            inp = k.Input(shape=(), name=mi.name, dtype="float32")
            deep_parts.append(k.layers.Reshape((1,), name=f"{mi.name}_col")(inp))
        inputs[mi.name] = inp
    if not inputs:
        raise ValueError("the model needs at least one input")

    deep = deep_parts[0] if len(deep_parts) == 1 else k.layers.Concatenate()(deep_parts)
    for i, units in enumerate(hidden_units):
        deep = k.layers.Dense(units, activation="relu", name=f"deep_{i}")(deep)
        if dropout:
            deep = k.layers.Dropout(dropout)(deep)
    logits = [k.layers.Dense(head.units, name="deep_logits")(deep)]
    if wide_parts:
        logits += wide_parts
    logit = logits[0] if len(logits) == 1 else k.layers.Add(name="wide_and_deep")(logits)
    activation = {F.TASK_BINARY: "sigmoid", F.TASK_MULTICLASS: "softmax"}.get(head.task, "linear")
    # The output layer computes in float32 (mixed precision keeps the rest in 16 bit).
    output = k.layers.Activation(activation, dtype="float32", name="prediction")(logit)
    return k.Model(inputs=inputs, outputs=output, name="wide_and_deep")


def loss_and_metrics(head: Head):
    k = keras()
    if head.task == F.TASK_BINARY:
        return (k.losses.BinaryCrossentropy(),
                [k.metrics.AUC(name="auc"), k.metrics.BinaryAccuracy(name="accuracy")])
    if head.task == F.TASK_MULTICLASS:
        return (k.losses.SparseCategoricalCrossentropy(),
                [k.metrics.SparseCategoricalAccuracy(name="accuracy")])
    return (k.losses.MeanSquaredError(), [k.metrics.RootMeanSquaredError(name="rmse")])


def learning_rate_schedule(learning_rate: float, decay_steps: int, warmup_steps: int = 0):
    """Cosine decay to 10% of the peak over the training run, after optional warmup."""
    k = keras()
    return k.optimizers.schedules.CosineDecay(
        0.0 if warmup_steps else learning_rate, decay_steps=max(1, decay_steps), alpha=0.1,
        warmup_target=learning_rate if warmup_steps else None, warmup_steps=warmup_steps)
