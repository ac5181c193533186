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
from typing import Iterator, List, Optional, Tuple

from tfxline.transforms import features as F
from tfxline.typed_config.problems import Problem, bad

NETWORK, TREES, AUTO = "network", "trees", "auto"
# network: the Keras model (trainer/model.py); trees: a decision forest (TF-DF on TFX 1.16, YDF on
# 1.21: trainer/trees.py); auto: both on the same splits, the better on validation kept, or their
# average where that is better than both (trainer/family.py)
FAMILIES = (NETWORK, TREES, AUTO)
BOOSTED, FOREST = "boosted", "forest"
ALGORITHMS = (BOOSTED, FOREST)
# An algorithm's usual settings, for a setting left at 0. The boosted trees' are scikit-learn's
# HistGradientBoosting defaults (max_iter 100, min_samples_leaf 20; max_leaf_nodes 31, about depth
# 6), the trees a user compares with. On seven public tables (1,070-5,822 rows, and 300 synthetic
# columns) they beat YDF's own (300 trees, 5 rows a leaf) on every one, trained on 80 % and scored
# on the other 20 % (three draws; 2026-12-03): email AUC 0.938 vs 0.923, Caravan 0.764 vs 0.730,
# OJ 0.883 vs 0.862 (bench/trees_defaults.py). Their numeric columns are binned into 255 values
# before training (HistGradientBoosting's max_bins; YDF's DISCRETIZED_NUMERICAL): on the same seven
# tables at or above exact splits on six (email 0.942 vs 0.938, SaratogaHouses RMSE 50,297 vs 50,965),
# 0.0006 below on Caravan, and 300 columns fit in 10 s instead of 14. A random forest's are YDF's (exact).
EXACT = -1  # model.trees.bins: no binning, every distinct value a candidate split
USUAL = {BOOSTED: {"num_trees": 100, "max_depth": 6, "min_examples": 20, "bins": 255},
         FOREST: {"num_trees": 300, "max_depth": 16, "min_examples": 5, "bins": EXACT}}
MAX_BINS = 65535  # YDF keeps a binned column's index in 16 bits
# YDF's ONE_HOT is left out: its gradient-boosted trees refuse it (ydf 0.16: "Non supported"), and
# ydf 0.9 aborts the process on it (a failed check in FindSplitLabelRegressionFeatureCategorical)
CATEGORICAL_ALGORITHMS = ("cart", "random")
# How the trees read a categorical column (model.trees.encoding). category: as categories (YDF's
# categorical splits, model.trees.categorical says which); rate: as one number, the category's label
# mean on other rows (out of fold on the train split, smoothed toward the overall mean: trees/
# rates.py); auto: both train and the better on the watched validation rows is kept (a binary
# or regression label; a multi-class one has no one number per category, and reads categories).
# A split on categories searches every way of grouping a column's values and finds one that fits
# noise: on bench/wide.py's 300 columns the forest's splits leaned most on the noise text columns
# (3-40 values each), and on the raw table (60/20/20, three draws, ydf 0.9) read as rates the trees
# reached AUC 0.712 against 0.684 as categories (HistGradientBoosting 0.703), lending_club 0.696
# against 0.672; elsewhere level or within a draw's noise, and a regression with many categorical
# columns (modeldata hotel_rates) 3 % behind as rates: hence the choice on validation, not a rule.
CATEGORY, RATE = "category", "rate"
ENCODINGS = (AUTO, CATEGORY, RATE)
RATE_TASKS = ("binary", "regression")  # a label with one mean per category


