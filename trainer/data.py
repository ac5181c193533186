"""tf.data input over the Transform component's ``transformed_examples``.

Two readers (``training.reader``):

``tfrecord`` (default): read (parallel, GZIP TFRecords) -> cache the serialized records
when asked and they fit in memory (``cache_fits``; the taxi data is 7 MB) -> repeat ->
shuffle (seeded; the buffer holds at least 8 batches) -> batch -> vectorised parse of the
whole batch -> split the label -> prefetch. Measured 3-4x the examples/s of
the TFXIO reader on this project's data (bench/trainer_bench.py), and the cache sits
before the shuffle, so every epoch is shuffled anew without re-reading files.

``tfxio``: TFX's data accessor (``fn_args.data_accessor``, TFXIO), which reads whatever
payload format the examples artifact declares, with the same seed, repeat and batching.
"""
from __future__ import annotations

import os
import tempfile
from typing import Dict, List, Optional, Sequence

import tensorflow as tf


def list_files(file_patterns: Sequence[str]) -> List[str]:
    files: List[str] = []
    for pattern in file_patterns:
        files += sorted(tf.io.gfile.glob(pattern))
    if not files:
        raise FileNotFoundError(f"no transformed examples match {list(file_patterns)}")
    return files


def count_records(file_patterns: Sequence[str], limit: int = 0) -> int:
    """Records in the files (at most ``limit`` when set): one streaming pass, nothing held in memory."""
    ds = tf.data.TFRecordDataset(list_files(file_patterns), compression_type="GZIP")
    if limit:
        ds = ds.take(limit)
    return int(ds.reduce(tf.constant(0, tf.int64), lambda n, _: n + 1))


def decompressed_bytes(file_patterns: Sequence[str], sample: int = 1000) -> int:
    """The serialized records' size once decompressed (what ``cache`` keeps in memory),
    estimated without reading the data: the files' compressed size x the ratio the first
    ``sample`` records show when written the same way (a GZIP TFRecord file; within 10 % of
    the exact size on the taxi data, whose records shrink 10x)."""
    files = list_files(file_patterns)
    compressed = sum(tf.io.gfile.stat(f).length for f in files)
    records = [r.numpy() for r in tf.data.TFRecordDataset(files[:1], compression_type="GZIP").take(sample)]
    if not records:
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "sample.gz")
        with tf.io.TFRecordWriter(path, tf.io.TFRecordOptions(compression_type="GZIP")) as w:
            for r in records:
                w.write(r)
        sample_compressed = os.path.getsize(path)
    return int(compressed * sum(map(len, records)) / max(1, sample_compressed))


def available_memory() -> Optional[int]:
    """Bytes of memory available to new allocations (Linux MemAvailable); None elsewhere."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def cache_fits(data_bytes: int, available: Optional[int]) -> bool:
    """``training.cache``: the records are cached in memory when they take at most a quarter
    of the available memory (1 GiB where that is unknown); larger data streams from the files
    every epoch instead of running the Trainer out of memory."""
    budget = available // 4 if available else 1 << 30
    return data_bytes <= budget


def distribution_options() -> tf.data.Options:
    options = tf.data.Options()
    # Transform writes few files, so shard by record across workers, not by file.
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.DATA
    options.deterministic = True
    return options


def make_tfxio_dataset(data_accessor, file_patterns: Sequence[str], schema, label_key: str,
                       batch_size: int, *, shuffle: bool, seed: int, repeat: bool = True) -> tf.data.Dataset:
    from tfx_bsl.public import tfxio

    options = tfxio.TensorFlowDatasetOptions(
        batch_size=batch_size, shuffle=shuffle, shuffle_seed=seed, label_key=label_key,
        num_epochs=None if repeat else 1, drop_final_batch=repeat)
    ds = data_accessor.tf_dataset_factory(list(file_patterns), options, schema)
    return ds.with_options(distribution_options())


def make_dataset(file_patterns: Sequence[str], feature_spec: Dict[str, tf.io.FixedLenFeature],
                 label_key: str, batch_size: int, *, shuffle: bool, seed: int,
                 cache: bool = True, repeat: bool = True, limit: int = 0,
                 shuffle_buffer: int = 0) -> tf.data.Dataset:
    """``limit``: the first ``limit`` records only (taken before the cache, so a partial read
    never leaves an incomplete cache behind)."""
    files = list_files(file_patterns)
    ds = tf.data.TFRecordDataset(files, compression_type="GZIP",
                                 num_parallel_reads=min(len(files), 8) if len(files) > 1 else None)
    if limit:
        ds = ds.take(limit)
    if cache:
        ds = ds.cache()
    if repeat:
        ds = ds.repeat()
    if shuffle:
        # 10k records, or 8 batches when the batch is large (a grown batch on a GPU).
        buffer = shuffle_buffer or max(10_000, 8 * batch_size)
        ds = ds.shuffle(buffer, seed=seed, reshuffle_each_iteration=True)
    ds = ds.batch(batch_size, drop_remainder=repeat)

    def parse(serialized):
        features = tf.io.parse_example(serialized, feature_spec)
        label = features.pop(label_key)
        return features, label

    ds = ds.map(parse, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    return ds.with_options(distribution_options()).prefetch(tf.data.AUTOTUNE)
