"""The pipeline's side of the sections the Trainer reads (``model``, ``training``, ``runtime``): their
rules, and the training step budget as TFX's Trainer takes it. Their dataclasses live in
trainer/settings.py, below pipeline/, where the rule protocol (``config_parse.Problem``) is not
importable: so each section's rules are one function here, registered by class in ``RULES``.
"""
from __future__ import annotations

import json
from typing import Any, Dict, Iterator, Optional

from tfxline.pipeline.config_parse import Problem, bad
from tfxline.trainer.settings import (
    BATCH_SCALINGS,
    CLASS_WEIGHTS,
    JIT_COMPILES,
    PRECISIONS,
    READERS,
    STRATEGIES,
    TRAINING_MODES,
    ModelConfig,
    RuntimeConfig,
    TrainingConfig,
)


def model_problems(model: ModelConfig) -> Iterator[Problem]:
    if not all(u >= 1 for u in model.hidden_units):
        yield bad(model, "hidden_units", "every layer needs >= 1 unit")
    if not 0.0 <= model.dropout < 1.0:
        yield bad(model, "dropout", "must be in [0, 1)")
    if not model.learning_rate > 0:
        yield bad(model, "learning_rate", "must be > 0")
    if not 0.0 <= model.weight_decay < 1.0:
        yield bad(model, "weight_decay", "must be in [0, 1) (0 turns it off)")


def training_problems(training: TrainingConfig) -> Iterator[Problem]:
    if not training.batch_size >= 1:
        yield bad(training, "batch_size", "must be >= 1")
    if training.batch_scaling not in BATCH_SCALINGS:
        yield bad(training, "batch_scaling", f"use one of {', '.join(BATCH_SCALINGS)}")
    if not training.train_steps >= 1:
        yield bad(training, "train_steps", "must be >= 1")
    if training.mode not in TRAINING_MODES:
        yield bad(training, "mode", f"use one of {', '.join(TRAINING_MODES)}")
    if not training.epochs >= 1:
        yield bad(training, "epochs", "must be >= 1")
    if training.reader not in READERS:
        yield bad(training, "reader", f"use one of {', '.join(READERS)}")
    if not (training.mode == "epochs" or training.epochs <= training.train_steps):
        yield bad(training, "epochs", "in steps mode it counts the rounds training.train_steps (--train-steps) is "
                                      "split into, so it must be <= training.train_steps: lower one or raise the other")
    if not training.gradient_accumulation_steps >= 1:
        yield bad(training, "gradient_accumulation_steps", "must be >= 1 (1 turns accumulation off)")
    if not training.cache_max_gb > 0:
        yield bad(training, "cache_max_gb", "must be > 0 (training.cache: false caches nothing)")
    if not training.eval_steps >= 1:
        yield bad(training, "eval_steps", "must be >= 1")
    if training.class_weight not in CLASS_WEIGHTS:
        yield bad(training, "class_weight", f"use one of {', '.join(CLASS_WEIGHTS)}")


def runtime_problems(runtime: RuntimeConfig) -> Iterator[Problem]:
    if not runtime.steps_per_execution >= 0:
        yield bad(runtime, "steps_per_execution", "must be >= 0 (0: auto)")
    if not runtime.profile_steps >= 0:
        yield bad(runtime, "profile_steps", "must be >= 0 (0: off)")
    if runtime.strategy not in STRATEGIES:
        yield bad(runtime, "strategy", f"use one of {', '.join(STRATEGIES)}")
    if runtime.precision not in PRECISIONS:
        yield bad(runtime, "precision", f"use one of {', '.join(PRECISIONS)}")
    if runtime.jit_compile not in JIT_COMPILES:
        yield bad(runtime, "jit_compile", "use auto (XLA on GPUs only), true or false")


RULES = {ModelConfig: model_problems, TrainingConfig: training_problems, RuntimeConfig: runtime_problems}


def fit_rounds_to_steps(raw: Dict[str, Any], train_steps: Any) -> Optional[str]:
    """--train-steps N switches to steps mode, where training.epochs counts the rounds the budget
    is split into (validation after each): a config's passes over the data (10 by default) become
    at most N rounds, in ``raw`` (the config as YAML gave it). Returns the note that says so (the
    command prints it), or None when the rounds already fit. Not for a --set training.epochs,
    which is checked against N instead."""
    if not isinstance(train_steps, int) or isinstance(train_steps, bool) or train_steps < 1:
        return None
    training = raw.get("training")
    training = training if isinstance(training, dict) else raw.setdefault("training", {})
    epochs = training.get("epochs", TrainingConfig.epochs)
    if not (isinstance(epochs, int) and not isinstance(epochs, bool) and epochs > train_steps):
        return None
    training["epochs"] = train_steps
    return (f"--train-steps {train_steps} lowers training.epochs from {epochs} to {train_steps}: in steps mode it "
            f"counts the rounds the {train_steps} steps are split into, each ending with a validation pass; "
            "--set training.epochs=N picks another count")


def step_budget(training: TrainingConfig) -> int:
    """The Trainer's step budget: training.train_steps in steps mode; 0 (none) in epochs mode,
    where the data size and training.epochs set the length."""
    return training.train_steps if training.mode == "steps" else 0


def train_args(train_steps: int) -> Dict[str, int]:
    """TFX's TrainArgs for a budget of ``train_steps`` optimizer steps (0: none): the one place
    where the name changes. tfxline calls it train_steps from the flag (--train-steps) through the
    config (training.train_steps) to the Trainer, whose run_fn reads it back as FnArgs.train_steps;
    TFX's TrainArgs proto calls it num_steps. The factory's TrainArgs and a compiled pipeline's
    train_args parameter (its default; submit / run-compiled --train-steps) come from here."""
    return {"num_steps": int(train_steps)}


def train_args_json(train_steps: int) -> str:
    """``train_args`` as a compiled pipeline's train_args runtime parameter holds it (JSON)."""
    return json.dumps(train_args(train_steps))
