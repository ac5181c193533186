"""The pushed model's latency per batch size, measured at push (TF Serving's batching settings
are chosen from it: serving/tf_serving_files.batching_choice).

The signature TF Serving runs (``serving_default``, serialized raw tf.Examples) is timed on the
run's own eval rows, each batch size after two warm-up calls, median of the timed calls: at least
5 and at most 30 of them, within 0.4 s per batch size (the small batches stop at 30 calls, the
large ones at the budget; the whole measurement ~1 s at push).
"""
from __future__ import annotations

import functools
import os
import time
from typing import Any, Callable, Dict, List, Sequence

BATCH_SIZES = (1, 8, 32, 128, 512)
BUDGET_S = 0.4  # timed calls per batch size: as many as fit in this, at least MIN_CALLS ...
MIN_CALLS, MAX_CALLS = 5, 30  # ... and at most MAX_CALLS (a median of 30 is steady; 200 cost 1 s more)


def eval_records(examples_uri: str, limit: int = max(BATCH_SIZES), split: str = "eval") -> List[bytes]:
    """Up to ``limit`` serialized tf.Examples of a split (the label column too: the
    signature's parsing ignores features it does not read)."""
    import tensorflow as tf

    files = sorted(tf.io.gfile.glob(f"{examples_uri.rstrip('/')}/Split-{split}/*"))  # a URI too
    out: List[bytes] = []
    for record in tf.data.TFRecordDataset(files, compression_type="GZIP").take(limit):
        out.append(bytes(record.numpy()))  # a scalar string tensor's bytes
    return out


def measure(model_dir: str, records: Sequence[bytes], batch_sizes: Sequence[int] = BATCH_SIZES) -> Dict[str, Any]:
    """{"latency_ms": {batch: median ms}, "rows": how many distinct rows were cycled}."""
    import numpy as np
    import tensorflow as tf

    from tfxline.trainer import trees_ops
    from tfxline.trainer.export import SERVING_SIGNATURE

    if not records:
        return {}
    trees_ops.load_inference_ops()  # a trees model's ops (none needed by a network)
    serve = tf.saved_model.load(model_dir).signatures[SERVING_SIGNATURE]
    latency = {}
    for b in batch_sizes:
        batch = tf.constant([records[i % len(records)] for i in range(b)])
        for _ in range(2):
            serve(examples=batch)
        times = timed_calls(functools.partial(serve, examples=batch))
        latency[str(b)] = round(float(np.median(times)) * 1000, 3)
    return {"latency_ms": latency, "rows": len(records), "cpus": os.cpu_count()}


def timed_calls(call: Callable[[], Any], budget_s: float = BUDGET_S, min_calls: int = MIN_CALLS,
                max_calls: int = MAX_CALLS) -> List[float]:
    """Seconds per call of ``call``: at least ``min_calls``, then more while within ``budget_s``
    and fewer than ``max_calls``."""
    times: List[float] = []
    start = time.perf_counter()
    while len(times) < min_calls or (time.perf_counter() - start < budget_s and len(times) < max_calls):
        t = time.perf_counter()
        call()
        times.append(time.perf_counter() - t)
    return times
