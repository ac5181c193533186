"""The decision-forest family (``model.family: trees``, or a candidate of ``auto``): YDF's learners
on both stacks (ydf 0.9 on TFX 1.16, 0.16 on 1.21: the same API), trained on the Transform's outputs
and wrapped as a Keras model with the network's inputs and output, so everything after training
(the decision threshold, permutation importance, the export with the Transform graph inside, the
Evaluator, ``predict``) takes either family unchanged.

What the trees read: every table input as the Transform gives it. The numeric transforms (z-score,
log then z-score) keep each column's order, so a tree splits them where it would split the raw
values; a vocabulary's or an identity column's indices are categories (YDF's categorical
splits); buckets and datetime parts are ordered numbers. Crosses are left out (a tree finds its
own interactions) and text has no tree encoding here (trainer/family.py keeps text and images on
the network).

The exported trees are YDF's TensorFlow function (``to_tensorflow_function``) on the inference op
``SimpleMLInferenceOpWithHandle``: TF-DF's op library on TF 2.16 (ydf 0.9's model/export_tf.py),
ydf-tf's on TF 2.21; trainer/trees_ops.py loads it wherever a saved model is loaded.
"""
from __future__ import annotations

import dataclasses
import logging
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np
import tensorflow as tf

from tfxline.trainer import trees_ops
from tfxline.trainer.keras_compat import keras
from tfxline.transforms import features as F
from tfxline.trees import rates as trees_rates
from tfxline.trees.settings import (
    CATEGORY,
    EXACT,
    FOREST,
    RATE,
    TreesConfig,
    categorical_inputs,
    resolved,
    threads,
)

LABEL = "__label__"  # the label's column in the training table (no transformed feature has this name)
# Boosted trees stop early on the validation split only above this many training rows, as
# scikit-learn's HistGradientBoosting does by default (early_stopping="auto": n_samples > 10000).
# Below it the validation loss is too noisy a guide: on two public tables of 2,700-3,100 rows
# YDF's early stopping kept 29 and 54 trees, where all 300 scored as well or better on a holdout (AUC
# 0.921 against 0.938 on openintro email; docs/trees.md).
EARLY_STOPPING_ROWS = 10_000


def tree_inputs(spec: F.FeatureSpec) -> List[Tuple[str, bool]]:
    """(transformed name, categorical) of each input the trees read: the table's, not text or crosses."""
    categorical = {f.name for f in categorical_inputs(spec)}
    return [(F.transformed_name(f.name), f.name in categorical) for f in spec.inputs if not f.is_text]


def read_columns(dataset, steps: int = 0) -> Tuple[Dict[str, np.ndarray], np.ndarray]:
    """A finite (features, label) dataset's batches as whole numpy columns (``steps``: its first ones)."""
    chunks: Dict[str, List[np.ndarray]] = {}
    labels: List[np.ndarray] = []
    for features, label in (dataset.take(steps) if steps else dataset):
        for name, value in features.items():
            chunks.setdefault(name, []).append(np.asarray(value))
        labels.append(np.reshape(np.asarray(label), [-1]))
    return {n: np.concatenate(v) for n, v in chunks.items()}, np.concatenate(labels)


def learner(config: TreesConfig, task: str, inputs: Sequence[Tuple[str, bool]], seed: int, rows: int,
            early_stopped: bool = True):
    """YDF's learner for ``config`` on ``rows`` training rows (the threads it trains with:
    trees/settings.py ``threads``); ``early_stopped`` False: boosted trees grow ``num_trees``
    iterations on every row given (no validation share carved out of them, no early stopping)."""
    import ydf

    ydf.verbose(0)  # the Trainer's own lines say what trained (trainer/family.py)
    config = resolved(config)  # a setting left at 0: the algorithm's usual
    kind = ydf.Task.REGRESSION if task == "regression" else ydf.Task.CLASSIFICATION
    binned = config.bins != EXACT  # model.trees.bins: numeric columns binned before training
    numeric = ydf.Semantic.DISCRETIZED_NUMERICAL if binned else ydf.Semantic.NUMERICAL
    features = [ydf.Feature(name, ydf.Semantic.CATEGORICAL if categorical else numeric)
                for name, categorical in inputs]
    common: Dict[str, Any] = dict(
        label=LABEL, task=kind, features=features, include_all_columns=False, random_seed=seed,
        num_trees=config.num_trees, max_depth=config.max_depth, min_examples=config.min_examples,
        categorical_algorithm=config.categorical.upper(), num_threads=threads(config, rows),
        **({"num_discretized_numerical_bins": config.bins} if binned else {}))
    if config.algorithm == FOREST:
        return ydf.RandomForestLearner(**common)
    if not early_stopped:
        common.update(validation_ratio=0.0, early_stopping="NONE")
    return ydf.GradientBoostedTreesLearner(shrinkage=config.shrinkage, **common)


