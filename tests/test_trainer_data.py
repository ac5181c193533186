"""The Trainer's tf.data input: the in-memory cache only when the records fit, validation rows."""
import random

import numpy as np
import pytest
import tensorflow as tf

from tfxline.trainer import cache_budget, data

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
    estimate = cache_budget.decompressed_bytes([path])
    assert abs(estimate - exact) / exact < 0.15, (estimate, exact)


def test_the_cache_is_used_only_when_the_records_fit():
    gib = 1 << 30
    big = 64 * gib  # training.cache_max_gb set above the machine's quarter
    assert cache_budget.cache_fits(2 * gib, available=8 * gib, max_bytes=big)
    assert not cache_budget.cache_fits(2 * gib + 1, available=8 * gib, max_bytes=big)
    assert cache_budget.cache_fits(gib, available=None) and not cache_budget.cache_fits(gib + 1, available=None)
    # training.cache_max_gb caps it whatever the machine has: a larger split streams (flat memory)
    assert cache_budget.cache_fits(gib, available=64 * gib) and not cache_budget.cache_fits(gib + 1, available=64 * gib)
    assert cache_budget.cache_fits(3 * gib, available=64 * gib, max_bytes=4 * gib)
    assert cache_budget.available_memory() is None or cache_budget.available_memory() > 0


def test_validation_reads_the_first_rows_once_and_the_same_rows_every_pass(tmp_path):
    """``limit`` comes before the cache: each pass yields the same 250 rows, nothing truncated."""
    path = write_records(tmp_path / "eval.gz", 1000)
    ds = data.make_dataset([path], data.parser(SPEC), "label", 100, shuffle=False, seed=1, repeat=False, limit=250)
    passes = [np.concatenate([labels.numpy() for _, labels in ds]) for _ in range(2)]
    np.testing.assert_array_equal(passes[0], np.arange(250))
    np.testing.assert_array_equal(passes[1], passes[0])
    # held decoded in memory: a pass decodes nothing (the decoder ran once, while the dataset was made)
    decoded = []
    ds = data.make_dataset([path], lambda r: decoded.append(1) or data.parser(SPEC)(r), "label", 100,
                           shuffle=False, seed=1, repeat=False, limit=250)
    traced = len(decoded)
    assert [len(labels) for _, labels in ds] == [100, 100, 50] and len(decoded) == traced
    streamed = data.make_dataset([path], data.parser(SPEC), "label", 100, shuffle=False, seed=1, repeat=False,
                                 limit=250, cache=False)
    np.testing.assert_array_equal(np.concatenate([y.numpy() for _, y in streamed]), passes[0])
    assert streamed.element_spec == ds.element_spec


def labels_of(ds, batches):
    it = iter(ds)
    return [next(it)[1].numpy() for _ in range(batches)]


def test_training_batches_are_a_full_seeded_shuffle_per_epoch(tmp_path):
    """The in-memory path (cached training data): each epoch holds every row once (1000 rows,
    10 batches of 100), in an order that changes per epoch and is the same for the same seed;
    a resumed Trainer's skip lands on the same batches; features keep their dtypes and a
    static batch shape."""
    path = write_records(tmp_path / "train.gz", 1000)
    ds = data.make_dataset([path], data.parser(SPEC), "label", 100, shuffle=True, seed=1)
    batches = labels_of(ds, 20)
    first, second = np.concatenate(batches[:10]), np.concatenate(batches[10:])
    np.testing.assert_array_equal(np.sort(first), np.arange(1000))
    np.testing.assert_array_equal(np.sort(second), np.arange(1000))
    assert (first != second).any() and (first != np.arange(1000)).any()
    again = labels_of(data.make_dataset([path], data.parser(SPEC), "label", 100, shuffle=True, seed=1), 20)
    np.testing.assert_array_equal(np.concatenate(again), np.concatenate(batches))
    other = labels_of(data.make_dataset([path], data.parser(SPEC), "label", 100, shuffle=True, seed=2), 10)
    assert (np.concatenate(other) != first).any()
    resumed = labels_of(data.make_dataset([path], data.parser(SPEC), "label", 100, shuffle=True, seed=1).skip(13), 3)
    np.testing.assert_array_equal(np.concatenate(resumed), np.concatenate(batches[13:16]))
    features, _ = next(iter(ds))
    assert features["x"].dtype == tf.float32 and features["city"].dtype == tf.string
    assert ds.element_spec[0]["x"].shape.as_list() == [100] and "label" not in features


def test_a_split_smaller_than_the_batch_still_fills_batches(tmp_path):
    """50 rows, batch 64: every batch is full (each epoch shuffles the rows repeated to fill
    a batch, as repeat-then-batch did), and the rows all come round."""
    path = write_records(tmp_path / "small.gz", 50)
    batches = labels_of(data.make_dataset([path], data.parser(SPEC), "label", 64, shuffle=True, seed=1), 10)
    assert all(b.shape == (64,) for b in batches)
    assert set(np.concatenate(batches)) == set(range(50))


def test_the_streaming_path_matches_the_in_memory_path_in_what_it_yields(tmp_path):
    """cache=False (data too large for memory) still yields shuffled full batches of the same
    features and labels."""
    path = write_records(tmp_path / "train.gz", 1000)
    streamed = data.make_dataset([path], data.parser(SPEC), "label", 100, shuffle=True, seed=1, cache=False)
    features, labels = next(iter(streamed))
    assert labels.shape == (100,) and set(features) == {"x", "city"}
    assert streamed.element_spec == data.make_dataset([path], data.parser(SPEC), "label", 100, shuffle=True, seed=1).element_spec


def test_the_columns_are_the_same_decoded_in_chunks(tmp_path, monkeypatch):
    """The in-memory path decodes DECODE_ROWS records at a time and joins the columns: the
    batches equal one decode of the whole split, a string column's too."""
    path = write_records(tmp_path / "train.gz", 1000)

    def batches():
        ds = data.make_dataset([path], data.parser(SPEC), "label", 64, shuffle=True, seed=3)
        it = iter(ds)
        return [next(it) for _ in range(20)]

    whole = batches()
    monkeypatch.setattr(data, "DECODE_ROWS", 37)  # 28 chunks, the last one short
    for (features, labels), (features_chunked, labels_chunked) in zip(whole, batches()):
        np.testing.assert_array_equal(labels.numpy(), labels_chunked.numpy())
        for k in features:
            np.testing.assert_array_equal(features[k].numpy(), features_chunked[k].numpy())


def test_balanced_class_weights_are_capped_at_ten_times_the_commonest():
    """training.class_weight: balanced weighs each class rows / (classes x its rows), but a class
    600x rarer than the commonest is weighed at most 10x its weight (uncapped, a 20-class table's
    rarest class weighed 641x and was predicted 7-9x too often)."""
    from tfxline.trainer.inputs import balanced_weights
    from tfxline.trainer.settings import MAX_CLASS_WEIGHT

    even = balanced_weights([50, 50, 0])
    assert even == {0: 1.0, 1: 1.0}  # an absent class gets no weight
    skewed = balanced_weights([6000, 3000, 10])
    common = 9010 / (3 * 6000)
    assert skewed[0] == pytest.approx(common) and skewed[1] == pytest.approx(2 * common)
    assert skewed[2] == pytest.approx(MAX_CLASS_WEIGHT * common)  # 600x rarer: capped at 10x
