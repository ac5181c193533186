"""The per-replica batch and the learning rate that goes with it (``training.batch_scaling``).

``auto`` (the default): on a CPU, ``training.batch_size`` and ``model.learning_rate`` as
written. On a GPU or TPU a batch of 256 leaves the device mostly idle (each step is a few
small kernels), so when the train split is large the per-replica batch doubles, up to
``MAX_PER_REPLICA``, while an epoch keeps at least ``MIN_STEPS_PER_EPOCH`` optimizer steps,
and the learning rate grows with the square root of the factor (the usual rule for Adam: the
gradient noise falls with the square root of the batch). Small data keeps the written batch
everywhere: the taxi data's 12k train rows are 47 steps per epoch at 256, far below the
floor, so its model is the same on every device.
``always``: that rule on every device, CPUs included (a CPU's examples/s grow with the batch
too: 68k at 256, 89k at 4096 on this project's 2 cores, bench/gpu_bench.py).
``off``: as written everywhere.

The floor is what keeps the training's quality: measured with bench/quality.py on the taxi
data (one run each; docs/training.md), a batch 2x and 4x the written one with the
square-root learning rate trained as well as 256 (AUC 0.9607 and 0.9602 against 0.9606, at 24
and 12 steps per epoch), and 8x lost 0.0018 AUC at 6 steps per epoch: what the model needs is
enough optimizer steps, and the 500-step floor leaves a grown batch 40x the 12 that held.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Optional

from tfxline.trainer.settings import BATCH_SCALINGS

MAX_PER_REPLICA = 4096
MIN_STEPS_PER_EPOCH = 500


@dataclasses.dataclass(frozen=True)
class BatchPlan:
    per_replica: int         # examples per replica per micro-batch
    learning_rate: float     # the configured one, scaled for the grown batch
    factor: int              # per_replica / training.batch_size (1: as written)
    reason: str              # one line for the log and training_run.json


def plan(batch_size: int, learning_rate: float, scaling: str, device: str,
         train_examples: Optional[int], replicas: int = 1, accumulation: int = 1) -> BatchPlan:
    """The batch for ``device`` ("cpu", "gpu" or "tpu") and ``train_examples`` rows (None:
    unknown, e.g. a step budget; the batch is not grown without the data size)."""
    if scaling not in BATCH_SCALINGS:
        raise ValueError(f"unknown training.batch_scaling {scaling!r}; use one of {', '.join(BATCH_SCALINGS)}")
    as_written = BatchPlan(batch_size, learning_rate, 1, "")
    if scaling == "off":
        return dataclasses.replace(as_written, reason="batch_scaling off")
    if device == "cpu" and scaling == "auto":
        return dataclasses.replace(as_written, reason="auto on a CPU: the written batch")
    if train_examples is None:
        return dataclasses.replace(as_written, reason="step budget: the data size is not counted")
    per_replica = batch_size
    while (per_replica * 2 <= MAX_PER_REPLICA
           and train_examples // (per_replica * 2 * replicas * accumulation) >= MIN_STEPS_PER_EPOCH):
        per_replica *= 2
    factor = per_replica // batch_size
    if factor == 1:
        steps = train_examples // (batch_size * replicas * accumulation)
        return dataclasses.replace(
            as_written, reason=f"{steps} steps per epoch: too few to grow (needs {2 * MIN_STEPS_PER_EPOCH})")
    return BatchPlan(per_replica, learning_rate * math.sqrt(factor), factor,
                     f"{device}: batch {batch_size} x {factor} for {train_examples} train rows, "
                     f"learning rate x {math.sqrt(factor):.3g}")
