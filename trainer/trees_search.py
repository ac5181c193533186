"""The Tuner's search of the trees' space (``tuning.enabled`` with model.family trees or auto: issue
#73), beside its search of the network's (trainer/tune.py), under the same rules (docs/tuning.md):
the config's own trees settings train first as the baseline, a trial replaces them only when it
beats them on the validation rows by more than ``MARGIN_SE`` standard errors of the task's main
metric, and the search stops at its budget. The best values reach the Trainer in the same
best_hyperparameters as the network's, as ``trees.KEY`` (tuning_settings.tuned lays them over
``model.trees``), so ``tuning.reuse`` and the Tuner's cache carry them alike.

A trees trial is one forest on the train split, read once for every trial (seconds on tables of
thousands of rows), so it takes at most ``TREES_BUDGET_SHARE`` of the wall budget and as many
trials as ``tuning.max_trials``, from ``SPACE`` in a seeded random order.
"""
from __future__ import annotations

import dataclasses
import itertools
import logging
import random
import time
from typing import Any, Callable, Dict, List, Optional

import tensorflow as tf

from tfxline import task_types
from tfxline.trainer import family as family_lib
from tfxline.trainer import tuning_settings as T
from tfxline.trainer.inputs import input_data, plan_sizes
from tfxline.trainer.model import validation_outputs
from tfxline.trainer.settings import TrainerSettings
from tfxline.trees.settings import TREES, TreesConfig, families, resolved

# The trees' choices: the algorithm, its depth (0: the algorithm's usual, boosted 6 / forest 16),
# the boosted trees' learning rate (a forest has none), a leaf's fewest rows, categorical splits.
# num_trees stays the config's (above 10,000 training rows early stopping on validation keeps fewer).
SPACE: Dict[str, tuple] = {"algorithm": ("boosted", "forest"), "max_depth": (0, 4, 8),
                           "shrinkage": (0.05, 0.1, 0.2), "min_examples": (2, 5, 20),
                           "categorical": ("cart", "random")}
TREES_BUDGET_SHARE = 0.25  # of tuning.max_minutes


def candidates(config: TreesConfig, count: int, seed: int) -> List[Dict[str, Any]]:
    """Up to ``count`` distinct settings from SPACE, in a seeded random order, none the config's own
    (a forest's shrinkage is not varied: it reads none); two settings are one where they resolve to
    the same (a 0 is its algorithm's usual value)."""
    seen, out = set(), []
    grid = [dict(zip(SPACE, values)) for values in itertools.product(*SPACE.values())]
    random.Random(seed).shuffle(grid)

    def key(c: TreesConfig) -> tuple:
        return tuple(getattr(resolved(c), k) for k in SPACE)

    own = key(config)
    for values in grid:
        if values["algorithm"] == "forest":
            values = dict(values, shrinkage=config.shrinkage)
        key_of = key(dataclasses.replace(config, **values))
        if key_of == own or key_of in seen:
            continue
        seen.add(key_of)
        out.append(values)
        if len(out) == count:
            break
    return out


def search(fn_args, settings: TrainerSettings, tuning: T.TuningConfig, started: float,
           progress: Callable[..., None]) -> Optional[Dict[str, Any]]:
    """The trees' search and its record (None where no trees train); its budget starts at ``started``."""
    from tfxline.trainer.trees_run import fit_best, one_batch, trees_columns, watched  # the Trainer's own reading

    spec = settings.features
    if TREES not in families(spec, settings.model.family):
        return None
    kind = task_types.get(spec.task)
    sizes = plan_sizes(fn_args, settings, tf.distribute.get_strategy())
    inputs = input_data(fn_args, settings, sizes, {})
    # the trials are fitted and scored on the rows the network's trials read (auto: the watched half),
    # so the family choice's held half stays unread by every choice before it
    train, validation, names, units = trees_columns(fn_args, settings, sizes, inputs)
    validation = watched(validation, inputs)
    deadline = started + TREES_BUDGET_SHARE * tuning.max_minutes * 60 if tuning.max_minutes else float("inf")
    metric = f"val_{kind.main_metric}"

    def trial(values: Dict[str, Any]) -> Dict[str, Any]:
        begun = time.monotonic()
        config = T.tuned_trees(settings.model.trees, values)
        model = fit_best(train, validation, spec, config, units, names, settings.training.seed)
        outputs, labels = validation_outputs(model, one_batch(validation), 1)
        score = family_lib.score(outputs, labels, spec)
        return {"score": float(score), "seconds": round(time.monotonic() - begun, 2), "values": values,
                "trees": int(model.ydf_model.num_trees()), "rows": int(len(labels)),
                "noise": float(kind.metric_noise(kind.main_metric, score, labels))}

    baseline = trial({})
    progress("%strees, the config's own values: %s %.4f ±%.4f on %d validation rows (%.1fs)", T.PROGRESS, metric,
             baseline["score"], baseline["noise"], baseline["rows"], baseline["seconds"])
    trials: List[Dict[str, Any]] = []
    planned = candidates(settings.model.trees, tuning.max_trials, settings.training.seed)
    for values in planned:
        if time.monotonic() >= deadline:
            break
        try:
            trials.append(trial(values))
        except Exception as e:  # one setting YDF refuses costs that trial, not the search
            logging.exception("tuning: trees trial %s failed", values)
            progress("%strees trial failed: %s", T.PROGRESS, str(e).splitlines()[0])
            continue
        progress("%strees trial %d/%d: %s %.4f (%d trees, %.1fs) %s", T.PROGRESS, len(trials), len(planned), metric,
                 trials[-1]["score"], trials[-1]["trees"], trials[-1]["seconds"], T.shown(values))
    direction = "max" if kind.higher_is_better else "min"
    kept = T.keeps_config(baseline, trials, direction) or not trials
    ranked = sorted(trials, key=lambda t: t["score"], reverse=direction == "max")
    best = baseline if kept else ranked[0]
    return {"objective": metric, "direction": direction, "baseline": baseline, "trials": trials, "kept_config": kept,
            "best": best, "seconds": round(time.monotonic() - started, 1), "margin_se": T.MARGIN_SE,
            "ended_by": "max_minutes" if len(trials) < len(planned) else "max_trials"}


def best_values(record: Optional[Dict[str, Any]]) -> Dict[str, Any]:
    """The trees' best values as best_hyperparameters carries them (``trees.KEY``); {} when the
    config's own are kept."""
    if not record or record["kept_config"]:
        return {}
    return {T.TREES_PREFIX + k: v for k, v in record["best"]["values"].items()}


def with_trees(hyperparameters, record: Optional[Dict[str, Any]]):
    """keras-tuner's HyperParameters of the network's choice with the trees' best values fixed beside
    them (what TFX writes as best_hyperparameters)."""
    import keras_tuner as kt

    fresh = kt.HyperParameters()
    for name, value in {**hyperparameters.values, **best_values(record)}.items():
        fresh.Fixed(name, value)
    return fresh
