"""What the Trainer's in-memory cache may hold (``training.cache``): the records' decompressed size,
estimated from a sample, against ``training.cache_max_gb`` and a quarter of the available memory."""
from __future__ import annotations

import os
import tempfile
from typing import Optional, Sequence

import tensorflow as tf

from tfxline.trainer.data import list_files


def decompressed_bytes(file_patterns: Sequence[str], sample: int = 1000) -> int:
    """The serialized records' size once decompressed (what ``cache`` keeps in memory),
    estimated without reading the data: the files' compressed size x the ratio the first
    ``sample`` records show when written the same way (a GZIP TFRecord file; within 10 % of
    the exact size on the taxi data, whose records shrink 10x)."""
    files = list_files(file_patterns)
    compressed = sum(tf.io.gfile.stat(f).length for f in files)
    records = [bytes(r.numpy()) for r in tf.data.TFRecordDataset(files[:1], compression_type="GZIP").take(sample)]
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


def cache_fits(data_bytes: int, available: Optional[int], max_bytes: int = 1 << 30) -> bool:
    """``training.cache``: the records are cached in memory when they take at most ``max_bytes``
    (``training.cache_max_gb``) and a quarter of the available memory (1 GiB where that is
    unknown); larger data streams from the files every epoch, in memory that does not grow with it."""
    budget = min(available // 4 if available else 1 << 30, max_bytes)
    return data_bytes <= budget
