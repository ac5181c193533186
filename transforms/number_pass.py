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

from typing import Any, Dict, List, Mapping, Sequence, Tuple

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


def learn(features: Sequence[F.InputFeature], matrix: tf.Tensor,
          mask: tf.Tensor) -> Tuple[Dict[str, tf.Tensor], Dict[int, tf.Tensor]]:
    """({kind: [k] vector}, {num_buckets: [c, num_buckets - 1] boundaries of its c bucketized
    features, in order}) from one analyzer per kind. ``matrix``: the features' [rows, k] float32
    values (anything where absent), ``mask``: which are present (transforms/columns.dense_block)."""
    import tensorflow_transform as tft

    if not features:
        return {}, {}
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
    vectors = {kind: tf.reshape(tf.identity(v, name=group_name(kind)), [len(features)]) for kind, v in vectors.items()}
    with_nan = tf.where(mask, matrix, tf.fill(tf.shape(matrix), np.float32(np.nan)))
    boundaries = {}
    for num_buckets, indices in bucket_groups(features).items():
        columns = tf.gather(with_nan, indices, axis=1)
        quantiles = tft.quantiles(columns, num_buckets, epsilon=0.01 / num_buckets, reduce_instance_dims=False)
        learnt = tf.identity(quantiles, name=group_name(BOUNDARIES, num_buckets))
        boundaries[num_buckets] = tf.reshape(learnt, [len(indices), num_buckets - 1])
    return vectors, boundaries


def apply_buckets(x: tf.Tensor, boundaries: tf.Tensor) -> tf.Tensor:
    """[rows, c] bucket indices of [rows, c] values, column j by the sorted row j of ``boundaries``
    ([c, b]): the number of its boundaries not above the value, NaN in the last bucket; tft's
    rule (apply_buckets: tf.searchsorted side right, tensorflow_transform/tf_utils.py
    assign_buckets) in TFLite builtins."""
    not_above = tf.logical_not(tf.less(tf.expand_dims(x, 2), tf.expand_dims(boundaries, 0)))
    return tf.reduce_sum(tf.cast(not_above, tf.int64), axis=2)


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
