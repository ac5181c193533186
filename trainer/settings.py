"""The config sections the Trainer reads: ``model`` (hyperparameters), ``training`` (how
long, in what batches) and ``runtime`` (strategy, precision: how it runs, not what it learns).

They live here, with the model code, so ``trainer/`` never imports the orchestrator package;
``pipeline.config`` composes them into the whole pipeline config and validates the values.
The Trainer receives them as plain data in ``custom_config`` (``TrainerSettings``).
"""
from __future__ import annotations

import dataclasses
import typing
from typing import Any, Mapping, Tuple

from tfxline.transforms import features as F

STRATEGIES = ("auto", "default", "one_device", "mirrored", "multi_worker_mirrored",
              "parameter_server", "tpu")
PRECISIONS = ("auto", "float32", "mixed_float16", "mixed_bfloat16")
TRAINING_MODES = ("steps", "epochs")
BATCH_SCALINGS = ("auto", "always", "off")
READERS = ("tfrecord", "tfxio")
CLASS_WEIGHTS = ("none", "balanced")
JIT_COMPILES = ("auto", "true", "false")
# The Trainer's record of a training run, in its model_run directory (trainer/run.py writes it;
# the run report, the run summary and the bench scripts read it).
TRAINING_RUN_FILE = "training_run.json"


@dataclasses.dataclass(frozen=True)
class ModelConfig:
    hidden_units: Tuple[int, ...] = (128, 64)  # the deep part's layer widths
    dropout: float = 0.0           # dropout after each hidden layer (0: none)
    batch_norm: bool = False       # batch normalization after each hidden layer
    embedding_max_dim: int = 16    # cap on the categorical embeddings' width (6 x cardinality^0.25 below it)
    learning_rate: float = 0.003   # Adam(W)'s peak learning rate (cosine decay to the end of training)
    warmup_steps: int = 0          # linear warm-up steps before the peak (0: none)
    weight_decay: float = 0.0      # decoupled weight decay (AdamW); 0: plain Adam


@dataclasses.dataclass(frozen=True)
class TrainingConfig:
    # The memory-bound batch: per replica and per micro-batch. One optimizer step uses
    # batch_size x replicas x gradient_accumulation_steps examples (the global batch).
    batch_size: int = 256
    # auto: on a GPU or TPU with a large train split, the per-replica batch doubles (up to
    # 4096) while an epoch keeps >= 500 steps, and the learning rate grows by the square root
    # of the factor; on a CPU or with small data, batch_size as written (trainer/batch.py).
    # always: the same rule on a CPU too. off: batch_size as written everywhere.
    batch_scaling: str = "auto"
    # epochs: up to `epochs` full passes over the train split, so the length follows the data
    #   size (early stopping usually ends it sooner);
    # steps: train_steps optimizer steps in all, split into `epochs` rounds.
    # The Trainer's TrainArgs.num_steps (a Kubeflow run's train_args parameter, `submit
    # --train-steps`) overrides either with a step budget. Every epoch / round ends with a
    # validation pass, a TensorBoard point, a checkpoint and a chance to stop early.
    mode: str = "epochs"
    train_steps: int = 1000         # steps mode: optimizer steps in all (--train-steps N sets it and the mode)
    # epochs mode: at most this many passes; steps mode: the rounds train_steps is split into
    epochs: int = 10
    # Average the gradients of N micro-batches before each update: the update of an N x
    # larger batch at the memory of one batch_size batch. 1 = off.
    gradient_accumulation_steps: int = 1
    # Stop when the eval AUC (loss for non-binary tasks) has not improved for this many
    # epochs, and keep the best weights; 0 turns early stopping off.
    early_stopping_patience: int = 2
    eval_steps: int = 50           # validation batches per epoch (the same rows each time)
    seed: int = 42                 # weights, shuffling and dropout (the same seed gives the same model)
    cache: bool = True             # cache the records in memory when they fit (trainer/data.py)
    # The most memory the cache may take (the records' decompressed size), and at most a quarter of
    # the available memory: a larger train split streams from the files every epoch, so the Trainer's
    # memory stays flat at any size (a 10M-row taxi day's 3.5 GB cached took the run to 4.3 GB).
    cache_max_gb: float = 1.0
    # Weigh each class's rows in the loss: none, or balanced (rows x classes / the class's rows in
    # the train split, so every class weighs the same in all): a rare class is then predicted too.
    # For multi-class labels whose classes are far apart in size (`tfxline init` writes it); a
    # binary model keeps its probabilities calibrated and decides at a chosen threshold instead
    # (evaluation.threshold).
    class_weight: str = "none"
    # tfrecord: this project's tf.data reader (cached, measured 3-4x faster here);
    # tfxio: TFX's data accessor (TFXIO; reads any payload format the examples declare).
    reader: str = "tfrecord"


