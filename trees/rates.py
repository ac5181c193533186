"""``model.trees.encoding: rate``: a categorical column read by the trees as one number, the
category's label mean (a binary label's positive rate, a regression label's mean in its learnt
space), smoothed toward the overall mean as if ``SMOOTHING`` more rows of that mean had the
category. The train rows' numbers come out of fold (each row's from the other ``FOLDS`` - 1 folds
of the train split, rows dealt by position), so no row's own label is in its number and a category
seen a few times reads near the overall mean: a split on it fits what the category says of other
rows, not the row itself (CatBoost's ordered target statistics answer the same leak). Every other
row (validation, eval, serving) reads the table learnt on the whole train split; an index the train
split never had reads the overall mean. The tables travel inside the exported model
(trainer/trees.py ``output_layer``), so serving takes raw tf.Examples as before.

No TensorFlow here: numpy on the columns trainer/trees.py reads.
"""
from __future__ import annotations

from typing import Dict, Sequence

import numpy as np

FOLDS = 5
SMOOTHING = 20.0  # rows of the overall mean added to each category's own (scikit-learn's TargetEncoder
#                   smooths the same way, its "auto" estimating the weight; a fixed one keeps the
#                   number the same on every stack and run)


def table(values: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """float32 [V + 1]: index i's smoothed label mean for i in [0, V) (V: one past the largest index
    seen), and last the overall mean, which every index outside [0, V) reads."""
    values = np.asarray(values).reshape(-1).astype(np.int64)
    labels = np.asarray(labels, np.float64).reshape(-1)
    prior = float(labels.mean()) if len(labels) else 0.0
    seen = values >= 0
    size = int(values[seen].max()) + 1 if seen.any() else 0
    sums = np.bincount(values[seen], weights=labels[seen], minlength=size)
    counts = np.bincount(values[seen], minlength=size)
    return np.append((sums + SMOOTHING * prior) / (counts + SMOOTHING), prior).astype(np.float32)


def lookup(rates: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Each index's number from ``rates`` (``table``'s); an index outside it the overall mean (the last)."""
    values = np.asarray(values).reshape(-1).astype(np.int64)
    last = len(rates) - 1
    return rates[np.where((values >= 0) & (values < last), values, last)]


def tables(columns: Dict[str, np.ndarray], labels: np.ndarray, names: Sequence[str]) -> Dict[str, np.ndarray]:
    """{name: ``table``} of each of ``names`` on all the given rows (what serving reads)."""
    return {n: table(columns[n], labels) for n in names}


def out_of_fold(columns: Dict[str, np.ndarray], labels: np.ndarray, names: Sequence[str]) -> Dict[str, np.ndarray]:
    """{name: float32 [rows]}: each row's number from the table of the other folds (row i in fold
    i mod FOLDS), for the rows the trees train on."""
    labels = np.asarray(labels).reshape(-1)
    fold = np.arange(len(labels)) % FOLDS
    out: Dict[str, np.ndarray] = {}
    for n in names:
        values = np.asarray(columns[n]).reshape(-1)
        column = np.zeros(len(labels), np.float32)
        for k in range(FOLDS):
            mine = fold == k
            if mine.any():
                column[mine] = lookup(table(values[~mine], labels[~mine]), values[mine])
        out[n] = column
    return out
