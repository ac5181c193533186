"""What the Trainer reads: the train split's rows, and the batch and training length they decide;
the train and validation datasets, through the Transform graph."""
from __future__ import annotations

import dataclasses
import logging
import math
from typing import Any, Dict, Optional

import tensorflow as tf
from tensorflow_transform.output_wrapper import TFTransformOutput

from tfxline import task_types
from tfxline.trainer import batch as batch_lib
from tfxline.trainer import cache_budget, data, images, resume
from tfxline.trainer import strategy as strategy_lib
from tfxline.trainer.settings import MAX_CLASS_WEIGHT, TrainerSettings, TrainingConfig
from tfxline.transforms import features as F
from tfxline.trees.settings import families


class EmptySplitError(ValueError):
    """A split the Trainer reads holds no rows."""


@dataclasses.dataclass
class Sizes:
    """What the data and the settings decide before anything is read: the batch and the length."""
    tf_transform_output: Any
    device: str
    replicas: int
    accumulation: int
    batch: batch_lib.BatchPlan
    global_batch: int
    train_examples: Optional[int]
    mode: str
    epochs: int
    steps_per_epoch: int


def plan_sizes(fn_args, settings: TrainerSettings, strategy) -> Sizes:
    """The batch (training.batch_scaling) and the training length, from the train split's rows."""
    training = settings.training
    tf_transform_output = TFTransformOutput(fn_args.transform_output)
    replicas = strategy.num_replicas_in_sync
    accumulation = training.gradient_accumulation_steps
    budget = int(fn_args.train_steps or 0)
    train_examples = (data.count_records(fn_args.train_files)
                      if training.mode == "epochs" and not budget else None)
    if not (train_examples if train_examples is not None else data.count_records(fn_args.train_files, limit=1)):
        raise EmptySplitError(f"the Trainer's train files hold no rows ({', '.join(fn_args.train_files)}); "
                              "give the data more rows or change its split (data.train_buckets)")
    device = strategy_lib.device_kind(strategy)
    batch = batch_lib.plan(training.batch_size, settings.model.learning_rate, training.batch_scaling,
                           device, train_examples, replicas, accumulation)
    logging.info("batch per replica %d (%s)", batch.per_replica, batch.reason)
    global_batch = batch.per_replica * replicas * accumulation
    mode, epochs, steps_per_epoch = training_length(training, budget, train_examples, global_batch)
    return Sizes(tf_transform_output, device, replicas, accumulation, batch, global_batch, train_examples,
                 mode, epochs, steps_per_epoch)


def training_length(training: TrainingConfig, budget: int, train_examples: Optional[int], global_batch: int):
    """(mode, epochs, steps per epoch).

    epochs: ``epochs`` full passes over the ``train_examples`` rows, so the training length
    follows the data size, never a fixed step count. steps: ``training.train_steps`` optimizer
    steps in all, split into ``epochs`` rounds. The Trainer's num_steps (TrainArgs, ``budget``;
    0 means unset), when set, is a step budget that overrides either mode.
    """
    if train_examples is not None:
        return "epochs", training.epochs, max(1, math.ceil(train_examples / global_batch))
    total_steps = budget or training.train_steps
    epochs = max(1, min(training.epochs, total_steps))
    if epochs < training.epochs:  # a compiled run's train_args: the CLI's --train-steps says so itself
        logging.warning("a budget of %d steps lowers training.epochs from %d to %d: in steps mode it counts the "
                        "rounds the steps are split into", total_steps, training.epochs, epochs)
    return "steps", epochs, math.ceil(total_steps / epochs)


@dataclasses.dataclass
class Inputs:
    """The train and validation datasets, and whether the train split is cached in memory."""
    train: Any
    validation: Any
    validation_steps: int
    cache: bool
    data_bytes: Optional[int]
    class_weight: Optional[Dict[int, float]] = None  # training.class_weight: balanced, per class index
    validation_rows: int = 0  # the rows each validation pass reads
    # Where a run trains more than one family (model.family auto), the validation rows in two
    # halves (``split_validation``): early stopping, the Tuner's trials and the trees' early
    # stopping read the watched half, and the family choice the held half, which nothing trained or
    # chose on before it, so the network's kept epoch (the best of several on the rows it is
    # scored on) does not flatter it. With one family both are every validation row.
    watched: Any = None
    watched_steps: int = 0
    held: Any = None
    held_steps: int = 0
    held_rows: int = 0

    @property
    def split(self) -> bool:
        """Whether the validation rows are in two halves (``split_validation``)."""
        return self.held_rows < self.validation_rows


