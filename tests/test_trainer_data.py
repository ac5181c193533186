"""The Trainer's tf.data input: the in-memory cache only when the records fit, validation rows."""
import random

import numpy as np
import tensorflow as tf

from trainer import data

SPEC = {"x": tf.io.FixedLenFeature([], tf.float32), "city": tf.io.FixedLenFeature([], tf.string),
        "label": tf.io.FixedLenFeature([], tf.int64)}


def write_records(path, n, seed=0):
    rng = random.Random(seed)
    with tf.io.TFRecordWriter(str(path), tf.io.TFRecordOptions(compression_type="GZIP")) as w:
        for i in range(n):
            ex = tf.train.Example()
            ex.features.feature["x"].float_list.value.append(rng.gauss(0, 1))
            ex.features.feature["city"].bytes_list.value.append(rng.choice([b"Chicago", b"Evanston", b"Oak Park"]))
            ex.features.feature["label"].int64_list.value.append(i)
            w.write(ex.SerializeToString())
    return str(path)


def test_decompressed_size_is_estimated_from_a_sample(tmp_path):
    path = write_records(tmp_path / "part-0.gz", 20_000)
    exact = sum(len(r.numpy()) for r in tf.data.TFRecordDataset(path, compression_type="GZIP"))
    estimate = data.decompressed_bytes([path])
    assert abs(estimate - exact) / exact < 0.15, (estimate, exact)


def test_the_cache_is_used_only_when_the_records_fit():
    gib = 1 << 30
    assert data.cache_fits(2 * gib, available=8 * gib)
    assert not data.cache_fits(2 * gib + 1, available=8 * gib)
    assert data.cache_fits(gib, available=None) and not data.cache_fits(gib + 1, available=None)
    assert data.available_memory() is None or data.available_memory() > 0


def test_validation_reads_the_first_rows_once_and_the_same_rows_every_pass(tmp_path):
    """``limit`` comes before the cache: each pass yields the same 250 rows, nothing truncated."""
    path = write_records(tmp_path / "eval.gz", 1000)
    ds = data.make_dataset([path], SPEC, "label", 100, shuffle=False, seed=1, repeat=False, limit=250)
    passes = [np.concatenate([labels.numpy() for _, labels in ds]) for _ in range(2)]
    np.testing.assert_array_equal(passes[0], np.arange(250))
    np.testing.assert_array_equal(passes[1], passes[0])
