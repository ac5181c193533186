"""Which model the run keeps (``model.family``), among the families trees/settings.py
``families`` says it trains: the Trainer's side of the one place that decides the family.

- ``network``: the Keras model alone, as before the family existed.
- ``trees``: a decision forest alone (trainer/trees.py); a table's inputs only.
- ``auto``: a table without text trains both on the same train split; each is scored on the held
  half of the validation split (trainer/inputs.py ``split_validation``: the rows early stopping,
  the Tuner's trials and the trees' early stopping never read, so a network's kept epoch, the best
  of several on the rows it would be scored on, does not flatter it; never the eval split the
  Evaluator gates on) by the task's main metric, and so is their average (one SavedModel holding both, serving the mean
  of their outputs). The best of the three is kept; the record says by how much, against one
  standard error of the metric on those rows (the task type's ``metric_noise``: the Tuner's
  yardstick, docs/tuning.md). Images and text keep the network: no tree encoding of pixels or
  n-grams is measured better here.
"""
from __future__ import annotations

import dataclasses
import logging
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np
import tensorflow as tf

from tfxline import task_types
from tfxline.trainer import trees as trees_lib
from tfxline.trainer.keras_compat import keras
from tfxline.trainer.model import validation_outputs
from tfxline.transforms import features as F
from tfxline.trees.settings import TREES

AVERAGE = "average"


@dataclasses.dataclass
class Candidate:
    name: str
    model: Any
    seconds: float  # its training's wall time


def score(outputs: np.ndarray, labels: np.ndarray, spec: F.FeatureSpec) -> float:
    """The task's main metric on served outputs (a log-space regression in its own unit)."""
    kind = task_types.get(spec.task)
    served = np.asarray(kind.serving_output(spec.label, tf.constant(outputs)))
    if not kind.predicts_classes:  # a regression's labels in its own unit too (a log label turned back)
        labels = np.asarray(kind.label_in_its_unit(spec.label, tf.constant(labels.astype(np.float32))))
    return kind.main_metric_value(served, labels)


def average_model(models: List[Any]):
    """One Keras model serving the mean of ``models``' outputs (they take the same inputs)."""
    k = keras()
    inputs = {name: k.Input(shape=t.shape[1:], dtype=t.dtype, name=name) for name, t in models[0].input.items()}
    mean = k.layers.Average(name="family_average")([m(inputs) for m in models])
    return k.Model(inputs=inputs, outputs=mean, name="average")


def choose(candidates: List[Candidate], validation, steps: int, spec: F.FeatureSpec,
           configured: str) -> Tuple[Any, Dict[str, Any]]:
    """The model the run keeps, and what training_run.json records of the choice."""
    if len(candidates) == 1:
        only = candidates[0]
        return only.model, {"configured": configured, "chosen": only.name,
                            "seconds": {only.name: round(only.seconds, 2)}}
    kind = task_types.get(spec.task)
    scored: Dict[str, float] = {}
    outputs: Dict[str, np.ndarray] = {}
    labels = np.zeros([0])
    for c in candidates:
        outputs[c.name], labels = validation_outputs(c.model, validation, steps)
        scored[c.name] = score(outputs[c.name], labels, spec)
    scored[AVERAGE] = score(np.mean([outputs[c.name] for c in candidates], axis=0), labels, spec)
    sign = 1.0 if kind.higher_is_better else -1.0
    ranked = sorted(scored, key=lambda n: sign * np.nan_to_num(scored[n], nan=-np.inf * sign), reverse=True)
    best, runner_up = ranked[0], ranked[1]
    noise = kind.metric_noise(kind.main_metric, scored[best], labels)
    models = {c.name: c.model for c in candidates}
    model = average_model([c.model for c in candidates]) if best == AVERAGE else models[best]
    info = {"configured": configured, "chosen": best, "metric": kind.main_metric,
            "scores": {n: round(float(v), 6) for n, v in scored.items()},
            "margin": round(abs(scored[best] - scored[runner_up]), 6), "runner_up": runner_up,
            "noise": round(float(noise), 6), "validation_rows": int(len(labels)),
            "seconds": {c.name: round(c.seconds, 2) for c in candidates}}
    logging.info("model.family %s: %s kept (%s)", configured, best, info["scores"])
    return model, info


def served(model, info: Dict[str, Any], network, refit: Optional[Callable[[], Any]]) -> Tuple[Any, Any]:
    """The model the run exports, and the refit forest (or None): the kept ``model``, its trees
    trained again by ``refit`` (model.trees.refit: on the train and validation rows) where trees or
    the average were kept; ``info`` (the choice's record) gains ``refit``: rows, iterations, seconds."""
    chosen = info.get("chosen")
    if refit is None or chosen not in (TREES, AVERAGE):
        return model, None
    refitted, seconds = timed(refit)
    info["refit"] = {"rows": int(refitted.ydf_model.data_spec().created_num_rows),
                     "iterations": trees_lib.iterations(refitted), "seconds": round(seconds, 2)}
    if chosen == TREES:
        return refitted, refitted
    assert network is not None  # the average is of the network and the trees
    return average_model([network, refitted]), refitted


def timed(train: Callable[[], Any]) -> Tuple[Any, float]:
    started = time.monotonic()
    return train(), time.monotonic() - started
