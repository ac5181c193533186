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
from typing import Any, Dict, List, Mapping

import tensorflow as tf
import tensorflow_transform as tft

from pipeline.config import ModelConfig, RuntimeConfig, TrainingConfig
from pipeline.config_loader import section_from_dict
from trainer import data, export, model as model_lib, precision, strategy as strategy_lib
from trainer.accumulation import with_gradient_accumulation
from trainer.keras_compat import keras, skip_autograph_for_tf_keras
from transforms import features as F

RUN_INFO_FILE = "training_run.json"


@dataclasses.dataclass(frozen=True)
class TrainerSettings:
    features: F.FeatureSpec
    model: ModelConfig
    training: TrainingConfig
    runtime: RuntimeConfig

    @classmethod
    def from_custom_config(cls, custom_config: Mapping[str, Any]) -> "TrainerSettings":
        return cls(
            features=F.FeatureSpec.from_dict(custom_config["features"]),
            model=section_from_dict(ModelConfig, custom_config.get("model", {}), "model"),
            training=section_from_dict(TrainingConfig, custom_config.get("training", {}), "training"),
            runtime=section_from_dict(RuntimeConfig, custom_config.get("runtime", {}), "runtime"),
        )


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


def make_head(spec: F.FeatureSpec, tf_transform_output) -> model_lib.Head:
    if spec.task == F.TASK_MULTICLASS:
        return model_lib.Head(spec.task, tf_transform_output.vocabulary_size_by_name(F.LABEL_VOCABULARY))
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


def training_length(training: TrainingConfig, fn_args, global_batch: int):
    """(epochs, steps per epoch, train examples or None) for the configured mode.

    steps: the Trainer's num_steps (or training.train_steps) optimizer steps in all, split
    into ``epochs`` rounds. epochs: ``epochs`` full passes over the train split, so the
    training length follows the data size and the epochs asked for, never a fixed cap.
    """
    if training.mode == "epochs":
        examples = data.count_records(fn_args.train_files)
        return training.epochs, max(1, math.ceil(examples / global_batch)), examples
    total_steps = int(fn_args.train_steps or training.train_steps)
    epochs = max(1, min(training.epochs, total_steps))
    return epochs, math.ceil(total_steps / epochs), None


def input_dataset(fn_args, settings: TrainerSettings, files, tf_transform_output, batch_size: int,
                  *, shuffle: bool):
    training, label = settings.training, settings.features.label.name
    if training.reader == "tfxio":
        if getattr(fn_args, "data_accessor", None) is None:
            raise ValueError("training.reader is tfxio but the Trainer passed no data accessor; "
                             "use training.reader=tfrecord")
        return data.make_tfxio_dataset(
            fn_args.data_accessor, files, tf_transform_output.transformed_metadata.schema, label,
            batch_size, shuffle=shuffle, seed=training.seed)
    return data.make_dataset(files, tf_transform_output.transformed_feature_spec(), label, batch_size,
                             shuffle=shuffle, seed=training.seed, cache=training.cache)


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
    global_batch = training.batch_size * replicas * accumulation

    train_ds = input_dataset(fn_args, settings, fn_args.train_files, tf_transform_output,
                             global_batch, shuffle=True)
    # Validation only runs forward passes: micro-batches, not the accumulated batch.
    eval_ds = input_dataset(fn_args, settings, fn_args.eval_files, tf_transform_output,
                            training.batch_size * replicas, shuffle=False)

    epochs, steps_per_epoch, train_examples = training_length(training, fn_args, global_batch)
    head = make_head(spec, tf_transform_output)
    with strategy.scope():
        model = model_lib.build_model(
            model_inputs(spec, tf_transform_output), head, settings.model.hidden_units,
            settings.model.dropout, settings.model.embedding_max_dim)
        schedule = model_lib.learning_rate_schedule(
            settings.model.learning_rate, steps_per_epoch * epochs, settings.model.warmup_steps)
        optimizer = precision.wrap_optimizer(keras().optimizers.Adam(schedule), policy)
        loss, metrics = model_lib.loss_and_metrics(head)
        trainable = with_gradient_accumulation(model, accumulation)
        trainable.compile(optimizer=optimizer, loss=loss, metrics=metrics,
                          jit_compile=settings.runtime.jit_compile)

    # Only the chief writes TensorBoard logs where users look; other workers write to a
    # temporary directory (every worker must run the callback in multi-worker training).
    log_dir = (fn_args.model_run_dir if strategy_lib.is_chief()
               else tempfile.mkdtemp(prefix="tfxline-worker-logs-"))
    callbacks = [keras().callbacks.TensorBoard(log_dir=log_dir, update_freq="epoch")]
    # A killed Trainer, started again on the same inputs, resumes from its last epoch.
    # Keras supports this for the default, mirrored, multi-worker and TPU strategies only.
    resumable = not isinstance(strategy, (tf.distribute.OneDeviceStrategy,
                                          tf.distribute.experimental.ParameterServerStrategy))
    backup = backup_dir(fn_args)
    if resumable:
        callbacks.append(keras().callbacks.BackupAndRestore(backup_dir=backup))
    else:
        logging.warning("%s cannot resume a killed training (Keras BackupAndRestore does not "
                        "support it); a restarted Trainer starts over", type(strategy).__name__)
    if training.early_stopping_patience and epochs > 1:
        monitor = "val_auc" if spec.task == F.TASK_BINARY else "val_loss"
        callbacks.append(keras().callbacks.EarlyStopping(
            monitor=monitor, mode="max" if monitor == "val_auc" else "min",
            patience=training.early_stopping_patience, restore_best_weights=True))
    started = time.monotonic()
    history = trainable.fit(
        train_ds, epochs=epochs, steps_per_epoch=steps_per_epoch, validation_data=eval_ds,
        validation_steps=int(fn_args.eval_steps or training.eval_steps), callbacks=callbacks, verbose=2)
    seconds = time.monotonic() - started
    export.export(model, tf_transform_output, spec, fn_args.serving_model_dir)
    if not strategy_lib.is_chief():
        tf.io.gfile.rmtree(log_dir)
    elif resumable and tf.io.gfile.exists(backup):
        tf.io.gfile.rmtree(backup)  # finished: nothing left to resume
    info = {
        "strategy": strategy_lib.strategy_kind(strategy),
        "replicas": replicas,
        "precision": policy,
        "jit_compile": settings.runtime.jit_compile,
        "mode": training.mode,
        "reader": training.reader,
        "batch_size": training.batch_size,
        "gradient_accumulation_steps": accumulation,
        "global_batch": global_batch,
        "train_examples": train_examples,
        "steps_per_epoch": steps_per_epoch,
        "first_epoch": history.epoch[0] if history.epoch else None,
        "resumable": resumable,
        "steps": steps_per_epoch * len(history.epoch),
        "epochs": len(history.epoch),
        "train_seconds": round(seconds, 2),
        "examples_per_second": round(steps_per_epoch * len(history.epoch) * global_batch / max(seconds, 1e-9), 1),
        "history": {k: [float(x) for x in v] for k, v in history.history.items()},
    }
    if strategy_lib.is_chief():
        with tf.io.gfile.GFile(os.path.join(fn_args.model_run_dir, RUN_INFO_FILE), "w") as f:
            json.dump(info, f, indent=2)
    logging.info("training finished: %s", {k: v for k, v in info.items() if k != "history"})
    return info
