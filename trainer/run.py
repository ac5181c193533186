"""``run_fn``: the entry point TFX's Trainer calls (referenced by import path), and ``train``'s
stages: what the data decides (trainer/inputs.py), the model, its callbacks (trainer/callbacks.py),
the fit, the export and the record (training_run.json).

Every choice comes from ``fn_args.custom_config``, which the pipeline factory fills from
the typed config: the feature spec, model hyperparameters, training and runtime settings.
Global state (the Keras dtype policy) is set here, at the entry point, and restored.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
import time
from typing import Any, Dict, List, Optional

import tensorflow as tf

from tfxline.patches import autograph, tf_custom_gradients
from tfxline.trainer import budget as budget_lib
from tfxline.trainer import callbacks as callbacks_lib
from tfxline.trainer import (
    data,
    decision,
    export,
    images,
    importance,
    precision,
    resume,
    text_profile,
    text_weights,
    trees_run,
    tuning_settings,
)
from tfxline.trainer import family as family_lib
from tfxline.trainer import model as model_lib
from tfxline.trainer import optimizer as optimizer_lib
from tfxline.trainer import profile as profile_lib
from tfxline.trainer import strategy as strategy_lib
from tfxline.trainer import trees as trees_lib
from tfxline.trainer.inputs import Inputs, Sizes, input_data, plan_sizes
from tfxline.trainer.keras_compat import keras
from tfxline.trainer.model_inputs import make_head, model_inputs
from tfxline.trainer.run_record import training_info
from tfxline.trainer.settings import TRAINING_RUN_FILE, TrainerSettings
from tfxline.trainer.train_step import training_model
from tfxline.transforms import features as F
from tfxline.trees.settings import NETWORK, TREES, families


def backup_dir(fn_args) -> str:
    """A checkpoint directory that outlives the execution: TFX gives a re-run Trainer new
    output directories, so the backup is keyed by what determines the training instead
    (inputs and settings) under the component's root. Keras deletes it after a finished fit.
    """
    key = json.dumps({"transform": fn_args.transform_output, "train": list(fn_args.train_files),
                      "config": fn_args.custom_config, "steps": fn_args.train_steps,
                      "tuned": getattr(fn_args, "hyperparameters", None)}, sort_keys=True,
                     default=str)
    component_root = os.path.dirname(os.path.dirname(os.path.normpath(fn_args.model_run_dir)))
    return os.path.join(component_root, "backup", hashlib.sha256(key.encode()).hexdigest()[:16])


def run_fn(fn_args) -> None:
    keras()  # fail early, with the fix named, if tf.keras is not tf_keras
    # The Tuner's best values (fn_args.hyperparameters), laid over the config's as each trial laid its own
    settings = tuning_settings.tuned(TrainerSettings.from_custom_config(fn_args.custom_config),
                                     tuning_settings.best_values(getattr(fn_args, "hyperparameters", None)))
    strategy = strategy_lib.create_strategy(settings.runtime.strategy)
    policy = precision.resolve_policy(settings.runtime.precision, strategy)
    # also where no executor_patches wraps the Trainer (Vertex AI Training's container). The
    # training's graphs are done when it returns: TF's gradient registry and the Transform layers
    # let them go (patches/tf_custom_gradients.py), not the interpreter's teardown.
    try:
        with autograph.libraries_not_converted(), precision.precision_policy(policy), \
                tf_custom_gradients.released():
            train(fn_args, settings, strategy, policy)
    finally:
        data.forget_transform_layers()


@dataclasses.dataclass
class Built:
    """The compiled model, ready to fit."""
    head: model_lib.Head
    inputs: List[model_lib.ModelInput]
    model: Any
    trainable: Any
    optimizer: Any
    per_call: int
    xla: bool
    frozen_epochs: int = 0  # an image backbone from a weights file: its first epochs frozen
    fine_tune: Any = None   # () -> None: unfreeze it and compile again (build)
    budget_scale: Any = None  # training.time_budget_minutes: the learning rate schedule's scale (trainer/budget.py)


def build(fn_args, settings: TrainerSettings, sizes: Sizes, strategy, policy: str) -> Built:
    """The model, its optimizer and loss, compiled in the strategy's scope. An image model from a
    weights file starts with its backbone frozen; ``Built.fine_tune`` unfreezes it (trainer/images.py)."""
    spec, model_settings = settings.features, settings.model
    head = make_head(spec, sizes.tf_transform_output, fn_args.train_files)
    image = spec.data_kind == F.IMAGE
    inputs = [] if image else model_inputs(spec, sizes.tf_transform_output)
    scale = budget_lib.scale_variable() if budget_lib.applies(settings.training.time_budget_minutes, sizes.epochs,
                                                               strategy_lib.cluster_size(strategy_lib.tf_config())) \
        else None
    with strategy.scope():
        if image:  # a backbone over the decoded pixels (trainer/images.py)
            model = images.build_model(spec, head, model_settings.backbone, model_settings.weights,
                                       model_settings.dropout)
        else:
            model = model_lib.build_model(
                inputs, head, model_settings.hidden_units,
                model_settings.dropout, model_settings.embedding_max_dim, model_settings.batch_norm,
                model_settings.text_encoder, model_settings.text_dim, model_settings.text_saved_model,
                model_settings.text_fine_tune)
        per_call = strategy_lib.steps_per_execution(settings.runtime.steps_per_execution, sizes.steps_per_epoch)
        # a string op has no XLA kernel: a pretrained text encoder reads the raw text (trainer/text_pretrained.py)
        xla = strategy_lib.use_xla(settings.runtime.jit_compile, sizes.device) and not any(
            mi.raw_text for mi in inputs)

        def compiled(learning_rate: float):
            schedule = optimizer_lib.learning_rate_schedule(
                learning_rate, sizes.steps_per_epoch * sizes.epochs, model_settings.warmup_steps)
            if scale is not None:  # the decay compressed onto the passes that fit the time budget
                schedule = budget_lib.compressed(schedule, scale)
            optimizer = precision.wrap_optimizer(optimizer_lib.optimizer(schedule, model_settings.weight_decay), policy)
            loss, metrics = model_lib.loss_and_metrics(head)
            trainable = training_model(model, sizes.accumulation, settings.runtime.train_metrics)
            trainable.compile(optimizer=optimizer, loss=loss, metrics=metrics, jit_compile=xla,
                              steps_per_execution=per_call)
            return trainable, optimizer

        frozen = images.frozen_epochs(model, model_settings.frozen_epochs, sizes.epochs) if image else 0
        trainable, optimizer = compiled(sizes.batch.learning_rate)
    built = Built(head, inputs, model, trainable, optimizer, per_call, xla, frozen, budget_scale=scale)

    def fine_tune() -> None:  # the whole network, at a tenth of the learning rate
        with strategy.scope():
            images.unfreeze(model)
            built.trainable, built.optimizer = compiled(sizes.batch.learning_rate * images.FINE_TUNE_RATE)

    built.fine_tune = fine_tune
    return built


def fit(built: Built, inputs: Inputs, sizes: Sizes, cbs: callbacks_lib.Callbacks, state: Dict[str, Any]) -> float:
    """Train (or, killed after early stopping ended the fit, take its best weights); the seconds."""
    started = time.monotonic()
    if state.get("stopped"):  # killed after early stopping ended the fit: nothing left to train
        best = cbs.early_stopping.restored.get("best_weights") if cbs.early_stopping else None
        if best is not None:
            built.model.set_weights(best)
    else:
        for i, (first, last) in enumerate(images.phases(cbs.first_epoch, sizes.epochs, built.frozen_epochs)):
            if cbs.budget is not None and cbs.budget.stopped:
                break  # the time budget ended the training within an earlier phase
            if i or first >= built.frozen_epochs > 0:  # the frozen epochs are done (or were, before a restart)
                built.fine_tune()
            built.trainable.fit(
                inputs.train, initial_epoch=first, epochs=last, steps_per_epoch=sizes.steps_per_epoch,
                validation_data=inputs.watched, validation_steps=inputs.watched_steps, callbacks=cbs.callbacks,
                class_weight=inputs.class_weight, verbose=2)
    return time.monotonic() - started


@dataclasses.dataclass
class NetworkRun:
    """The trained network and how its fit went."""
    built: Built
    callbacks: callbacks_lib.Callbacks
    seconds: float
    history: Dict[str, Any]
    step_profile: Optional[Dict[str, Any]]


def train_network(fn_args, settings: TrainerSettings, strategy, policy: str, sizes: Sizes, inputs: Inputs,
                  backup: str, resumable: bool, state: Dict[str, Any]) -> NetworkRun:
    built = build(fn_args, settings, sizes, strategy, policy)
    cbs = callbacks_lib.make_callbacks(
        fn_args.model_run_dir, settings, strategy, built.model, built.optimizer, inputs.watched,
        epochs=sizes.epochs, steps_per_epoch=sizes.steps_per_epoch, global_batch=sizes.global_batch,
        per_call=built.per_call, backup=backup if resumable else None, state=state, budget_scale=built.budget_scale)
    seconds = fit(built, inputs, sizes, cbs, state)
    step_profile = profile_lib.summarize_run(cbs.profiler, cbs.log_dir, sizes.device) if cbs.profiler else None
    history = cbs.checkpoint.history if cbs.checkpoint else built.trainable.history.history
    return NetworkRun(built, cbs, seconds, history, step_profile)


def train(fn_args, settings: TrainerSettings, strategy, policy: str) -> Dict[str, Any]:
    tf.keras.utils.set_random_seed(settings.training.seed)
    sizes = plan_sizes(fn_args, settings, strategy)
    # A killed Trainer, started again on the same inputs, continues the same training.
    resumable = not isinstance(strategy, tf.distribute.experimental.ParameterServerStrategy)
    backup = backup_dir(fn_args)
    state = resume.read_state(backup, sizes.global_batch) if resumable else {}
    inputs = input_data(fn_args, settings, sizes, state)
    spec, trained = settings.features, families(settings.features, settings.model.family)
    candidates, net, forest = [], None, None
    if NETWORK in trained:
        net = train_network(fn_args, settings, strategy, policy, sizes, inputs, backup, resumable, state)
        candidates.append(family_lib.Candidate(NETWORK, net.built.model, net.seconds))
    if TREES in trained:
        forest = trees_run.train_trees(fn_args, settings, sizes, inputs)
        candidates.append(family_lib.Candidate(TREES, forest.model, forest.seconds))
    # the best of the network, the trees and their average (model.family: auto) on the held half of
    # the validation rows, which early stopping never read (trainer/inputs.py split_validation)
    model, family_info = family_lib.choose(candidates, inputs.held, inputs.held_steps, spec,
                                           settings.model.family)
    if len(candidates) > 1 and inputs.split:
        family_info["watched_rows"] = inputs.validation_rows - inputs.held_rows  # what early stopping read
    # the threshold and the importance below read the validation rows with the model they chose: the
    # served one's trees may have trained on those rows since (model.trees.refit)
    chosen = decision.choose(model, inputs.validation, inputs.validation_steps, spec.task, settings.threshold)
    served, refitted = family_lib.served(model, family_info, net.built.model if net else None,
                                         trees_run.refit_trees(settings, forest))
    export.export(served, sizes.tf_transform_output, spec, fn_args.serving_model_dir, chosen)
    if net and not strategy_lib.is_chief():
        tf.io.gfile.rmtree(net.callbacks.log_dir)
    elif net and net.callbacks.checkpoint and tf.io.gfile.exists(backup):
        tf.io.gfile.rmtree(backup)  # finished: nothing left to resume
    info = training_info(settings, strategy, policy, sizes, inputs, net, resumable)
    info["family"] = family_info  # which family was kept, and the candidates' validation scores
    info["trees"] = trees_lib.describe(refitted or forest.model) if forest is not None else None
    # the Tuner's (or reused) values the model was trained with, laid over the config's
    info["tuned"] = tuning_settings.best_values(getattr(fn_args, "hyperparameters", None)) or None
    info["decision"] = chosen  # binary: the threshold chosen on validation, and what it gives there
    # the columns the model leans on most: [column, the main metric's loss on validation when shuffled]
    info["leans_on"] = importance.leaned_on(model, inputs.validation, inputs.validation_steps,
                                            spec, settings.training.seed) \
        if spec.data_kind == F.TABLE else []  # an image model reads one input
    # a text input's n-grams the model leans on most, toward each class (the bag's linear weights)
    info["text_ngrams"] = text_weights.leaned_on_ngrams(model, sizes.tf_transform_output, spec)
    # each text input's documents on the validation rows: length, out-of-vocabulary rate, commonest tokens
    text_ids = text_profile.validation_ids(inputs.validation, inputs.validation_steps, spec)
    info["text_columns"] = text_profile.text_profiles(text_ids, sizes.tf_transform_output, spec)
    if strategy_lib.is_chief():  # the pushed model carries its text's statistics: later runs' drift reference
        text_profile.write_statistics(fn_args.serving_model_dir, text_ids, sizes.tf_transform_output, spec)
        with tf.io.gfile.GFile(os.path.join(fn_args.model_run_dir, TRAINING_RUN_FILE), "w") as f:
            json.dump(info, f, indent=2)
    logging.info("training finished: %s", {k: v for k, v in info.items() if k != "history"})
    return info
