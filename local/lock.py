"""One run at a time per SQLite metadata store: a second run, ``tfxline gc`` or a serving move
waits for the first (and says so) instead of meeting 'database is locked'."""
from __future__ import annotations

import contextlib
import fcntl
import os
import time
from typing import Iterator, TextIO

from tfxline.pipeline.config import PipelineConfig

LOCK_FILE = ".tfxline-run.lock"


@contextlib.contextmanager
def one_run_at_a_time(cfg: PipelineConfig, stream: TextIO) -> Iterator[None]:
    """One run at a time per output root with a SQLite MLMD store (one writer): a second run
    waits here for the first, and says so, instead of meeting 'database is locked'. A MySQL /
    MariaDB store takes concurrent runs: no waiting there."""
    if not isinstance(cfg.metadata_store, str):
        yield
        return
    output_root = cfg.output_root
    path = os.path.join(output_root, LOCK_FILE)
    with open(path, "a+") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock.seek(0)
            holder = lock.read().strip() or "another run"
            print(f"waiting: {holder} is using {output_root} (one run at a time per metadata store)",
                  file=stream, flush=True)
            fcntl.flock(lock, fcntl.LOCK_EX)
        lock.seek(0)
        lock.truncate()
        lock.write(f"run of pid {os.getpid()} started {time.strftime('%H:%M:%S')}")
        lock.flush()
        try:
            yield
        finally:
            lock.seek(0)
            lock.truncate()
            fcntl.flock(lock, fcntl.LOCK_UN)
