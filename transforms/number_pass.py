"""Every numeric input's statistics in a handful of analyzers, whatever the number of columns.

A z-scored input needs its mean, variance and range (min, max); quantile buckets their boundaries
and the mean that fills a missing value. One tft analyzer per statistic per feature was six per
numeric column, each its own piece of the traced graph, of TFT's analysis graph and of the Beam
pipeline: on a 300-column table the Transform's time went to tracing and planning those (docs/scale.md).
Here the numeric features' values form one [batch, k] matrix of which values are present, and
one analyzer of each kind reads every column of it (``reduce_instance_dims=False``): a
SparseTensor of the present values for mean, variance, min and max (tft ignores the absent
cells), and the values with NaN where absent for quantiles (tft's quantiles ignore NaN), one
analyzer per distinct ``num_buckets``. The results match the per-feature analyzers' (tests/test_number_pass.py).

In the Transform's graph each statistic is saved as one vector under a group name
(``group_name``), its entries in the order of ``numeric_features``; ``per_feature`` reads them
back as the per-feature values (``analyzers.analyzer_name``) that the frozen TFLite
preprocessing and the run report use, and a Transform output written before the vectors keeps
its per-feature names (``analyzers.feature_values`` reads either).
"""
from __future__ import annotations

from typing import Any, Dict, List, Mapping, Sequence

import numpy as np
import tensorflow as tf

from tfxline.transforms import features as F
from tfxline.transforms.analyzer_names import NAME_PREFIX, analyzer_name

KINDS = ("mean", "var", "negated_min", "max")
BOUNDARIES = "boundaries"


def needs_statistics(feature: F.InputFeature) -> bool:
    return feature.transform in ("zscore", "log_zscore", "bucketize") or (
        feature.transform == "datetime" and feature.part == "days")


def numeric_features(inputs: Sequence[F.InputFeature]) -> List[F.InputFeature]:
    """The inputs whose statistics are learnt, in the order their vectors hold them."""
    return [f for f in inputs if needs_statistics(f)]


def bucket_groups(features: Sequence[F.InputFeature]) -> Dict[int, List[int]]:
    """{num_buckets: the indices in ``features`` of the bucketized ones with it, in order}: one
    quantiles analyzer each."""
    groups: Dict[int, List[int]] = {}
    for i, f in enumerate(features):
        if f.transform == "bucketize":
            groups.setdefault(f.num_buckets, []).append(i)
    return groups


def group_name(kind: str, num_buckets: int = 0) -> str:
    return f"{NAME_PREFIX}_numbers_{kind}" + (f"_{num_buckets}" if kind == BOUNDARIES else "")


def group_names(features: Sequence[F.InputFeature]) -> List[str]:
    """The saved vectors a spec's numeric features need."""
    if not features:
        return []
    return [group_name(k) for k in KINDS] + [group_name(BOUNDARIES, n) for n in bucket_groups(features)]


def learn(features: Sequence[F.InputFeature], values: Sequence[tf.Tensor],
          present: Sequence[tf.Tensor]) -> Dict[str, Dict[str, tf.Tensor]]:
    """{feature name: {kind: its statistic}} from one analyzer per kind. ``values`` and
    ``present``: each feature's rank-1 float32 values (anything where absent) and presence."""
    import tensorflow_transform as tft

    if not features:
        return {}
    matrix = tf.stack(list(values), axis=1)
    mask = tf.stack(list(present), axis=1)
    cells = tf.where(mask)
    shape = tf.stack([tf.shape(matrix, out_type=tf.int64)[0], tf.constant(len(features), tf.int64)])
    present_values = tf.gather_nd(matrix, cells)
    sparse = tf.SparseTensor(cells, present_values, shape)
    negated = tf.SparseTensor(cells, -present_values, shape)
    vectors = {
        "mean": tft.mean(sparse, reduce_instance_dims=False),
        "var": tft.var(sparse, reduce_instance_dims=False),
        # tft.min is a Sub of its result in the saved graph: the min is saved as the max of -x
        "negated_min": tft.max(negated, reduce_instance_dims=False),
        "max": tft.max(sparse, reduce_instance_dims=False),
    }
    vectors = {kind: tf.identity(v, name=group_name(kind)) for kind, v in vectors.items()}
    # one Unpack per kind, not a slice per feature (the graph is traced several times: its size is time)
    entries = {kind: tf.unstack(tf.reshape(v, [len(features)]), num=len(features)) for kind, v in vectors.items()}
    learnt = {f.name: {kind: entries[kind][i] for kind in KINDS} for i, f in enumerate(features)}
    with_nan = tf.where(mask, matrix, tf.fill(tf.shape(matrix), np.float32(np.nan)))
    for num_buckets, indices in bucket_groups(features).items():
        columns = tf.gather(with_nan, indices, axis=1)
        boundaries = tf.identity(tft.quantiles(columns, num_buckets, epsilon=0.01 / num_buckets,
                                               reduce_instance_dims=False),
                                 name=group_name(BOUNDARIES, num_buckets))
        rows = tf.split(tf.reshape(boundaries, [len(indices), num_buckets - 1]), len(indices), axis=0)
        for i, row in zip(indices, rows):
            learnt[features[i].name][BOUNDARIES] = row   # rank 2, [1, num_buckets - 1], as tft.apply_buckets takes it
    return learnt


def per_feature(features: Sequence[F.InputFeature], vectors: Mapping[str, Any]) -> Dict[str, np.ndarray]:
    """{analyzer_name(feature, kind): value} from the saved vectors (those present)."""
    out: Dict[str, np.ndarray] = {}
    for kind in KINDS:
        vector = vectors.get(group_name(kind))
        if vector is not None:
            vector = np.asarray(vector).reshape(-1)
            out.update({analyzer_name(f, kind): vector[i] for i, f in enumerate(features)})
    for num_buckets, indices in bucket_groups(features).items():
        matrix = vectors.get(group_name(BOUNDARIES, num_buckets))
        if matrix is not None:
            matrix = np.asarray(matrix).reshape(len(indices), -1)
            out.update({analyzer_name(features[i], BOUNDARIES): matrix[row] for row, i in enumerate(indices)})
    return out
