"""A hashed cross of categorical features' transformed indices, in integer arithmetic only (the
TFLite model computes it with builtins; a string hash has none)."""
from __future__ import annotations

import tensorflow as tf

# Knuth's multiplicative constant and the Mersenne prime 2^31 - 1: every product below stays
# under 2^63, so int64 arithmetic never overflows
_CROSS_MULTIPLIER = 2654435761
_CROSS_PRIME = 2 ** 31 - 1


def hashed_cross(indices, bounds, hash_buckets: int) -> tf.Tensor:
    """The cell of the inputs' transformed indices in their product, folded into
    ``hash_buckets``: exact (no two pairs share a bucket) when the product fits, else a
    multiplicative hash of the cell. Integer arithmetic only, so a TFLite model computes it
    with builtins (a string hash has none). ``bounds``: each index is below its bound."""
    cell = tf.zeros_like(indices[0], tf.int64)
    size = 1
    for index, bound in zip(indices, bounds):
        # +1: a missing or out-of-vocabulary index (-1 without OOV buckets) is a value too
        index = tf.clip_by_value(tf.cast(index, tf.int64) + 1, 0, bound)
        cell = tf.math.floormod(cell * (bound + 1) + index, _CROSS_PRIME)
        size *= bound + 1
    if size <= hash_buckets:
        return cell
    return tf.math.floormod(tf.math.floormod(cell * _CROSS_MULTIPLIER, _CROSS_PRIME), hash_buckets)
