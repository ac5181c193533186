"""tf.data input for the Trainer: the raw examples of a split (ExampleGen's), each batch
decoded by ``Decode``: parsed and run through the Transform graph (``transformed_decoder``),
the same ``tft_layer`` call the exported serving signature makes (trainer/export.py). The
Transform component only analyzes (``materialize=False``): writing the transformed examples
through Beam cost 60-70 s of a 1M-row day's Transform, and their transform in TF here a few
seconds (docs/scale.md).

Two readers (``training.reader``). ``tfrecord`` (default), two shapes:

* the training split when it fits its memory budget (trainer/cache_budget.py; the taxi data is 7 MB): read
  (parallel, GZIP TFRecords) -> decode every record once, as columns -> cache the columns -> per
  epoch, a seeded permutation of all rows -> batches gathered from the columns -> prefetch. Every
  step of the repeated part works on whole batches, so the input keeps up with a GPU: the
  per-example shuffle it replaces topped out at ~410k examples/s on the GPU machine's 16 cores,
  which made batch 4096 on an H100 input-bound (bench/gpu_bench.py, docs/performance.md). Each
  epoch is a full shuffle; the rows a batch cannot hold (rows mod batch) differ by epoch.
* otherwise (data that streams, or validation): read -> cache the serialized records when asked ->
  repeat -> shuffle (seeded; the buffer holds at least 8 batches) -> batch -> vectorised decode
  of the whole batch -> split the label -> prefetch.

Both measured 3-4x the examples/s of the TFXIO reader on this project's data
(bench/trainer_bench.py). ``tfxio``: TFX's data accessor (``fn_args.data_accessor``, TFXIO), which
reads whatever payload format the examples artifact declares, with the same seed, repeat and batching,
then the Transform graph on each batch.
"""
from __future__ import annotations

import atexit
import gc
import weakref
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, cast

import tensorflow as tf

# A batch of serialized tf.Examples -> the model's features and the label, by name (dense, sparse or
# ragged tensors, as parsing and the Transform graph give them).
Decode = Callable[[tf.Tensor], Dict[str, Any]]


def parser(feature_spec) -> Decode:
    """Parse with ``feature_spec``: for records that already hold the model's features."""
    return lambda serialized: tf.io.parse_example(serialized, feature_spec)


_TRAINER_LAYERS: "weakref.WeakKeyDictionary[Any, Any]" = weakref.WeakKeyDictionary()


def forget_transform_layers() -> int:
    """A layer holds its key, so entries stay until forgotten: by run_fn, and at exit (below)."""
    held = len(_TRAINER_LAYERS)
    _TRAINER_LAYERS.clear()  # their loaded Transform graphs go (patches/tf_custom_gradients.py says why)
    return held


@atexit.register  # registered after TensorFlow's import: runs before its teardown
def _forget_at_exit() -> None:
    if forget_transform_layers():
        gc.collect()


def transform_layer(tf_transform_output):
    """The Transform graph as a Keras layer of the Trainer's own: not the one the exported
    model tracks (``transform_features_layer()``, one per output), since Keras saves a layer's
    call for the inputs it saw first, and the model's must see the serving signature's. Made
    under the float32 policy: under a mixed one (runtime.precision) Keras would hand the graph
    bfloat16 / float16 values where it takes float32. One per Transform output: the train and
    validation datasets and the label's moments share it (each layer loads the Transform's
    SavedModel, about a second)."""
    from tensorflow_transform.output_wrapper import TransformFeaturesLayer

    from tfxline.trainer.precision import precision_policy
    if tf_transform_output not in _TRAINER_LAYERS:
        with precision_policy("float32"):
            _TRAINER_LAYERS[tf_transform_output] = TransformFeaturesLayer(tf_transform_output)
    return _TRAINER_LAYERS[tf_transform_output]


def transformed_decoder(tf_transform_output) -> Decode:
    """Parse raw examples, then the Transform graph: what the serving signature computes."""
    raw_spec = tf_transform_output.raw_feature_spec()
    tft_layer = transform_layer(tf_transform_output)
    return lambda serialized: tft_layer(tf.io.parse_example(serialized, raw_spec))


def transformed_sample(transform_dir: str, file_patterns: Sequence[str], rows: int = 5):
    """The first ``rows`` raw examples in the files, and the same rows as the Trainer reads them
    (``transformed_decoder``: parsed, then the Transform graph at ``transform_dir``), as
    (raw, transformed): column name -> one value per row (None where a row has no value, a list
    where it has several; text as str). What a notebook shows to check a ``preprocessing_fn``."""
    from tensorflow_transform.output_wrapper import TFTransformOutput

    output = TFTransformOutput(transform_dir)
    records = tf.data.TFRecordDataset(list_files(file_patterns), compression_type="GZIP").take(rows)
    serialized = tf.constant([r.numpy() for r in records], dtype=tf.string)
    raw = tf.io.parse_example(serialized, output.raw_feature_spec())
    return python_columns(raw), python_columns(transformed_decoder(output)(serialized))


