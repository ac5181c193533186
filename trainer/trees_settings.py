"""``model.family`` (which model family a table trains) and ``model.trees`` (the decision forest's
settings), with their rules, and the one place that says which families a run trains
(``families``; the config's checks ask ``trees_problem``); trainer/family.py keeps the better on
validation and trainer/trees.py trains the forest. No TensorFlow here: the config loads without it.

The two settings live beside the network's in the model section, and reach the Trainer only where
they are read: a network-only config's custom_config, and so its cache key, is what it was
before the family existed (trainer/settings.py ``to_custom_config``).
"""
from __future__ import annotations

import dataclasses
from typing import Iterator, Tuple

from tfxline.transforms import features as F
from tfxline.typed_config.problems import Problem, bad

NETWORK, TREES, AUTO = "network", "trees", "auto"
# network: the Keras model (trainer/model.py); trees: a decision forest (TF-DF on TFX 1.16, YDF on
# 1.21: trainer/trees.py); auto: both on the same splits, the better on validation kept, or their
# average where that is better than both (trainer/family.py)
FAMILIES = (NETWORK, TREES, AUTO)
BOOSTED, FOREST = "boosted", "forest"
ALGORITHMS = (BOOSTED, FOREST)
# YDF's ONE_HOT is left out: its gradient-boosted trees refuse it (ydf 0.16: "Non supported"), and
# ydf 0.9 aborts the process on it (a failed check in FindSplitLabelRegressionFeatureCategorical)
CATEGORICAL_ALGORITHMS = ("cart", "random")


@dataclasses.dataclass(frozen=True)
class TreesConfig:
    """The decision forest of model.family trees or auto (trainer/trees.py: YDF's learners)."""

    # boosted (gradient-boosted trees, early-stopped on the validation split) | forest (random forest)
    algorithm: str = BOOSTED
    # boosted: the most trees (above 10,000 training rows early stopping keeps fewer); forest: the trees
    num_trees: int = 300
    max_depth: int = 0            # the deepest a tree grows; 0: the algorithm's usual (boosted 6, forest 16)
    shrinkage: float = 0.1        # boosted: each tree's learning rate
    min_examples: int = 5         # the fewest training rows a leaf holds
    # how a split reads a categorical column: cart (one set of values against the rest, found by the
    # values' label means: fast, good with many values) | random (random subsets: slower, stronger on
    # few values)
    categorical: str = "cart"
    # after the family is chosen, the kept trees trained again on the train and validation rows together
    # (as many boosting iterations as early stopping kept): more rows for the trees a table serves; the
    # eval split the Evaluator gates on is never trained on
    refit: bool = True

    def problems(self) -> Iterator[Problem]:
        if self.algorithm not in ALGORITHMS:
            yield bad(self, "algorithm", f"use one of {', '.join(ALGORITHMS)}")
        if not self.num_trees >= 1:
            yield bad(self, "num_trees", "must be >= 1")
        if not 0 <= self.max_depth <= 64:
            yield bad(self, "max_depth", "must be in [0, 64] (0: the algorithm's usual depth)")
        if not 0.0 < self.shrinkage <= 1.0:
            yield bad(self, "shrinkage", "must be in (0, 1]")
        if not self.min_examples >= 1:
            yield bad(self, "min_examples", "must be >= 1")
        if self.categorical not in CATEGORICAL_ALGORITHMS:
            yield bad(self, "categorical", f"use one of {', '.join(CATEGORICAL_ALGORITHMS)}")


def family_problems(family: str, where) -> Iterator[Problem]:
    if family not in FAMILIES:
        yield bad(where, "family", f"use one of {', '.join(FAMILIES)}")


def families(spec: F.FeatureSpec, family: str) -> Tuple[str, ...]:
    """The families a run trains for ``family`` (model.family) on this spec: auto keeps images and
    text on the network; trees there is refused at config load (``trees_problem``)."""
    if family == NETWORK or spec.data_kind != F.TABLE or spec.text_inputs:
        return (NETWORK,)
    return (TREES,) if family == TREES else (NETWORK, TREES)


def trained_family(family: str, tflite: bool) -> str:
    """model.family as the Trainer receives it: auto with a TFLite export (``tflite``: serving.tflite
    on) trains the network alone, since TFLite has no decision-forest ops."""
    return NETWORK if family == AUTO and tflite else family


def trees_problem(spec: F.FeatureSpec, family: str, tflite: bool = False) -> str:
    """Why ``model.family: trees`` cannot train or serve this spec ('' where it can)."""
    if family != TREES:
        return ""
    if spec.data_kind != F.TABLE:
        return f"trees read table columns, and this spec's input is {spec.data_kind}"
    if spec.text_inputs:
        return f"trees have no encoding of the text feature(s) {', '.join(f.name for f in spec.text_inputs)}"
    if tflite:
        return ("serving.tflite is on, and TFLite has no decision-forest ops (tensorflow/decision-forests#5): "
                "a trees model cannot be converted")
    return ""
