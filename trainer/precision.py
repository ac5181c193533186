"""Mixed-precision policy from the config's ``runtime.precision``.

``auto``, by measurement:

* float32 on GPUs of compute capability 8.0+ (Ampere, Hopper): their float32 matmuls run on
  Tensor Cores as TF32. Measured on an H100 (TF 2.21, bench/gpu_bench.py, docs/performance.md "On an
  H100"): the taxi model at batch 256 with XLA (what ``auto`` runs on a GPU) float32 162-203k
  examples/s vs mixed_bfloat16 142k; the [2048]x3 model at batch 8192 from GPU memory float32
  72 TFLOP/s, bfloat16 47, float16 41 (with XLA: 101 vs 63 bfloat16), although bare matmuls
  of that shape run 2x faster in 16 bits (570 vs 270 TFLOP/s): the casts take it back.
* mixed_float16 on compute capability 7.x (Volta, Turing): no TF32 there, float16 is their
  only Tensor Core path (not measured by this project: no such GPU was available).
* mixed_bfloat16 on TPU; float32 on CPU: on this project's 2-core CPU (AVX512_BF16) bf16
  measured 0.47x the float32 speed for a 128-wide MLP (see bench/ and DESIGN.md).
The policy is global Keras state, so it is set only at the entry point (``run_fn``) with
``precision_policy`` and restored on exit.
"""
from __future__ import annotations

import contextlib
from typing import Iterator

import tensorflow as tf

from tfxline.trainer.keras_compat import keras

POLICIES = ("float32", "mixed_float16", "mixed_bfloat16")


def resolve_policy(name: str, strategy: tf.distribute.Strategy) -> str:
    if name != "auto":
        if name not in POLICIES:
            raise ValueError(f"unknown precision {name!r}; use auto or one of {', '.join(POLICIES)}")
        return name
    if isinstance(strategy, tf.distribute.TPUStrategy):
        return "mixed_bfloat16"
    for gpu in tf.config.list_physical_devices("GPU"):
        capability = tf.config.experimental.get_device_details(gpu).get("compute_capability")
        return policy_for_gpu(capability)
    return "float32"


def policy_for_gpu(capability) -> str:
    """float32 (TF32 Tensor Cores) from Ampere on; mixed_float16 on Volta/Turing."""
    if capability and (7, 0) <= tuple(capability) < (8, 0):
        return "mixed_float16"
    return "float32"


@contextlib.contextmanager
def precision_policy(name: str) -> Iterator[str]:
    """Set the global Keras dtype policy for the block, then restore the previous one."""
    mp = keras().mixed_precision
    previous = mp.global_policy()
    mp.set_global_policy(name)
    try:
        yield name
    finally:
        mp.set_global_policy(previous)


def wrap_optimizer(optimizer, policy: str):
    """float16 needs loss scaling against gradient underflow; bf16 and float32 do not."""
    if policy == "mixed_float16":
        return keras().mixed_precision.LossScaleOptimizer(optimizer)
    return optimizer
