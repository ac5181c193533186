"""The model's decision rule, chosen after training on the validation rows (the ones early
stopping watched, never the eval split the Evaluator gates on): for a binary model, the
threshold ``evaluation.threshold``'s objective picks (task_types/decision.py). The export serves
it (``predicted_class``) and writes it beside the model (``DECISION_FILE``), where the Evaluator,
the Pusher and the report read it.
"""
from __future__ import annotations

import json
import os
from typing import Any, Dict, Optional

import numpy as np
import tensorflow as tf

from tfxline import task_types

# In the SavedModel's assets.extra/ (TF Serving and KServe read only its warm-up requests there)
DECISION_FILE = os.path.join("assets.extra", "decision.json")


def choose(model, validation, steps: int, task: str, objective: str) -> Optional[Dict[str, Any]]:
    """The task's decision on the model's outputs for the validation rows; None where the task
    makes none (multi-class takes the likeliest class, regression serves the value)."""
    kind = task_types.get(task)
    if not kind.decides:
        return None
    from tfxline.trainer.model import validation_outputs

    outputs, labels = validation_outputs(model, validation, steps)
    return kind.decision(np.reshape(kind.flat_output(outputs), [-1]), labels, objective)


def write(model_dir: str, decision: Optional[Dict[str, Any]]) -> None:
    if decision is None:
        return
    path = os.path.join(model_dir, DECISION_FILE)
    tf.io.gfile.makedirs(os.path.dirname(path))
    with tf.io.gfile.GFile(path, "w") as f:
        json.dump(decision, f, indent=2)


def read(model_dir: str) -> Optional[Dict[str, Any]]:
    """A model's decision (``write``'s), or None: a model of a task without one, or from before
    thresholds were chosen (it decides at 0.5)."""
    path = os.path.join(model_dir, DECISION_FILE)
    if not tf.io.gfile.exists(path):
        return None
    with tf.io.gfile.GFile(path) as f:
        return json.load(f)
