"""stderr of native (C++) code, filtered: the lines a library writes to the file descriptor
before any Python log level applies, minus the ones known to be noise. Standard library only
(pipeline/quiet.py and the GPU bundle's bench scripts use it too)."""
from __future__ import annotations

import contextlib
import os
import re
import sys
import tempfile
from typing import Iterator

# What TFLite's converter writes to stderr through absl on every conversion: flags it ignores
# by design, and absl's notice that it logs before being initialized.
TFLITE_CONVERTER_NOISE = re.compile(
    r"All log messages before absl::InitializeLog|tf_tfl_flatbuffer_helpers\.cc:\d+\] Ignored ")


@contextlib.contextmanager
def stderr_filtered(noise: "re.Pattern[str]") -> Iterator[None]:
    """Capture stderr (the file descriptor: C++ writes there) during the block, then write
    back every captured line but those ``noise`` matches: anything else, errors included,
    still shows."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as captured:
        os.dup2(captured.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            captured.seek(0)
            kept = [line for line in captured.read().decode("utf-8", "replace").splitlines()
                    if line.strip() and not noise.search(line)]
            if kept:
                print("\n".join(kept), file=sys.stderr, flush=True)


@contextlib.contextmanager
def stderr_to_file(path: str) -> Iterator[None]:
    """stderr (the file descriptor) appended to ``path`` during the block: what this process's
    native code and the child processes it starts (Beam's worker processes, which inherit the
    descriptor) write there goes to the file, not the console."""
    sys.stderr.flush()
    saved = os.dup(2)
    with open(path, "ab") as f:
        os.dup2(f.fileno(), 2)
    try:
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
