"""The Trainer's trees side (``model.family`` trees or auto): the forest trained on the train split
read once as numpy columns, the way it reads categorical columns chosen on the validation rows
early stopping watches (``model.trees.encoding`` auto: ``fit_best``), and the refit that trains the
kept one again on the train and validation rows (``model.trees.refit``; trainer/family.py ``served``
calls it)."""
from __future__ import annotations

import dataclasses
from typing import Any, Dict, Optional, Sequence

import numpy as np
import tensorflow as tf

from tfxline import task_types
from tfxline.trainer import family as family_lib
from tfxline.trainer import trees as trees_lib
from tfxline.trainer.inputs import WATCHED, Inputs, Sizes, input_dataset
from tfxline.trainer.model import validation_outputs
from tfxline.trainer.model_inputs import make_head, model_inputs
from tfxline.trainer.settings import TrainerSettings
from tfxline.transforms import features as F
from tfxline.trees.settings import TreesConfig, encodings


@dataclasses.dataclass
class TreesRun:
    """The trained forest, its seconds, and what it trained on, for the refit: the train and
    validation columns, the network's input names and the head's width."""
    model: Any
    seconds: float
    columns: Any


def trees_columns(fn_args, settings: TrainerSettings, sizes: Sizes, inputs: Inputs):
    """What a forest trains on (trainer/trees.py ``fit``'s arguments beside its config): the train
    split read once (unshuffled) and the validation rows, as numpy columns, the network's input
    names and the head's width."""
    spec, tfo = settings.features, sizes.tf_transform_output
    once = input_dataset(fn_args, settings, fn_args.train_files, tfo, sizes.batch.per_replica * sizes.replicas,
                         shuffle=False, cache=False, repeat=False)
    return (trees_lib.read_columns(once), trees_lib.read_columns(inputs.validation, inputs.validation_steps),
            [mi.name for mi in model_inputs(spec, tfo)], make_head(spec, tfo).units)


def watched(validation, inputs: Inputs):
    """The validation columns early stopping reads: every row with one family, the watched half
    (rows 0, 2, 4, ...) where the run chooses between families (trainer/inputs.py split_validation)."""
    if not inputs.split:
        return validation
    features, labels = validation
    return {n: v[WATCHED::2] for n, v in features.items()}, labels[WATCHED::2]


def train_trees(fn_args, settings: TrainerSettings, sizes: Sizes, inputs: Inputs) -> TreesRun:
    """The decision forest (early-stopped on the watched validation rows above
    trees.EARLY_STOPPING_ROWS training rows; its categorical columns read as ``fit_best`` chose)."""
    columns = trees_columns(fn_args, settings, sizes, inputs)
    train, validation, names, units = columns
    model, seconds = family_lib.timed(lambda: fit_best(train, watched(validation, inputs), settings.features,
                                                       settings.model.trees, units, names, settings.training.seed))
    return TreesRun(model, seconds, columns)


def fit_best(train, validation, spec: F.FeatureSpec, config: TreesConfig, units: int, names: Sequence[str],
             seed: int = 0):
    """The forest of ``config`` for each way of reading the categorical columns that trains
    (trees/settings.py ``encodings``: auto on a binary or regression label with a categorical column,
    as categories and as rates), the better on ``validation`` by the task's main metric kept (a tie
    to the categories); ``model.trees_reading`` records each one's score for training_run.json."""
    ways = encodings(config, spec)
    fitted = {w: trees_lib.fit(train, validation, spec, dataclasses.replace(config, encoding=w), units, names, seed)
              for w in ways}
    if len(fitted) == 1:
        return next(iter(fitted.values()))
    kind = task_types.get(spec.task)
    scores: Dict[str, float] = {}
    for way, model in fitted.items():
        outputs, labels = validation_outputs(model, one_batch(validation), 1)
        scores[way] = float(family_lib.score(outputs, labels, spec))
    sign = 1.0 if kind.higher_is_better else -1.0
    best = max(ways, key=lambda w: (-np.inf if np.isnan(scores[w]) else sign * scores[w], -ways.index(w)))
    kept = fitted[best]
    kept.trees_reading = {"encoding_scores": {w: round(v, 6) for w, v in scores.items()},
                          "encoding_rows": int(len(validation[1]))}
    return kept


def one_batch(columns):
    """Numpy (features, labels) columns as a dataset of one batch (validation_outputs reads batches)."""
    features, labels = columns
    return tf.data.Dataset.from_tensors((features, labels))


def refit_trees(settings: TrainerSettings, forest: Optional[TreesRun]):
    """model.trees.refit: () -> the forest trained again on the train and validation rows; None without."""
    if forest is None or not settings.model.trees.refit:
        return None
    train, validation, names, units = forest.columns
    return lambda: trees_lib.refit(forest.model, train, validation, settings.features, settings.model.trees,
                                   units, names, settings.training.seed)
