"""The config sections the Trainer reads: ``model`` (hyperparameters), ``training`` (how
long, in what batches) and the Trainer's part of ``runtime`` (strategy, precision: how it runs,
not what it learns), each with its rules (``problems()``) beside its fields.

They live here, with the model code, so ``trainer/`` never imports the orchestrator package;
``pipeline.config`` composes them into the whole pipeline config (its ``runtime`` section adds the
data components' settings to ``TrainerRuntime``). The Trainer receives exactly what it reads as
plain data in ``custom_config`` (``TrainerSettings.to_custom_config``), read back by the config's
one reader (typed_config/read.py): a setting it does not read never changes its cache key.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Dict, Iterator, Mapping, Tuple

from tfxline import task_types
from tfxline.trainer import text_settings
from tfxline.transforms import features as F
from tfxline.trees.settings import NETWORK, TreesConfig, family_problems
from tfxline.typed_config.problems import Problem, bad
from tfxline.typed_config.read import FROM_YAML, from_yaml

STRATEGIES = ("auto", "default", "one_device", "mirrored", "multi_worker_mirrored",
              "parameter_server", "tpu")
PRECISIONS = ("auto", "float32", "mixed_float16", "mixed_bfloat16")
TRAINING_MODES = ("steps", "epochs")
BATCH_SCALINGS = ("auto", "always", "off")
READERS = ("tfrecord", "tfxio")
CLASS_WEIGHTS = ("none", "balanced")
# balanced's weights are capped at this multiple of the commonest class's: uncapped, a 20-class
# table's rarest class weighed 641x and was predicted 7-9x too often (accuracy 0.672 vs trees' 0.712)
MAX_CLASS_WEIGHT = 10.0
JIT_COMPILES = ("auto", "true", "false")
IMAGE_BACKBONES = ("small_cnn", "mobilenet_v2", "efficientnet_b0", "resnet50")  # trainer/images.py builds them
IMAGE_MODEL_KEYS = ("backbone", "weights", "frozen_epochs")  # the model section's keys only an image model reads
# ... and those only a model with a text input reads (text_settings.TEXT_ENCODERS: trainer/text.py builds them)
TEXT_MODEL_KEYS = ("text_encoder", "text_dim", "text_saved_model", "text_fine_tune")
TREES_MODEL_KEYS = ("family", "trees")  # ... and those only a model that may be trees reads
# The keys TFX's Google Cloud extension adds to the custom_config it passes through to the job it
# starts (runner.py:154-200 sends the whole exec_properties to the workers' run_executor): the
# Vertex Trainer's (extensions/google_cloud_ai_platform/trainer/executor.py:30-61, constants.py:17-27)
# and the Vertex Tuner's (tuner/executor.py:35-49). Not ours: the reader leaves them out
# (tests/test_kubeflow_tuning.py compares this set with the extension's constants).
CLOUD_EXTENSION_KEYS = frozenset({
    "ai_platform_enable_vertex", "ai_platform_vertex_region", "ai_platform_vertex_container_image_uri",
    "ai_platform_training_args", "ai_platform_training_job_id", "ai_platform_training_labels",
    "ai_platform_training_enable_ucaip", "ai_platform_training_ucaip_region", "ai_platform_tuning_args",
    "remote_trials_working_dir"})
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
    # Image models (trainer/images.py): small_cnn | mobilenet_v2 | efficientnet_b0 | resnet50
    backbone: str = "small_cnn"
    # none (from scratch), or a keras.applications weights file without the top (a path or gs://)
    weights: str = "none"
    # with weights: the first epochs train the new head only, the backbone frozen; then the whole
    # network at a tenth of the learning rate (two-phase fine-tuning; 0: all of it from the start)
    frozen_epochs: int = 3
    # Text inputs (trainer/text.py): bag (the mean of the n-grams' embeddings and a linear weight
    # per n-gram: fast, order-free, TF-IDF + logistic regression's match) | transformer (token
    # embeddings with positions through a small Transformer encoder: word order counts) |
    # pretrained (text_saved_model's encoder on the raw text: trainer/text_pretrained.py)
    text_encoder: str = "bag"
    text_dim: int = 64             # the width of a text input's n-gram (token) embeddings
    # text_encoder pretrained: a TF2 SavedModel's folder (a path or gs://, never a URL) whose
    # __call__ maps a batch of strings to [batch, dim] vectors (TF Hub's text-embedding models do)
    text_saved_model: str = ""
    text_fine_tune: bool = False   # pretrained: train its weights too (false: frozen, the head learns)
    # network | trees | auto: which model family a table trains (trees/settings.py);
    # `tfxline init` writes auto for a table, which trains both and keeps the better on validation
    family: str = NETWORK
    # the decision forest's settings (model.family trees or auto: trainer/trees.py)
    trees: TreesConfig = TreesConfig()

    def problems(self) -> Iterator[Problem]:
        yield from family_problems(self.family, self)
        yield from (problem.within("trees") for problem in self.trees.problems())
        yield from text_settings.text_problems(self)
        if self.backbone not in IMAGE_BACKBONES:
            yield bad(self, "backbone", f"use one of {', '.join(IMAGE_BACKBONES)}")
        if self.weights == "imagenet":
            yield bad(self, "weights", "imagenet makes Keras download the weights at run time, which a pipeline "
                                       "run never does; download the file once where there is internet (e.g. "
                                       "keras.applications.MobileNetV2(include_top=False) saves "
                                       "~/.keras/models/mobilenet_v2_weights_tf_dim_ordering_tf_kernels_1.0_224_"
                                       "no_top.h5), copy it where the run reads (a path or gs://) and set "
                                       "model.weights to it")
        if not self.frozen_epochs >= 0:
            yield bad(self, "frozen_epochs", "must be >= 0 (0: no frozen phase)")
        if self.weights not in ("none", "", "imagenet") and self.backbone == "small_cnn":
            yield bad(self, "weights", "small_cnn has no pretrained weights; set model.backbone to one of "
                                       f"{', '.join(IMAGE_BACKBONES[1:])}, or weights: none")
        if not all(u >= 1 for u in self.hidden_units):
            yield bad(self, "hidden_units", "every layer needs >= 1 unit")
        if not 0.0 <= self.dropout < 1.0:
            yield bad(self, "dropout", "must be in [0, 1)")
        if not self.learning_rate > 0:
            yield bad(self, "learning_rate", "must be > 0")
        if not 0.0 <= self.weight_decay < 1.0:
            yield bad(self, "weight_decay", "must be in [0, 1) (0 turns it off)")


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
    # the train split, so every class weighs the same in all, each capped at 10x the commonest
    # class's weight): a rare class is then predicted more, at a cost in accuracy. `tfxline init`
    # leaves it none (accuracy is gated); the Tuner tries both for a multi-class label and keeps
    # the one better on validation. A binary model keeps its probabilities calibrated and decides
    # at a chosen threshold instead (evaluation.threshold).
    class_weight: str = "none"
    # tfrecord: this project's tf.data reader (cached, measured 3-4x faster here);
    # tfxio: TFX's data accessor (TFXIO; reads any payload format the examples declare).
    reader: str = "tfrecord"
    # The minutes the network's training may take (0: no budget). The Trainer times its first
    # passes and runs as many of the planned ones as fit, the learning rate's decay compressed onto
    # them; the run summary says how many fitted and how long all would take (trainer/budget.py).
    # `tfxline init` writes 10 for images and text (a first run that fits a 2-core machine).
    time_budget_minutes: float = 0.0

    def problems(self) -> Iterator[Problem]:
        if not self.batch_size >= 1:
            yield bad(self, "batch_size", "must be >= 1")
        if self.batch_scaling not in BATCH_SCALINGS:
            yield bad(self, "batch_scaling", f"use one of {', '.join(BATCH_SCALINGS)}")
        if not self.train_steps >= 1:
            yield bad(self, "train_steps", "must be >= 1")
        if self.mode not in TRAINING_MODES:
            yield bad(self, "mode", f"use one of {', '.join(TRAINING_MODES)}")
        if not self.epochs >= 1:
            yield bad(self, "epochs", "must be >= 1")
        if self.reader not in READERS:
            yield bad(self, "reader", f"use one of {', '.join(READERS)}")
        if not (self.mode == "epochs" or self.epochs <= self.train_steps):
            yield bad(self, "epochs", "in steps mode it counts the rounds training.train_steps (--train-steps) "
                                      "is split into, so it must be <= training.train_steps: lower one or raise "
                                      "the other")
        if not self.gradient_accumulation_steps >= 1:
            yield bad(self, "gradient_accumulation_steps", "must be >= 1 (1 turns accumulation off)")
        if not self.cache_max_gb > 0:
            yield bad(self, "cache_max_gb", "must be > 0 (training.cache: false caches nothing)")
        if not self.eval_steps >= 1:
            yield bad(self, "eval_steps", "must be >= 1")
        if self.class_weight not in CLASS_WEIGHTS:
            yield bad(self, "class_weight", f"use one of {', '.join(CLASS_WEIGHTS)}")
        if not self.time_budget_minutes >= 0:
            yield bad(self, "time_budget_minutes", "must be >= 0 (0: no budget, the planned passes all run)")


@dataclasses.dataclass(frozen=True)
class TrainerRuntime:
    """The ``runtime`` settings the Trainer reads (the pipeline config's runtime section adds the
    data components' own, pipeline/config/platform.py)."""
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

    def problems(self) -> Iterator[Problem]:
        if not self.steps_per_execution >= 0:
            yield bad(self, "steps_per_execution", "must be >= 0 (0: auto)")
        if not self.profile_steps >= 0:
            yield bad(self, "profile_steps", "must be >= 0 (0: off)")
        if self.strategy not in STRATEGIES:
            yield bad(self, "strategy", f"use one of {', '.join(STRATEGIES)}")
        if self.precision not in PRECISIONS:
            yield bad(self, "precision", f"use one of {', '.join(PRECISIONS)}")
        if self.jit_compile not in JIT_COMPILES:
            yield bad(self, "jit_compile", "use auto (XLA on GPUs only), true or false")


@dataclasses.dataclass(frozen=True)
class TrainerSettings:
    features: F.FeatureSpec = dataclasses.field(metadata={FROM_YAML: lambda raw, where: F.FeatureSpec.from_dict(raw)})
    model: ModelConfig = ModelConfig()
    training: TrainingConfig = TrainingConfig()
    runtime: TrainerRuntime = TrainerRuntime()
    threshold: str = "f1"  # evaluation.threshold: the objective a binary model's threshold is chosen for

    @classmethod
    def from_custom_config(cls, custom_config: Mapping[str, Any]) -> "TrainerSettings":
        """From the Trainer's custom_config (``to_custom_config`` of a validated config), read as
        every config section is (typed_config/read.py); the Google Cloud extension's own keys
        (CLOUD_EXTENSION_KEYS, on Vertex AI) left out."""
        return from_yaml(cls, {k: v for k, v in custom_config.items() if k not in CLOUD_EXTENSION_KEYS}, "")

    def to_custom_config(self) -> Dict[str, Any]:
        """The Trainer's custom_config: what it reads and nothing else, as JSON-shaped data (a
        binary model's threshold objective only where the task chooses a threshold)."""
        model = plain(self.model)
        # a table model's keys as before (its cache key unchanged): an image's and text's only where read
        unread = (() if self.features.data_kind == F.IMAGE else IMAGE_MODEL_KEYS) + \
            (() if self.features.text_inputs else TEXT_MODEL_KEYS) + \
            (() if self.model.family != NETWORK else TREES_MODEL_KEYS)
        model = {k: v for k, v in model.items() if k not in unread}
        training = plain(self.training)
        if not self.training.time_budget_minutes:  # no budget: the keys as before it existed (cache keys, specs)
            training.pop("time_budget_minutes")
        out: Dict[str, Any] = {"features": self.features.to_dict(), "model": model, "training": training,
               "runtime": plain(self.runtime)}
        if task_types.get(self.features.task).decides:
            out["threshold"] = self.threshold
        return out


def plain(section: Any) -> Dict[str, Any]:
    """A section's fields as JSON-shaped data (tuples as lists, a section within it as a mapping)."""
    def value(v):
        if dataclasses.is_dataclass(v) and not isinstance(v, type):
            return plain(v)
        return list(v) if isinstance(v, tuple) else v

    return {f.name: value(getattr(section, f.name)) for f in dataclasses.fields(section)}
