"""tf.data input over the Transform component's ``transformed_examples``.

Two readers (``training.reader``):

``tfrecord`` (default): read (parallel, GZIP TFRecords) -> cache the serialized records
when asked (the taxi data is a few MB) -> repeat -> shuffle (seeded) -> batch -> vectorised
parse of the whole batch -> split the label -> prefetch. Measured 3-4x the examples/s of
the TFXIO reader on this project's data (bench/trainer_bench.py), and the cache sits
before the shuffle, so every epoch is shuffled anew without re-reading files.

``tfxio``: TFX's data accessor (``fn_args.data_accessor``, TFXIO), which reads whatever
payload format the examples artifact declares, with the same seed, repeat and batching.
"""
from __future__ import annotations

from typing import Dict, List, Sequence

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
                 cache: bool = True, repeat: bool = True,
                 shuffle_buffer: int = 10_000) -> tf.data.Dataset:
    files = list_files(file_patterns)
    ds = tf.data.TFRecordDataset(files, compression_type="GZIP",
                                 num_parallel_reads=min(len(files), 8) if len(files) > 1 else None)
    if cache:
        ds = ds.cache()
    if repeat:
        ds = ds.repeat()
    if shuffle:
        ds = ds.shuffle(shuffle_buffer, seed=seed, reshuffle_each_iteration=True)
    ds = ds.batch(batch_size, drop_remainder=repeat)

    def parse(serialized):
        features = tf.io.parse_example(serialized, feature_spec)
        label = features.pop(label_key)
        return features, label

    ds = ds.map(parse, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    return ds.with_options(distribution_options()).prefetch(tf.data.AUTOTUNE)