def python_columns(tensors: Mapping[str, Any]) -> Dict[str, list]:
    """A batch of tensors (dense, sparse or ragged), name -> one Python value per row."""
    def value(v):
        if isinstance(v, list):
            v = [value(x) for x in v]
            return None if not v else v[0] if len(v) == 1 else v
        return v.decode("utf-8", "replace") if isinstance(v, bytes) else v

    out = {}
    for name, t in sorted(tensors.items()):
        if isinstance(t, tf.SparseTensor):
            t = tf.RaggedTensor.from_sparse(t)
        out[name] = [value(row) for row in t.to_list()] if isinstance(t, tf.RaggedTensor) \
            else [value(row) for row in t.numpy().tolist()]
    return out


def list_files(file_patterns: Sequence[str]) -> List[str]:
    files: List[str] = []
    for pattern in file_patterns:
        files += sorted(tf.io.gfile.glob(pattern))
    if not files:
        raise FileNotFoundError(f"no examples match {list(file_patterns)}")
    return files


def reduced(ds: tf.data.Dataset, initial, reducer):
    """``ds.reduce`` traced (eagerly, TF adds its function to the global graph for good: dataset_ops.py)."""
    return tf.function(lambda: ds.reduce(initial, reducer), autograph=False)()


def count_records(file_patterns: Sequence[str], limit: int = 0) -> int:
    """Records in the files (at most ``limit`` when set): one streaming pass, nothing held in memory."""
    ds = tf.data.TFRecordDataset(list_files(file_patterns), compression_type="GZIP")
    if limit:
        ds = ds.take(limit)
    return int(reduced(ds, tf.constant(0, tf.int64), lambda n, _: n + 1))


def label_moments(file_patterns: Sequence[str], label: str, decode: Decode,
                  limit: int = 1_000_000) -> Tuple[float, float, Optional[float], Optional[float]]:
    """(mean, standard deviation, min, max) of a numeric label over the first ``limit`` records:
    one streaming pass (a regression head starts at the label's scale, and its output is bounded
    to the label's range)."""
    ds = tf.data.TFRecordDataset(list_files(file_patterns), compression_type="GZIP").take(limit).batch(4096)
    ds = ds.map(lambda r: tf.reshape(tf.cast(decode(r)[label], tf.float64), [-1]))
    zero, inf = tf.constant(0.0, tf.float64), tf.constant(float("inf"), tf.float64)
    n, total, squares, low, high = reduced(
        ds, (zero, zero, zero, inf, -inf),
        lambda acc, y: (acc[0] + tf.cast(tf.size(y), tf.float64), acc[1] + tf.reduce_sum(y),
                        acc[2] + tf.reduce_sum(y * y), tf.minimum(acc[3], tf.reduce_min(y)),
                        tf.maximum(acc[4], tf.reduce_max(y))))
    n, total, squares = float(n), float(total), float(squares)
    if not n:
        return 0.0, 1.0, None, None
    mean = total / n
    return mean, max(squares / n - mean * mean, 0.0) ** 0.5, float(low), float(high)


def distribution_options() -> tf.data.Options:
    options = tf.data.Options()
    # Transform writes few files, so shard by record across workers, not by file.
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.DATA
    options.deterministic = True
    return options


