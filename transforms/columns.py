"""Raw columns as the preprocessing reads them: one column (sparse, ragged, dense, or ``Present``
in the TFLite model) or many at once as one [rows, k] block.

A wide table's cost was the size of the traced graph: the Transform traces ``preprocessing_fn``
several times, and the Trainer, Evaluator and Pusher each load and trace the result. Densifying a
column alone is ~10 ops (shape slices, a SparseToDense for its values and one for its presence);
``dense_block`` turns every sparse column of a group into one block with one SparseConcat and two
SparseToDense, so the ops per column are the column's own cast, and the math after it (z-score,
buckets, range checks) runs once on the block (transforms/preprocessing.py; docs/scale.md).
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, Optional, Sequence, Tuple

import tensorflow as tf

# what a missing text or whole-number value is, where a column is filled (a vocabulary's key)
MISSING_STRING = "__MISSING__"
MISSING_INT = -1


@dataclasses.dataclass
class Present:
    """A dense single-valued column and which of its values are present (``values`` holds
    anything where ``present`` is False): how the TFLite model takes a raw feature."""
    values: tf.Tensor
    present: tf.Tensor

    @property
    def dtype(self) -> tf.DType:
        return self.values.dtype


def is_present(x: Any) -> bool:
    """``x`` is a ``Present`` column. By its fields, not its class: a copy of this module that
    Beam's pickling re-created (seen on Beam 2.77) has its own ``Present`` class."""
    return hasattr(x, "present") and hasattr(x, "values") and not isinstance(x, (tf.SparseTensor, tf.RaggedTensor))


def to_dense(x: Any, default: Any) -> tf.Tensor:
    """A rank-1 dense tensor from a sparse/ragged/dense/``Present`` single-valued column."""
    if is_present(x):
        return tf.where(x.present, x.values, tf.cast(default, x.values.dtype))
    if isinstance(x, tf.SparseTensor):
        x = tf.sparse.to_dense(
            tf.SparseTensor(x.indices, x.values, [x.dense_shape[0], 1]), default_value=default)
    elif isinstance(x, tf.RaggedTensor):
        x = x.to_tensor(default_value=default, shape=[None, 1])
    return tf.reshape(x, [-1])


def map_values(fn: Callable[[tf.Tensor], tf.Tensor], x: Any) -> Any:
    """``fn`` applied to a column's present values, keeping which rows have one (sparse,
    ragged, dense or ``Present``)."""
    if is_present(x):
        return Present(fn(x.values), x.present)
    if isinstance(x, tf.SparseTensor):
        return tf.SparseTensor(x.indices, fn(x.values), x.dense_shape)
    if isinstance(x, tf.RaggedTensor):
        return tf.ragged.map_flat_values(fn, x)
    return fn(x)


def presence(x: Any) -> tf.Tensor:
    """Which rows of a single-valued column hold a value (rank-1 bool)."""
    if is_present(x):
        return x.present
    return to_dense(map_values(lambda v: tf.ones_like(v, tf.bool), x), False)


def dense_block(columns: Sequence[Any], dtype: tf.DType, default: Any,
                cast: Optional[Callable[[tf.Tensor], tf.Tensor]] = None) -> Tuple[tf.Tensor, tf.Tensor]:
    """([rows, k] values with ``default`` where absent, [rows, k] presence) of k single-valued
    columns, each one's values first passed through ``cast`` (default: ``tf.cast`` to ``dtype``).
    Sparse columns (what the Transform, the Evaluator and serving parse from tf.Example) are
    concatenated as one SparseTensor and densified once; any other kind column by column."""
    cast = cast or (lambda v: tf.cast(v, dtype))
    if columns and all(isinstance(x, tf.SparseTensor) for x in columns):
        # one shape for all: a batch where a column is absent from every row has dense_shape [rows, 0]
        shape = tf.stack([columns[0].dense_shape[0], tf.constant(1, tf.int64)])
        block = tf.sparse.concat(1, [tf.SparseTensor(x.indices, cast(x.values), shape) for x in columns])
        values = tf.sparse.to_dense(block, default_value=tf.constant(default, dtype))
        present = tf.sparse.to_dense(tf.SparseTensor(block.indices, tf.ones_like(block.values, tf.bool),
                                                     block.dense_shape), default_value=False)
        return values, present
    casted = [map_values(cast, x) for x in columns]
    return (tf.stack([to_dense(x, tf.constant(default, dtype)) for x in casted], axis=1),
            tf.stack([presence(x) for x in casted], axis=1))


def unstacked(block: tf.Tensor, count: int) -> list:
    """The ``count`` columns of a [rows, count] block, by one Unpack. An int64 block goes through
    int32 (indices: its values fit): TFLite's Unpack builtin takes no int64, and a Select TF op
    would leave the phone model's check to an interpreter that has them (TF 2.20+ ships none)."""
    if block.dtype == tf.int64:
        return [tf.cast(c, tf.int64) for c in tf.unstack(tf.cast(block, tf.int32), num=count, axis=1)]
    return tf.unstack(block, num=count, axis=1)