def input_data(fn_args, settings: TrainerSettings, sizes: Sizes, state: Dict[str, Any]) -> Inputs:
    """The train dataset (from where a resumed training stopped) and the validation one."""
    training = settings.training
    # The tfrecord reader caches the records in memory when asked and they fit (a large train
    # split streams); the tfxio reader never caches, so nothing is estimated for it.
    cache, data_bytes = False, None
    if training.cache and training.reader == "tfrecord":
        data_bytes = cache_budget.decompressed_bytes(fn_args.train_files)
        cache = cache_budget.cache_fits(data_bytes, cache_budget.available_memory(),
                                        int(training.cache_max_gb * 2**30))
        if not cache:
            logging.warning("training.cache: the train split's ~%.1f GB do not fit training.cache_max_gb (%s) "
                            "or a quarter of the available memory; reading the files every epoch",
                            data_bytes / 1e9, training.cache_max_gb)
    train_ds = input_dataset(fn_args, settings, fn_args.train_files, sizes.tf_transform_output, sizes.global_batch,
                             shuffle=True, cache=cache).skip(resume.skip_batches(state, sizes.steps_per_epoch))
    # fn_args.eval_files: the validation split (the pipeline's EvalArgs), never the split the
    # Evaluator gates on. Validation only runs forward passes: micro-batches, not the
    # accumulated batch. Every epoch validates on the same rows (the first eval_steps batches,
    # each row once), so early stopping compares like with like, also across a restart.
    eval_batch = sizes.batch.per_replica * sizes.replicas
    eval_steps = int(fn_args.eval_steps or training.eval_steps)
    eval_rows = data.count_records(fn_args.eval_files, limit=eval_steps * eval_batch)
    if not eval_rows:  # Keras would skip validation without a word: no early stopping at all
        raise EmptySplitError(f"the Trainer's validation files (EvalArgs) hold no rows "
                              f"({', '.join(fn_args.eval_files)}); early stopping validates on them: give the "
                              "data more rows or change its split (data.validation_buckets)")
    eval_ds = input_dataset(fn_args, settings, fn_args.eval_files, sizes.tf_transform_output,
                            eval_batch, shuffle=False, cache=cache, repeat=False, limit=eval_rows)
    inputs = Inputs(train_ds, eval_ds, math.ceil(eval_rows / eval_batch), cache, data_bytes,
                    class_weights(fn_args, settings, sizes), eval_rows)
    if len(families(settings.features, settings.model.family)) > 1 and eval_rows >= 2:
        return split_validation(inputs, eval_batch)
    return dataclasses.replace(inputs, watched=eval_ds, watched_steps=inputs.validation_steps, held=eval_ds,
                               held_steps=inputs.validation_steps, held_rows=eval_rows)


WATCHED, HELD = 0, 1  # a validation row's index modulo 2: the half it is in (``split_validation``)


def split_validation(inputs: Inputs, batch: int) -> Inputs:
    """``inputs`` with the validation rows in two alternating halves: rows 0, 2, 4, ... watched (early
    stopping), rows 1, 3, 5, ... held (the family choice); trainer/trees_run.py splits the trees'
    numpy columns the same way (``watched``)."""
    rows = inputs.validation_rows
    watched, held = (rows + 1) // 2, rows // 2
    return dataclasses.replace(inputs, watched=alternate_rows(inputs.validation, WATCHED, batch),
                               watched_steps=math.ceil(watched / batch),
                               held=alternate_rows(inputs.validation, HELD, batch),
                               held_steps=math.ceil(held / batch), held_rows=held)


def alternate_rows(validation, part: int, batch: int):
    """The rows ``part``, ``part`` + 2, ``part`` + 4, ... of the ``validation`` batches, batched again."""
    rows = validation.unbatch().enumerate().filter(lambda i, _: i % 2 == part).map(lambda _, row: row)
    return rows.batch(batch).with_options(data.distribution_options()).prefetch(tf.data.AUTOTUNE)


def class_weights(fn_args, settings: TrainerSettings, sizes: Sizes) -> Optional[Dict[int, float]]:
    """training.class_weight: balanced: each class's weight rows / (classes x its rows) over the
    train split, so each class weighs the same in the loss, capped at ``MAX_CLASS_WEIGHT`` times the
    commonest class's; None otherwise or for a regression."""
    spec = settings.features
    if settings.training.class_weight != "balanced":
        return None
    if not task_types.get(spec.task).predicts_classes:
        logging.warning("training.class_weight: balanced applies to class labels; %s is %s: ignored",
                        spec.label.name, spec.task)
        return None
    counts = data.label_counts(fn_args.train_files, spec.label.name,
                               data.transformed_decoder(sizes.tf_transform_output))
    return balanced_weights(counts)


def balanced_weights(counts) -> Dict[int, float]:
    """{class index: rows / (classes x its rows)} of the classes present in ``counts``, each at most
    ``MAX_CLASS_WEIGHT`` times the commonest class's weight."""
    present = [(i, c) for i, c in enumerate(counts) if c]
    total = sum(c for _, c in present)
    cap = MAX_CLASS_WEIGHT * total / (len(present) * max(c for _, c in present))
    return {i: min(total / (len(present) * c), cap) for i, c in present}


def input_dataset(fn_args, settings: TrainerSettings, files, tf_transform_output, batch_size: int,
                  *, shuffle: bool, cache: bool, repeat: bool = True, limit: int = 0):
    """Batches of (features, label) from the raw examples through the Transform graph;
    ``limit``: the first ``limit`` records, once (validation)."""
    ds = table_dataset(fn_args, settings, files, tf_transform_output, batch_size, shuffle=shuffle, cache=cache,
                       repeat=repeat, limit=limit)
    if settings.features.data_kind == F.IMAGE:  # bytes decoded to pixels, batch by batch (trainer/images.py)
        ds = images.decoded(ds, settings.features, training=shuffle, seed=settings.training.seed)
    return ds


def table_dataset(fn_args, settings: TrainerSettings, files, tf_transform_output, batch_size: int,
                  *, shuffle: bool, cache: bool, repeat: bool = True, limit: int = 0):
    """The Transform output's columns, batched (an image still as its bytes)."""
    training, label = settings.training, settings.features.label.name
    if training.reader == "tfxio":
        if getattr(fn_args, "data_accessor", None) is None:
            raise ValueError("training.reader is tfxio but the Trainer passed no data accessor; "
                             "use training.reader=tfrecord")
        ds = data.make_tfxio_dataset(
            fn_args.data_accessor, files, tf_transform_output.raw_metadata.schema,
            data.transform_layer(tf_transform_output), label,
            batch_size, shuffle=shuffle, seed=training.seed, repeat=repeat)
        return ds.take(math.ceil(limit / batch_size)) if limit else ds
    return data.make_dataset(files, data.transformed_decoder(tf_transform_output), label, batch_size,
                             shuffle=shuffle, seed=training.seed, cache=cache, repeat=repeat, limit=limit)