@dataclasses.dataclass(frozen=True)
class TreesConfig:
    """The decision forest of model.family trees or auto (trainer/trees.py: YDF's learners)."""

    # boosted (gradient-boosted trees, early-stopped on the validation split) | forest (random forest)
    algorithm: str = BOOSTED
    # boosted: the most trees (above 10,000 training rows early stopping keeps fewer); forest: the
    # trees; 0: the algorithm's usual (boosted 100, forest 300)
    num_trees: int = 0
    max_depth: int = 0            # the deepest a tree grows; 0: the algorithm's usual (boosted 6, forest 16)
    shrinkage: float = 0.1        # boosted: each tree's learning rate
    min_examples: int = 0         # a leaf's fewest training rows; 0: the algorithm's usual (boosted 20, forest 5)
    # a numeric column's values binned into at most this many before training (split points between
    # bins: faster, and on the bench tables as good or better); 0: the algorithm's usual (boosted 255,
    # as HistGradientBoosting; forest exact); -1: exact (every distinct value a candidate split)
    bins: int = 0
    # how a split reads a categorical column: cart (one set of values against the rest, found by the
    # values' label means: fast, good with many values) | random (random subsets: slower, stronger on
    # few values)
    categorical: str = "cart"
    # how the trees read a categorical column: category (the splits above) | rate (one number: the
    # category's label mean on other rows, smoothed toward the overall mean; a binary or regression
    # label) | auto (both train on a binary or regression label, and the better on the validation rows
    # early stopping watches is kept; a multi-class label reads categories)
    encoding: str = AUTO
    # after the family is chosen, the kept trees trained again on the train and validation rows together
    # (as many boosting iterations as early stopping kept): more rows for the trees a table serves; the
    # eval split the Evaluator gates on is never trained on
    refit: bool = True
    # the threads YDF trains with; 0: one below 10,000 training rows (SMALL_ROWS), YDF's own (every
    # core) above. YDF splits each node's search across threads, and on a few thousand rows the handing
    # out costs more than it saves: 3,500 rows x 300 columns, 100 trees, 2-core AMD (ydf 0.9 and
    # 0.16 alike): 2.4 s on one thread, 18.9 s on two, 7.9 s on four; 54,000 rows x 10 columns:
    # 3.3 s on one, 2.8 s on two (docs/trees.md)
    threads: int = 0

    def problems(self) -> Iterator[Problem]:
        if self.algorithm not in ALGORITHMS:
            yield bad(self, "algorithm", f"use one of {', '.join(ALGORITHMS)}")
        if not self.num_trees >= 0:
            yield bad(self, "num_trees", "must be >= 0 (0: the algorithm's usual number)")
        if not 0 <= self.max_depth <= 64:
            yield bad(self, "max_depth", "must be in [0, 64] (0: the algorithm's usual depth)")
        if not 0.0 < self.shrinkage <= 1.0:
            yield bad(self, "shrinkage", "must be in (0, 1]")
        if not self.min_examples >= 0:
            yield bad(self, "min_examples", "must be >= 0 (0: the algorithm's usual)")
        if not (self.bins in (EXACT, 0) or 2 <= self.bins <= MAX_BINS):
            yield bad(self, "bins", f"must be -1 (exact), 0 (the algorithm's usual) or in [2, {MAX_BINS}]")
        if not self.threads >= 0:
            yield bad(self, "threads", "must be >= 0 (0: one thread on small tables, every core above)")
        if self.categorical not in CATEGORICAL_ALGORITHMS:
            yield bad(self, "categorical", f"use one of {', '.join(CATEGORICAL_ALGORITHMS)}")
        if self.encoding not in ENCODINGS:
            yield bad(self, "encoding", f"use one of {', '.join(ENCODINGS)}")


SMALL_ROWS = 10_000  # model.trees.threads 0: one thread below this many training rows


def threads(config: TreesConfig, rows: int) -> Optional[int]:
    """The threads YDF trains ``rows`` training rows with (None: YDF's own, every core)."""
    if config.threads:
        return config.threads
    return 1 if rows < SMALL_ROWS else None


def resolved(config: TreesConfig) -> TreesConfig:
    """``config`` with each setting left at 0 replaced by its algorithm's usual value (``USUAL``)."""
    usual = USUAL.get(config.algorithm, USUAL[BOOSTED])
    return dataclasses.replace(config, **{k: getattr(config, k) or v for k, v in usual.items()})


CATEGORICAL = ("vocabulary", "identity")  # the transforms whose indices are categories, not an order


def categorical_inputs(spec: F.FeatureSpec) -> List[F.InputFeature]:
    """The inputs the trees read as categorical columns (a vocabulary's or an identity's indices)."""
    return [f for f in spec.inputs if f.transform in CATEGORICAL and not f.is_text]


def encodings(config: TreesConfig, spec: F.FeatureSpec) -> Tuple[str, ...]:
    """The ways of reading categorical columns that train (model.trees.encoding): auto trains both
    where the label has one mean per category and a column is categorical, categories alone
    elsewhere (with no categorical column the two are one forest)."""
    if config.encoding == AUTO:
        both = spec.task in RATE_TASKS and categorical_inputs(spec)
        return (CATEGORY, RATE) if both else (CATEGORY,)
    return (config.encoding,)


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


def encoding_problem(spec: F.FeatureSpec, family: str, encoding: str) -> str:
    """Why model.trees.encoding ``encoding`` cannot read this spec's label ('' where it can)."""
    if TREES in families(spec, family) and encoding == RATE and spec.task not in RATE_TASKS:
        return f"a {spec.task} label has no one mean per category (rate reads a binary or regression label)"
    return ""