@dataclasses.dataclass(frozen=True)
class RuntimeConfig:
    # tf.distribute strategy: auto | default | one_device | mirrored | multi_worker_mirrored |
    # parameter_server | tpu (auto: multi_worker_mirrored when TF_CONFIG names several workers,
    # else mirrored on several GPUs, one_device on one, default on a CPU; trainer/strategy.py)
    strategy: str = "auto"
    # Keras precision policy: auto | float32 | mixed_float16 | mixed_bfloat16 (auto: mixed_bfloat16
    # on a TPU, mixed_float16 on Volta / Turing GPUs, else float32: measured fastest on this
    # project's CPUs and on an H100 with TF32; trainer/precision.py)
    precision: str = "auto"
    # Compile the training step with XLA: auto = on GPUs, off on CPUs (trainer/strategy.use_xla
    # has the measurements); true / false force it.
    jit_compile: str = "auto"
    # Training steps per tf.function call (Keras steps_per_execution): fewer host round trips
    # per step; batch-level callbacks see every Nth batch. 0 = auto: 50, at most an epoch
    # (measured faster on CPU and GPU, bench/gpu_bench.py).
    steps_per_execution: int = 0
    # The compiled metrics (AUC, accuracy) on every training batch too: the train curves in
    # TensorBoard and the report. Validation metrics (early stopping, the report's validation
    # curves) are computed either way. Off: +3 to +19% examples/s on a 2-core CPU at batch 256
    # (three runs of bench/gpu_bench.py); on a GPU, where a step is launch-bound, measure it.
    train_metrics: bool = True
    # Trace this many training steps with TensorFlow's profiler (0: off), after the first ~10
    # (tracing and warm-up), within one epoch: the trace goes to the Trainer's model_run
    # directory (TensorBoard's Profile tab) and a per-step summary with a verdict (input-,
    # launch- or device-bound) to training_run.json and the run report (trainer/profile.py).
    profile_steps: int = 0
    # Transform's own pre- and post-transform TFDV statistics (and their anomalies): a second
    # full pass over the data that no gate reads (ExampleValidator uses StatisticsGen's).
    transform_statistics: bool = False
    # Extra Beam args for the data components, after the beam section's engine args (they
    # win): e.g. ["--max_num_workers=20"] on Dataflow.
    beam_args: Tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class TrainerSettings:
    features: F.FeatureSpec
    model: ModelConfig
    training: TrainingConfig
    runtime: RuntimeConfig
    threshold: str = "f1"  # evaluation.threshold: the objective a binary model's threshold is chosen for

    @classmethod
    def from_custom_config(cls, custom_config: Mapping[str, Any]) -> "TrainerSettings":
        """From the Trainer's custom_config (the factory writes it from a validated config)."""
        return cls(
            features=F.FeatureSpec.from_dict(custom_config["features"]),
            model=section(ModelConfig, custom_config.get("model", {}), "model"),
            training=section(TrainingConfig, custom_config.get("training", {}), "training"),
            runtime=section(RuntimeConfig, custom_config.get("runtime", {}), "runtime"),
            threshold=str(custom_config.get("threshold", "f1")),
        )


def section(cls: Any, raw: Mapping[str, Any], where: str) -> Any:
    """A section from JSON-shaped data: lists become the tuples the dataclass declares."""
    allowed = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(raw) - allowed)
    if unknown:
        raise ValueError(f"unknown key {where}.{unknown[0]} in the Trainer's custom_config; "
                         f"allowed: {', '.join(sorted(allowed))}")
    hints = typing.get_type_hints(cls)
    return cls(**{k: tuple(v) if typing.get_origin(hints[k]) is tuple else v for k, v in raw.items()})
