"""The optimizer: Adam, or AdamW (decoupled weight decay), one fused kernel per variable.

Keras' current Adam and AdamW (``keras.optimizers.Adam``) update each variable with about 30
small ops (the two moments, the bias corrections, the step), and on a GPU compile each
variable's update as its own XLA launch. A training step of this model's size is launch-bound
on a GPU (docs/performance.md, "Trainer throughput"), and that update was most of the step: 405 kernel ops
per step for the taxi model with Keras' AdamW, 246 with this one (train_step.step_kernel_ops).
Here the same update is TensorFlow's fused
``ResourceApplyAdam`` kernel (through Keras' V2 optimizer, ``keras.optimizers.legacy.Adam``),
and AdamW's decay is one more kernel per decayed variable (``ResourceApplyGradientDescent``
with the variable as its own gradient: var -= lr * weight_decay * var), applied before the
Adam step as Keras' AdamW does. Same math as Keras' AdamW (tests/test_optimizer.py trains
both from the same weights and compares).
"""
from __future__ import annotations

import functools
import re
from typing import Sequence

import tensorflow as tf

from tfxline.trainer.keras_compat import keras

# Not decayed: biases, and batch normalization's scale (gamma) and offset (beta).
NO_DECAY = ("bias", "gamma", "beta")


def learning_rate_schedule(learning_rate: float, decay_steps: int, warmup_steps: int = 0):
    """Cosine decay to 10% of the peak over the training run, after optional warmup."""
    k = keras()
    return k.optimizers.schedules.CosineDecay(
        0.0 if warmup_steps else learning_rate, decay_steps=max(1, decay_steps), alpha=0.1,
        warmup_target=learning_rate if warmup_steps else None, warmup_steps=warmup_steps)


def optimizer(learning_rate, weight_decay: float = 0.0):
    """Adam; with ``weight_decay``, AdamW (decoupled; not on biases or normalization)."""
    if weight_decay < 0:
        raise ValueError(f"weight_decay must be >= 0, got {weight_decay}")
    return fused_adamw_class()(learning_rate, weight_decay=weight_decay, exclude_from_weight_decay=NO_DECAY)


@functools.lru_cache(maxsize=None)
def fused_adamw_class():
    """The class (defined on first use: Keras is chosen at the entry point)."""
    k = keras()

    class FusedAdamW(k.optimizers.legacy.Adam):
        def __init__(self, learning_rate=0.001, weight_decay: float = 0.0,
                     exclude_from_weight_decay: Sequence[str] = (), name="FusedAdamW", **kwargs):
            super().__init__(learning_rate, name=name, **kwargs)
            self.weight_decay = float(weight_decay)
            self.exclude_from_weight_decay = tuple(exclude_from_weight_decay)

        def decays(self, var) -> bool:
            return bool(self.weight_decay) and not any(
                re.search(pattern, var.name) for pattern in self.exclude_from_weight_decay)

        def _prepare_local(self, var_device, var_dtype, apply_state):
            super()._prepare_local(var_device, var_dtype, apply_state)
            coefficients = apply_state[(var_device, var_dtype)]
            # lr_t: this step's scheduled learning rate (before Adam's bias correction).
            coefficients["decay_t"] = coefficients["lr_t"] * tf.cast(self.weight_decay, var_dtype)

        def _decay(self, var, apply_state):
            coefficients = (apply_state or {}).get((var.device, var.dtype.base_dtype)) or \
                self._fallback_apply_state(var.device, var.dtype.base_dtype)
            return tf.raw_ops.ResourceApplyGradientDescent(
                var=var.handle, alpha=coefficients["decay_t"], delta=var, use_locking=self._use_locking)

        def _resource_apply_dense(self, grad, var, apply_state=None):
            if not self.decays(var):
                return super()._resource_apply_dense(grad, var, apply_state)
            with tf.control_dependencies([self._decay(var, apply_state)]):
                return super()._resource_apply_dense(grad, var, apply_state)

        def _resource_apply_sparse(self, grad, var, indices, apply_state=None):
            if not self.decays(var):
                return super()._resource_apply_sparse(grad, var, indices, apply_state)
            with tf.control_dependencies([self._decay(var, apply_state)]):
                return super()._resource_apply_sparse(grad, var, indices, apply_state)

        def get_config(self):
            return dict(super().get_config(), weight_decay=self.weight_decay,
                        exclude_from_weight_decay=list(self.exclude_from_weight_decay))

    return FusedAdamW
