"""The pushed model's latency per batch size, measured at push (TF Serving's batching settings
are chosen from it: serving/tf_serving_files.batching_choice).

The signature TF Serving runs (``serving_default``, serialized raw tf.Examples) is timed on the
run's own eval rows, each batch size after two warm-up calls, median of the timed calls.
"""
from __future__ import annotations

import os
import time
from typing import Any, Dict, List, Sequence

BATCH_SIZES = (1, 8, 32, 128, 512)
BUDGET_S = 0.4  # timed calls per batch size: as many as fit in this, at least 5


def eval_records(examples_uri: str, limit: int = max(BATCH_SIZES), split: str = "eval") -> List[bytes]:
    """Up to ``limit`` serialized tf.Examples of a split (the label column too: the
    signature's parsing ignores features it does not read)."""
    import tensorflow as tf

    files = sorted(tf.io.gfile.glob(f"{examples_uri.rstrip('/')}/Split-{split}/*"))  # a URI too
    out: List[bytes] = []
    for record in tf.data.TFRecordDataset(files, compression_type="GZIP").take(limit):
        out.append(record.numpy())
    return out


def measure(model_dir: str, records: Sequence[bytes], batch_sizes: Sequence[int] = BATCH_SIZES) -> Dict[str, Any]:
    """{"latency_ms": {batch: median ms}, "rows": how many distinct rows were cycled}."""
    import numpy as np
    import tensorflow as tf

    from trainer.export import SERVING_SIGNATURE

    if not records:
        return {}
    serve = tf.saved_model.load(model_dir).signatures[SERVING_SIGNATURE]
    latency = {}
    for b in batch_sizes:
        batch = tf.constant([records[i % len(records)] for i in range(b)])
        for _ in range(2):
            serve(examples=batch)
        times, start = [], time.perf_counter()
        while len(times) < 5 or time.perf_counter() - start < BUDGET_S:
            t = time.perf_counter()
            serve(examples=batch)
            times.append(time.perf_counter() - t)
            if len(times) >= 200:
                break
        latency[str(b)] = round(float(np.median(times)) * 1000, 3)
    return {"latency_ms": latency, "rows": len(records), "cpus": os.cpu_count()}