Columns = Tuple[Dict[str, np.ndarray], np.ndarray]  # (features, label) as whole numpy columns


def fit(train: Columns, validation: Optional[Columns], spec: F.FeatureSpec, config: TreesConfig, units: int,
        names: Sequence[str], seed: int = 0):
    """The trained forest as a Keras model over ``names`` (the network's inputs: the transformed
    features, every one, read or not) giving the network head's output: [batch, ``units``]
    (binary: P(positive); multi-class: each class's probability in label-index order; regression:
    the value in the learnt space). Boosted trees stop early on ``validation`` above
    ``EARLY_STOPPING_ROWS`` training rows (YDF keeps the number of trees with the lowest validation
    loss), and grow ``config.num_trees`` iterations on ``train`` alone below it or with no
    ``validation`` (``refit``); a forest never reads it. With ``config.encoding`` rate the
    categorical columns are read as numbers (trees/rates.py: out of fold on ``train``, the
    train split's table on every other row, the exported model's included); otherwise (category,
    or auto, which trainer/trees_run.py resolves) as categories."""
    encoding = RATE if config.encoding == RATE else CATEGORY
    columns = tree_inputs(spec)
    rated = [name for name, categorical in columns if categorical] if encoding == RATE else []
    inputs = [(name, categorical and name not in rated) for name, categorical in columns]
    read = [name for name, _ in inputs]
    rates = trees_rates.tables(train[0], train[1], rated)

    def table(columns: Dict[str, np.ndarray], labels: np.ndarray, own: bool = False) -> Dict[str, np.ndarray]:
        """The rows as YDF reads them: rated columns as numbers (``own``: the train rows, out of fold)."""
        numbers = trees_rates.out_of_fold(columns, labels, rated) if own else \
            {n: trees_rates.lookup(rates[n], columns[n]) for n in rated}
        return {**{n: columns[n] for n in read}, **numbers, LABEL: labels}

    trees_ops.check_installed()
    # a forest takes no validation set (YDF refuses one: it measures itself out of bag)
    early = validation is not None and config.algorithm != FOREST and len(train[1]) > EARLY_STOPPING_ROWS
    trained = learner(config, spec.task, inputs, seed, early_stopped=early, rows=len(train[1])).train(
        table(*train, own=True), valid=table(*validation) if early and validation is not None else None, verbose=0)
    shape: Dict[str, Any] = {} if spec.task == "regression" else {"squeeze_binary_classification": False}
    function = trained.to_tensorflow_function(**shape)
    classes = [] if spec.task == "regression" else list(trained.label_classes())
    layer = output_layer(function, read, class_columns(classes, units), rates, name="trees_output")
    k = keras()
    model_inputs = {n: k.Input(shape=(), name=n, dtype="int64" if _is_int(train[0][n]) else "float32") for n in names}
    model = k.Model(inputs=model_inputs, outputs=layer(model_inputs), name="trees")
    model.ydf_model = trained  # not saved: for importances() while the Trainer runs
    model.ydf_columns = {F.transformed_name(f.name): f.name for f in spec.inputs}
    model.trees_encoding = encoding  # how it read the categorical columns (the refit reads them alike)
    model.trees_rated = [model.ydf_columns.get(n, n) for n in rated]
    logging.info("trees: %s trained, %d trees, categories read as %s", config.algorithm, trained.num_trees(), encoding)
    return model


