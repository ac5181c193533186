"""``run_fn``: the entry point TFX's Trainer calls (referenced by import path).

Every choice comes from ``fn_args.custom_config``, which the pipeline factory fills from
the typed config: the feature spec, model hyperparameters, training and runtime settings.
Global state (the Keras dtype policy) is set here, at the entry point, and restored.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import math
import os
import tempfile
import time
from typing import Any, Dict, List, Optional, Tuple

import tensorflow as tf
import tensorflow_transform as tft

from trainer import (batch as batch_lib, data, export, model as model_lib, optimizer as optimizer_lib,
                     precision, profile as profile_lib, resume, strategy as strategy_lib)
from trainer.train_step import training_model
from trainer.settings import TRAINING_RUN_FILE, TrainerSettings, TrainingConfig
from trainer.keras_compat import keras, skip_autograph_for_tf_keras
from transforms import features as F


class EmptySplitError(ValueError):
    """A split the Trainer reads holds no rows."""


def model_inputs(spec: F.FeatureSpec, tf_transform_output) -> List[model_lib.ModelInput]:
    """Model inputs with their cardinalities, from the spec and the Transform output."""
    inputs = []
    for f in spec.inputs:
        name = F.transformed_name(f.name)
        if not f.is_categorical:
            inputs.append(model_lib.ModelInput(name))
            continue
        vocab = (tf_transform_output.vocabulary_size_by_name(F.vocabulary_name(f.name))
                 if f.transform == "vocabulary" else None)
        inputs.append(model_lib.ModelInput(name, F.categorical_cardinality(f, vocab)))
    inputs += [model_lib.ModelInput(F.transformed_name(c.name), c.hash_buckets) for c in spec.crosses]
    return inputs


def make_head(spec: F.FeatureSpec, tf_transform_output, train_files=()) -> model_lib.Head:
    """The task's head: a multi-class head sized by the label vocabulary; a regression head at
    the train split's label scale (mean and standard deviation), so the network learns a
    standardised target whatever the label's unit (seconds, grams, dollars)."""
    if spec.task == F.TASK_MULTICLASS:
        return model_lib.Head(spec.task, tf_transform_output.vocabulary_size_by_name(F.LABEL_VOCABULARY))
    if spec.task == F.TASK_REGRESSION and train_files:
        mean, std = data.label_moments(train_files, spec.label.name, data.transformed_decoder(tf_transform_output))
        return model_lib.Head(spec.task, label_mean=mean, label_scale=std if std > 0 else 1.0)
    return model_lib.Head(spec.task)


def backup_dir(fn_args) -> str:
    """A checkpoint directory that outlives the execution: TFX gives a re-run Trainer new
    output directories, so the backup is keyed by what determines the training instead
    (inputs and settings) under the component's root. Keras deletes it after a finished fit.
    """
    key = json.dumps({"transform": fn_args.transform_output, "train": list(fn_args.train_files),
                      "config": fn_args.custom_config, "steps": fn_args.train_steps}, sort_keys=True,
                     default=str)
    component_root = os.path.dirname(os.path.dirname(os.path.normpath(fn_args.model_run_dir)))
    return os.path.join(component_root, "backup", hashlib.sha256(key.encode()).hexdigest()[:16])


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
    return "steps", epochs, math.ceil(total_steps / epochs)


def early_stopping_monitor(task: str, validation) -> Tuple[str, str]:
    """(metric early stopping watches, why it is not the usual one or ''): ``val_auc`` for a
    binary head, ``val_loss`` otherwise, and ``val_loss`` when the validation rows hold one class
    only: AUC is undefined there (Keras reports 0 every epoch, so early stopping would keep
    the first epoch's weights, silently). Reads the validation batches' labels once, all of them
    (a partly read cached dataset would discard its cache)."""
    if task != F.TASK_BINARY:
        return "val_loss", ""
    classes, rows = set(), 0
    for _, label in validation:
        values = label.numpy().ravel()
        classes.update(values.tolist())
        rows += values.size
    if len(classes) > 1:
        return "val_auc", ""
    only = ", ".join(f"{c:g}" for c in sorted(classes))
    return "val_loss", (f"the {rows} validation rows hold only label {only}, where AUC is undefined; "
                        "more validation rows (data.validation_buckets) bring back val_auc")


def input_dataset(fn_args, settings: TrainerSettings, files, tf_transform_output, batch_size: int,
                  *, shuffle: bool, cache: bool, repeat: bool = True, limit: int = 0):
    """Batches of (features, label) from the raw examples through the Transform graph;
    ``limit``: the first ``limit`` records, once (validation)."""
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


