"""The Trainer's step budget as TFX takes it (TrainArgs, a compiled pipeline's train_args
parameter), and how ``--train-steps`` fits training.epochs to it. The ``model``, ``training`` and
``runtime`` sections themselves, with their rules, are in trainer/settings.py.
"""
from __future__ import annotations

import json
from typing import Any, Dict, Optional

from tfxline.trainer.settings import TrainingConfig


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
