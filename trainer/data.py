"""tf.data input over the Transform component's ``transformed_examples``.

Read (parallel, GZIP TFRecords) -> cache the serialized records when asked (the taxi
data is a few MB) -> repeat -> shuffle (seeded) -> batch -> vectorised parse of the whole
batch (much cheaper than parsing one example at a time) -> split the label -> prefetch.
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


def count_records(file_patterns: Sequence[str]) -> int:
    """Records in the files: one streaming pass, nothing held in memory."""
    ds = tf.data.TFRecordDataset(list_files(file_patterns), compression_type="GZIP")
    return int(ds.reduce(tf.constant(0, tf.int64), lambda n, _: n + 1))


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
    options = tf.data.Options()
    # Transform writes few files, so shard by record across workers, not by file.
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.DATA
    options.deterministic = True
    return ds.with_options(options).prefetch(tf.data.AUTOTUNE)
