"""Which columns the model leans on: permutation importance on the validation rows.

Each raw column's transformed features (and the crosses built from them) are shuffled across
the rows, together, and the main metric measured again (the task type's ``main_metric_value``);
the loss of quality is the column's importance. Recorded in training_run.json, so a run whose
eval metric is too good to be true names the columns to suspect (runs/summary.py), as the ones
``tfxline init`` leaves out (cli/init_leaks.py) are not always all of them.
"""
from __future__ import annotations

import math
from typing import Dict, List, Tuple

import numpy as np
import tensorflow as tf

from tfxline import task_types
from tfxline.trainer import model as model_lib
from tfxline.transforms import features as F

MAX_ROWS = 4096   # validation rows it measures on (each column: one forward pass over them)
TOP = 5
# rows in one forward pass: a wide table's columns are measured many at a time (one eager call per
# column was 4 s of a 100-column table's Trainer)
MAX_PASS_ROWS = 8192
# ... counted in ids for a text input: a row of 704 n-gram ids gathers [704, 64] embeddings, and
# 7,323 such rows in one pass took 1.3 GB (a 25,000-document bench's Trainer peaked at 3.1 GB)
IDS_PER_ROW = 64


def leaned_on(model, validation, steps: int, spec: F.FeatureSpec, seed: int = 0) -> List[Tuple[str, float]]:
    """[(raw column, the main metric's loss without it)], the largest first, at most ``TOP``;
    [] where the metric is undefined on these rows (one class)."""
    task = task_types.get(spec.task)
    features: Dict[str, List[np.ndarray]] = {}
    labels = []
    for batch, label in validation.take(steps):
        for name in spec.model_feature_names:
            features.setdefault(name, []).append(batch[name].numpy())
        labels.append(np.reshape(label, [-1]))
        if sum(len(x) for x in labels) >= MAX_ROWS:
            break
    if not labels:
        return []
    columns = {name: np.concatenate(parts)[:MAX_ROWS] for name, parts in features.items()}
    y = np.concatenate(labels)[:MAX_ROWS]

    forward = model_lib.predictions(model)

    def scores(variants: List[Dict[str, np.ndarray]]) -> List[float]:
        """The main metric of each variant of the rows, in one forward pass over all of them."""
        inputs = {k: tf.constant(np.concatenate([v[k] for v in variants])) for k in columns}
        outputs = np.asarray(task.flat_output(forward(inputs)))
        return [task.main_metric_value(part, y) for part in np.split(outputs, len(variants))]

    base = scores([columns])[0]
    if not math.isfinite(base):
        return []
    order = np.random.default_rng(seed).permutation(len(y))
    by_column = list(_features_by_column(spec).items())
    per_pass = max(1, MAX_PASS_ROWS // (len(y) * row_cost(columns)))   # columns measured in one forward pass
    drops = []
    for start in range(0, len(by_column), per_pass):
        chunk = by_column[start:start + per_pass]
        values = scores([dict(columns, **{n: columns[n][order] for n in names}) for _, names in chunk])
        drops += [(column, (base - value) if task.higher_is_better else (value - base))
                  for (column, _), value in zip(chunk, values)]
    return sorted(((c, round(float(d), 4)) for c, d in drops if d > 0), key=lambda cd: -cd[1])[:TOP]


def row_cost(columns: Dict[str, np.ndarray]) -> int:
    """A row's cost in a forward pass, in rows of a table: 1, or a text input's ids per ``IDS_PER_ROW``."""
    ids = sum(int(np.prod(x.shape[1:])) for x in columns.values() if x.ndim > 1)
    return max(1, -(-ids // IDS_PER_ROW))


def _features_by_column(spec: F.FeatureSpec) -> Dict[str, List[str]]:
    """{raw column: the transformed features that read it, and the crosses over them}."""
    out: Dict[str, List[str]] = {}
    for f in spec.inputs:
        out.setdefault(f.source, []).append(F.transformed_name(f.name))
    for cross in spec.crosses:
        for column in {spec.input(n).source for n in cross.inputs}:
            out[column].append(F.transformed_name(cross.name))
    return out