def iterations(model) -> int:
    """The boosting iterations a trained forest holds (a multi-class one grows a tree per class
    each iteration: YDF's num_trees counts them all); a random forest's trees."""
    trained = model.ydf_model
    per = trained.num_trees_per_iteration() if hasattr(trained, "num_trees_per_iteration") else 1
    return max(1, int(trained.num_trees()) // max(1, int(per)))


def refit(model, train: Columns, validation: Columns, spec: F.FeatureSpec, config: TreesConfig, units: int,
          names: Sequence[str], seed: int = 0):
    """The kept forest trained again on the train and validation rows together (``model.trees.refit``):
    as many boosting iterations as early stopping kept on validation (a random forest: its own count),
    every row a training row. The validation rows chose the family, the iterations, the decision
    threshold and the permutation importance before this; the eval split the Evaluator gates on is
    untouched, so the gate still scores rows the model never saw."""
    both = ({n: np.concatenate([train[0][n], validation[0][n]]) for n in train[0]},
            np.concatenate([train[1], validation[1]]))
    fixed = dataclasses.replace(config, num_trees=iterations(model), encoding=model.trees_encoding)
    again = fit(both, None, spec, fixed, units, names, seed)
    again.trees_reading = getattr(model, "trees_reading", {})  # how the reading was chosen, on the first fit
    return again


def _is_int(values: np.ndarray) -> bool:
    return np.issubdtype(values.dtype, np.integer)


def class_columns(classes: Sequence[str], units: int) -> List[int]:
    """For each of the head's outputs, its column in YDF's output (whose class order, ``classes``
    as strings, is YDF's own and need not be the label index's); ``len(classes)``, a zero column,
    for a class the train split never had. Binary (one unit): the positive class's (index 1). Regression: none."""
    if not classes:
        return []
    index = {c: i for i, c in enumerate(classes)}
    wanted = [1] if units == 1 else list(range(units))
    return [index.get(str(i), len(classes)) for i in wanted]


def output_layer(function, read: Sequence[str], columns: Sequence[int],
                 rates: Optional[Dict[str, np.ndarray]] = None, **kwargs):
    """YDF's TensorFlow function as the head's output: the classes' columns in label-index order;
    a rated column (``rates``: {name: trees/rates.py ``table``}) read through its table
    first, an index outside it the table's last value (the class is defined on first use: Keras is
    chosen at the entry point)."""
    k = keras()

    class TreesOutput(k.layers.Layer):
        holds_forest = True  # holds_forest() looks for it

        def __init__(self, **kw):
            super().__init__(trainable=False, **kw)
            self.function, self.read, self.columns = function, list(read), list(columns)
            self.rates = {n: tf.constant(t, tf.float32) for n, t in (rates or {}).items()}

        def call(self, inputs):
            feed = {}
            for n in self.read:
                feed[n] = read_rate(self.rates[n], inputs[n]) if n in self.rates else inputs[n]
            out = tf.cast(self.function(feed), tf.float32)
            if not self.columns:  # regression: [batch] values
                return tf.reshape(out, [-1, 1])
            padded = tf.concat([out, tf.zeros_like(out[:, :1])], axis=1)
            return tf.gather(padded, self.columns, axis=1)

    return TreesOutput(**kwargs)


def read_rate(table, values):
    """A rated column's numbers: each index's value in ``table`` (trees/rates.py ``table``),
    an index outside it the table's last (the overall mean)."""
    last = tf.cast(tf.shape(table)[0] - 1, tf.int64)
    index = tf.cast(values, tf.int64)
    return tf.gather(table, tf.where((index >= 0) & (index < last), index, last))


def holds_forest(model) -> bool:
    """Whether a Keras model holds a forest (the trees alone, or inside the average)."""
    return any(getattr(m, "holds_forest", False) for m in [model, *model.submodules])


def importances(model, top: int = 20) -> List[Tuple[str, float]]:
    """What the trees lean on: each input column's share of the splits' summed loss reduction
    (YDF's SUM_SCORE), the largest first; [] where the model has none."""
    trained = getattr(model, "ydf_model", None)
    if trained is None:
        return []
    scores = trained.variable_importances().get("SUM_SCORE", [])
    total = sum(score for score, _ in scores) or 1.0
    columns = getattr(model, "ydf_columns", {})
    return [(columns.get(name, name), round(score / total, 4)) for score, name in scores[:top]]


def describe(model) -> Dict[str, Any]:
    """What training_run.json records of the trained forest."""
    trained = getattr(model, "ydf_model", None)
    return {"trees": int(trained.num_trees()) if trained is not None else None,
            "importance": importances(model), "encoding": getattr(model, "trees_encoding", None),
            "rated": getattr(model, "trees_rated", []), **getattr(model, "trees_reading", {})}
