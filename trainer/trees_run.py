"""The Trainer's trees side (``model.family`` trees or auto): the forest trained on the train split
read once as numpy columns, and the refit that trains the kept one again on the train and
validation rows (``model.trees.refit``; trainer/family.py ``served`` calls it)."""
from __future__ import annotations

import dataclasses
from typing import Any, Optional

from tfxline.trainer import family as family_lib
from tfxline.trainer import trees as trees_lib
from tfxline.trainer.inputs import WATCHED, Inputs, Sizes, input_dataset
from tfxline.trainer.model_inputs import make_head, model_inputs
from tfxline.trainer.settings import TrainerSettings


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
    trees.EARLY_STOPPING_ROWS training rows)."""
    columns = trees_columns(fn_args, settings, sizes, inputs)
    train, validation, names, units = columns
    model, seconds = family_lib.timed(lambda: trees_lib.fit(train, watched(validation, inputs), settings.features,
                                                            settings.model.trees, units, names, settings.training.seed))
    return TreesRun(model, seconds, columns)


def refit_trees(settings: TrainerSettings, forest: Optional[TreesRun]):
    """model.trees.refit: () -> the forest trained again on the train and validation rows; None without."""
    if forest is None or not settings.model.trees.refit:
        return None
    train, validation, names, units = forest.columns
    return lambda: trees_lib.refit(forest.model, train, validation, settings.features, settings.model.trees,
                                   units, names, settings.training.seed)
