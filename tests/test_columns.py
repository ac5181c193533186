"""transforms/columns.py and the block transforms of transforms/preprocessing.py: many columns
densified at once give what each column alone gives, and the ops of a traced preprocessing_fn
do not grow with the number of numeric or code columns (the cost a wide table paid, docs/scale.md)."""
import numpy as np
import pytest
import tensorflow as tf
import tensorflow_transform as tft

from tfxline.transforms import number_pass
from tfxline.transforms.columns import Present, dense_block, presence, to_dense
from tfxline.transforms.features import FeatureSpec
from tfxline.transforms.preprocessing import identity_outputs, make_preprocessing_fn


def sparse(values, dtype):
    """A VarLen column as tf.Example parsing gives it: one value or none per row."""
    rows = [i for i, v in enumerate(values) if v is not None]
    width = 1 if rows else 0   # a batch where the column is absent from every row: [rows, 0]
    return tf.SparseTensor(tf.constant([[i, 0] for i in rows], tf.int64, shape=[len(rows), 2]),
                           tf.constant([values[i] for i in rows], dtype), [len(values), width])


COLUMNS = [[1.5, None, -2.0, 7.0], [None, None, None, None], [3, 4, None, 5], [None, 0.25, 0.5, None]]
DTYPES = [tf.float32, tf.float32, tf.int64, tf.float64]


def test_a_block_of_sparse_columns_equals_each_column_densified_alone():
    xs = [sparse(v, d) for v, d in zip(COLUMNS, DTYPES)]
    values, present = dense_block(xs, tf.float32, -1.0)
    for j, x in enumerate(xs):
        alone = to_dense(tf.SparseTensor(x.indices, tf.cast(x.values, tf.float32), x.dense_shape), -1.0)
        np.testing.assert_array_equal(values[:, j].numpy(), alone.numpy())
        np.testing.assert_array_equal(present[:, j].numpy(), presence(x).numpy())
    assert present.numpy().sum() == 8
    # the same block from any other kind of column (the TFLite model's Present columns)
    dense = [Present(to_dense(x, tf.cast(0, x.dtype)), presence(x)) for x in xs]
    other_values, other_present = dense_block(dense, tf.float32, -1.0)
    np.testing.assert_array_equal(other_values.numpy(), values.numpy())
    np.testing.assert_array_equal(other_present.numpy(), present.numpy())


def test_buckets_of_a_block_are_tfts_apply_buckets_column_by_column():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(50, 3)).astype(np.float32)
    x[[3, 9], 1] = np.nan                      # tft: NaN is in the last bucket
    x[5, 0] = 0.0
    boundaries = np.sort(rng.normal(size=(3, 6)).astype(np.float32), axis=1)
    boundaries[0] = [-1.0, -0.5, 0.0, 0.0, 0.5, 1.0]   # duplicated boundaries, and a value on them
    ours = number_pass.apply_buckets(tf.constant(x), tf.constant(boundaries)).numpy()
    for j in range(3):
        # in a function: tft records the result's range in a graph collection, not in the process's
        theirs = tf.function(lambda: tft.apply_buckets(tf.constant(x[:, j]), tf.constant(boundaries[j:j + 1])))().numpy()
        np.testing.assert_array_equal(ours[:, j], theirs, err_msg=f"column {j}")
    assert ours[3, 1] == 6 and ours[5, 0] == 4   # both 0.0 boundaries are at or below it


def test_codes_are_their_own_index_and_a_missing_or_unknown_code_the_default():
    spec = FeatureSpec.from_dict({"label": {"name": "y", "transform": "binary"}, "inputs": [
        {"name": "a", "transform": "identity", "num_buckets": 4, "default": 3},
        {"name": "b", "transform": "identity", "num_buckets": 3, "default": 2}]})
    out = identity_outputs(spec.inputs, {"a": sparse([0, None, 2, 9, -1], tf.int64),
                                         "b": sparse([1.0, 2.0, None, None, 0.0], tf.float32)})
    assert out["a"].numpy().tolist() == [0, 3, 2, 3, 3]
    assert out["b"].numpy().tolist() == [1, 2, 2, 2, 0]


def _ops_of(columns: int) -> int:
    inputs = []
    for i in range(columns):
        inputs += [{"name": f"n{i}", "transform": "log_zscore"},
                   {"name": f"n{i}_bucket", "column": f"n{i}", "transform": "bucketize", "num_buckets": 8},
                   {"name": f"z{i}", "transform": "zscore"},
                   {"name": f"c{i}", "transform": "identity", "num_buckets": 5, "default": 4}]
    spec = FeatureSpec.from_dict({"label": {"name": "y", "transform": "regression"}, "inputs": inputs})
    graph = tf.Graph()
    with graph.as_default():
        raw = {f.source: tf.compat.v1.sparse_placeholder(tf.int64 if f.name.startswith("c") else tf.float32)
               for f in spec.inputs}
        raw["y"] = tf.compat.v1.sparse_placeholder(tf.float32)
        before = len(graph.get_operations())
        make_preprocessing_fn(spec)(raw)
        return len(graph.get_operations()) - before


@pytest.mark.parametrize("more", [10])
def test_the_traced_graph_grows_by_a_few_ops_a_column(more):
    # each column: its cast into the block, the input's own shape (three placeholders each here)
    per_column = (_ops_of(5 + more) - _ops_of(5)) / (more * 4)
    assert per_column <= 3, per_column   # it was 18 to 60 a column, one kind to another