def run_fn(fn_args) -> None:
    keras()  # fail early, with the fix named, if tf.keras is not tf_keras
    skip_autograph_for_tf_keras()
    settings = TrainerSettings.from_custom_config(fn_args.custom_config)
    strategy = strategy_lib.create_strategy(settings.runtime.strategy)
    policy = precision.resolve_policy(settings.runtime.precision, strategy)
    with precision.precision_policy(policy):
        train(fn_args, settings, strategy, policy)


def train(fn_args, settings: TrainerSettings, strategy, policy: str) -> Dict[str, Any]:
    spec, training = settings.features, settings.training
    tf.keras.utils.set_random_seed(training.seed)
    tf_transform_output = tft.TFTransformOutput(fn_args.transform_output)
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
    # A killed Trainer, started again on the same inputs, continues the same training.
    resumable = not isinstance(strategy, tf.distribute.experimental.ParameterServerStrategy)
    backup = backup_dir(fn_args)
    state = resume.read_state(backup, global_batch) if resumable else {}
    # The tfrecord reader caches the records in memory when asked and they fit (a large train
    # split streams); the tfxio reader never caches, so nothing is estimated for it.
    cache, data_bytes = False, None
    if training.cache and training.reader == "tfrecord":
        data_bytes = data.decompressed_bytes(fn_args.train_files)
        cache = data.cache_fits(data_bytes, data.available_memory())
        if not cache:
            logging.warning("training.cache: the train split's ~%.1f GB do not fit in a quarter of the "
                            "available memory; reading the files every epoch", data_bytes / 1e9)
    train_ds = input_dataset(fn_args, settings, fn_args.train_files, tf_transform_output, global_batch,
                             shuffle=True, cache=cache).skip(resume.skip_batches(state, steps_per_epoch))
    # fn_args.eval_files: the validation split (the pipeline's EvalArgs), never the split the
    # Evaluator gates on. Validation only runs forward passes: micro-batches, not the
    # accumulated batch. Every epoch validates on the same rows (the first eval_steps batches,
    # each row once), so early stopping compares like with like, also across a restart.
    eval_batch = batch.per_replica * replicas
    eval_steps = int(fn_args.eval_steps or training.eval_steps)
    eval_rows = data.count_records(fn_args.eval_files, limit=eval_steps * eval_batch)
    if not eval_rows:  # Keras would skip validation without a word: no early stopping at all
        raise EmptySplitError(f"the Trainer's validation files (EvalArgs) hold no rows "
                              f"({', '.join(fn_args.eval_files)}); early stopping validates on them: give the "
                              "data more rows or change its split (data.validation_buckets)")
    validation_steps = math.ceil(eval_rows / eval_batch)
    eval_ds = input_dataset(fn_args, settings, fn_args.eval_files, tf_transform_output,
                            eval_batch, shuffle=False, cache=cache, repeat=False, limit=eval_rows)

    head = make_head(spec, tf_transform_output, fn_args.train_files)
    inputs = model_inputs(spec, tf_transform_output)
    with strategy.scope():
        model = model_lib.build_model(
            inputs, head, settings.model.hidden_units,
            settings.model.dropout, settings.model.embedding_max_dim, settings.model.batch_norm)
        schedule = optimizer_lib.learning_rate_schedule(
            batch.learning_rate, steps_per_epoch * epochs, settings.model.warmup_steps)
        optimizer = precision.wrap_optimizer(
            optimizer_lib.optimizer(schedule, settings.model.weight_decay), policy)
        loss, metrics = model_lib.loss_and_metrics(head)
        trainable = training_model(model, accumulation, settings.runtime.train_metrics)
        per_call = strategy_lib.steps_per_execution(settings.runtime.steps_per_execution, steps_per_epoch)
        xla = strategy_lib.use_xla(settings.runtime.jit_compile, device)
        trainable.compile(optimizer=optimizer, loss=loss, metrics=metrics, jit_compile=xla,
                          steps_per_execution=per_call)

    # Only the chief writes TensorBoard logs where users look; other workers write to a
    # temporary directory (every worker must run the callback in multi-worker training).
    log_dir = (fn_args.model_run_dir if strategy_lib.is_chief()
               else tempfile.mkdtemp(prefix="tfxline-worker-logs-"))
    callbacks = [keras().callbacks.TensorBoard(log_dir=log_dir, update_freq="epoch")]
    early_stopping, early_stopping_info = None, "off"
    if training.early_stopping_patience and epochs > 1:
        monitor, why = early_stopping_monitor(spec.task, eval_ds)
        if why:
            logging.warning("early stopping watches val_loss: %s", why)
        early_stopping_info = f"{monitor}, patience {training.early_stopping_patience}" + (f" ({why})" if why else "")
        early_stopping = resume.resumable_early_stopping_class()(
            monitor=monitor, mode="max" if monitor == "val_auc" else "min",
            patience=training.early_stopping_patience, restore_best_weights=True)
        callbacks.append(early_stopping)
    checkpoint, first_epoch = None, 0
    if resumable:
        checkpoint = resume.TrainingCheckpoint(backup, model, optimizer, early_stopping, global_batch)
        first_epoch = checkpoint.restore(state)
        callbacks.append(checkpoint.callback())  # after early stopping: saves its state too
    else:
        logging.warning("%s cannot resume a killed training; a restarted Trainer starts over",
                        type(strategy).__name__)
    profiler = None
    if settings.runtime.profile_steps and strategy_lib.is_chief():
        profiler = profile_lib.profile_callback_class()(
            log_dir, math.ceil(settings.runtime.profile_steps / per_call),
            executions_per_epoch=math.ceil(steps_per_epoch / per_call),
            warmup=math.ceil(profile_lib.WARMUP_STEPS / per_call))
        callbacks.append(profiler)
    started = time.monotonic()
    if state.get("stopped"):  # killed after early stopping ended the fit: nothing left to train
        best = early_stopping.restored.get("best_weights") if early_stopping else None
        if best is not None:
            model.set_weights(best)
    else:
        trainable.fit(
            train_ds, initial_epoch=first_epoch, epochs=epochs, steps_per_epoch=steps_per_epoch,
            validation_data=eval_ds, validation_steps=validation_steps, callbacks=callbacks, verbose=2)
    seconds = time.monotonic() - started
    step_profile = profile_lib.summarize_run(profiler, log_dir, device) if profiler else None
    history = checkpoint.history if checkpoint else trainable.history.history
    epochs_run = len(next(iter(history.values()), []))
    export.export(model, tf_transform_output, spec, fn_args.serving_model_dir)
    if not strategy_lib.is_chief():
        tf.io.gfile.rmtree(log_dir)
    elif checkpoint and tf.io.gfile.exists(backup):
        tf.io.gfile.rmtree(backup)  # finished: nothing left to resume
    info = {
        "strategy": strategy_lib.strategy_kind(strategy),
        "replicas": replicas,
        "precision": policy,
        "jit_compile": xla,
        "steps_per_execution": per_call,
        "mode": mode,
        "reader": training.reader,
        "cached": cache,
        "train_data_bytes": data_bytes,
        "device": device,
        "batch_size": batch.per_replica,
        "configured_batch_size": training.batch_size,
        "batch_reason": batch.reason,  # why this batch (training.batch_scaling's rule)
        "learning_rate": batch.learning_rate,
        "gradient_accumulation_steps": accumulation,
        "global_batch": global_batch,
        "train_examples": train_examples,
        "steps_per_epoch": steps_per_epoch,
        "resumed_at_epoch": first_epoch,
        "resumable": resumable,
        "steps": steps_per_epoch * epochs_run,
        "epochs": epochs_run,
        "max_epochs": epochs,
        "best_epoch": (early_stopping.best_epoch + 1) if early_stopping else epochs_run,
        "early_stopping": early_stopping_info,  # what it watched, and why when not the usual metric
        "train_seconds": round(seconds, 2),
        "examples_per_second": round(steps_per_epoch * (epochs_run - first_epoch) * global_batch
                                     / max(seconds, 1e-9), 1),
        "history": {k: [float(x) for x in v] for k, v in history.items()},
        "profile": step_profile,  # runtime.profile_steps: the traced steps, summarised
        # What bench/gpu_bench.py needs to rebuild this model without tft or the config.
        "label": spec.label.name,
        "head": dataclasses.asdict(head),
        "model_inputs": [[mi.name, mi.cardinality] for mi in inputs],
        "model": dataclasses.asdict(settings.model),
    }
    if strategy_lib.is_chief():
        with tf.io.gfile.GFile(os.path.join(fn_args.model_run_dir, TRAINING_RUN_FILE), "w") as f:
            json.dump(info, f, indent=2)
    logging.info("training finished: %s", {k: v for k, v in info.items() if k != "history"})
    return info