def make_tfxio_dataset(data_accessor, file_patterns: Sequence[str], schema, transform, label_key: str,
                       batch_size: int, *, shuffle: bool, seed: int, repeat: bool = True) -> tf.data.Dataset:
    """``schema``: the records' (raw) schema; ``transform``: the parsed batch -> the model's
    features and the label (a ``tft_layer``)."""
    from tfx_bsl.public import tfxio

    options = tfxio.TensorFlowDatasetOptions(
        batch_size=batch_size, shuffle=shuffle, shuffle_seed=seed,
        num_epochs=None if repeat else 1, drop_final_batch=repeat)
    ds = data_accessor.tf_dataset_factory(list(file_patterns), options, schema)
    ds = ds.map(lambda features: split_label(transform(features), label_key),
                num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    return ds.with_options(distribution_options())


def make_dataset(file_patterns: Sequence[str], decode: Decode, label_key: str, batch_size: int, *,
                 shuffle: bool, seed: int, cache: bool = True, repeat: bool = True,
                 limit: int = 0) -> tf.data.Dataset:
    """``limit``: the first ``limit`` records only (taken before the cache, so a partial read
    never leaves an incomplete cache behind)."""
    files = list_files(file_patterns)
    ds = tf.data.TFRecordDataset(files, compression_type="GZIP",
                                 num_parallel_reads=min(len(files), 8) if len(files) > 1 else None)
    if limit:
        ds = ds.take(limit)
    if cache and repeat and shuffle:
        ds = in_memory_batches(ds, decode, label_key, batch_size, seed)
    elif cache and not repeat and not shuffle:
        ds = decoded_once(ds, decode, label_key, batch_size)
    else:
        if cache:
            ds = ds.cache()
        if repeat:
            ds = ds.repeat()
        if shuffle:
            # 10k records, or 8 batches when the batch is large (a grown batch on a GPU).
            ds = ds.shuffle(max(10_000, 8 * batch_size), seed=seed, reshuffle_each_iteration=True)
        ds = ds.batch(batch_size, drop_remainder=repeat)
        ds = ds.map(lambda serialized: split_label(decode(serialized), label_key),
                    num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    return ds.with_options(distribution_options()).prefetch(tf.data.AUTOTUNE)


def split_label(features: Dict[str, tf.Tensor], label_key: str):
    """(features without the label, the label) of one batch."""
    features = dict(features)
    return features, features.pop(label_key)


DECODE_ROWS = 65536


def concatenated(chunks: tf.data.Dataset) -> Dict[str, tf.Tensor]:
    """The columns of every element of ``chunks`` (dicts of tensors batched on axis 0), joined."""
    specs = cast(Dict[str, tf.TensorSpec], chunks.element_spec)  # a dict of dense columns (decoded)
    initial = {k: tf.zeros([0] + [d or 0 for d in spec.shape.as_list()[1:]], spec.dtype) for k, spec in specs.items()}
    return reduced(chunks, initial, lambda acc, chunk: {k: tf.concat([acc[k], chunk[k]], 0) for k in acc})


def in_memory_batches(records: tf.data.Dataset, decode: Decode, label_key: str, batch_size: int,
                      seed: int) -> tf.data.Dataset:
    """Endless shuffled (features, label) batches from ``records`` held in memory as columns:
    decoded once, then per epoch a permutation of all rows (stateless: seed and epoch number,
    so a resumed Trainer's ``skip`` lands on the same batches), batches gathered from it. Data
    smaller than a batch repeats within the epoch's permutation, as the streaming path's
    repeat-then-batch does."""
    # One element, the whole split, decoded DECODE_ROWS records at a time and concatenated
    # (parsing the raw columns and running the graph on 700k rows at once took 1.5 GB of
    # temporaries; 64k at a time, 0.2 GB): while it is built the columns are in memory twice
    # (a concatenation copies them; decoded scalars are smaller than their tf.Example
    # encoding, which training.cache's quarter-of-memory rule measures), then once.
    chunks = records.batch(DECODE_ROWS).map(decode)
    columns = tf.data.Dataset.range(1).map(lambda _: concatenated(chunks)).cache().repeat()

    def epoch_batches(epoch, cols):
        rows = tf.shape(next(iter(cols.values())), out_type=tf.int64)[0]
        copies = (batch_size + rows - 1) // rows  # > 1 only when the split is smaller than a batch
        ids = tf.tile(tf.range(rows), [copies])  # pyright: ignore[reportArgumentType] - multiples may be tensors
        # not in TensorFlow's stubs (tf.random.experimental, TF 2.9 and later)
        ids = tf.random.experimental.stateless_shuffle(  # pyright: ignore[reportAttributeAccessIssue]
            ids, seed=tf.stack([tf.constant(seed, tf.int64), epoch]))
        batches = tf.size(ids, out_type=tf.int64) // batch_size
        ids = tf.reshape(ids[:batches * batch_size], [batches, batch_size])
        return tf.data.Dataset.from_tensor_slices(ids).map(
            lambda batch_ids: split_label({k: tf.gather(v, batch_ids) for k, v in cols.items()}, label_key))

    # the stubs' flat_map takes a one-argument function; a zipped dataset's gets its elements as arguments
    return tf.data.Dataset.zip((tf.data.Dataset.range(1 << 62), columns)).flat_map(
        epoch_batches)  # pyright: ignore[reportArgumentType]


def decoded_once(records: tf.data.Dataset, decode: Decode, label_key: str, batch_size: int) -> tf.data.Dataset:
    """One pass of (features, label) batches from ``records`` decoded now, held in memory as
    columns (validation): each pass's iterator reads tensors, not the Transform graph. Keras
    makes a new iterator for each validation pass, and instantiating a wide table's Transform
    graph for it was most of the Trainer's fit (300 columns: 18 of 21 s, docs/scale.md)."""
    columns = concatenated(records.batch(DECODE_ROWS).map(decode))
    return tf.data.Dataset.from_tensor_slices(columns).batch(batch_size).map(  # pyright: ignore[reportArgumentType] - a dict of tensors is a nest
        lambda features: split_label(features, label_key))


def label_counts(file_patterns: Sequence[str], label: str, decode: Decode, limit: int = 1_000_000) -> List[int]:
    """Rows per class (index) of a class label over the first ``limit`` records: one streaming pass."""
    ds = tf.data.TFRecordDataset(list_files(file_patterns), compression_type="GZIP").take(limit).batch(4096)
    ds = ds.map(lambda r: tf.reshape(tf.cast(decode(r)[label], tf.int64), [-1]))
    counts = ds.reduce(tf.zeros([0], tf.int64), lambda acc, y: _add_counts(acc, tf.math.bincount(y, dtype=tf.int64)))
    return [int(c) for c in counts.numpy()]


def _add_counts(a, b):
    size = tf.maximum(tf.size(a), tf.size(b))
    return tf.pad(a, [[0, size - tf.size(a)]]) + tf.pad(b, [[0, size - tf.size(b)]])
