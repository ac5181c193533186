"""stderr of native (C++) code, filtered: the lines a library writes to the file descriptor
before any Python log level applies, minus the ones known to be noise. Standard library only
(cli/quiet.py and the GPU bundle's bench scripts use it too)."""
from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
import tempfile
from typing import Iterator

# What TFLite's converter writes to stderr through absl on every conversion: flags it ignores
# by design, and absl's notice that it logs before being initialized.
TFLITE_CONVERTER_NOISE = re.compile(
    r"All log messages before absl::InitializeLog|tf_tfl_flatbuffer_helpers\.cc:\d+\] Ignored ")


# What TensorFlow's C++ side writes to stderr while a model runs, past any log level (absl's
# logging): grappler's cost model cannot price an op whose input has an unknown rank (the
# Softmax of every multi-class model, each time a graph of it is optimized: the Evaluator,
# the Pusher's checks, predict); and absl's notice before its first such line.
# And YDF's C++ side (a trees model: trainer/trees.py), which logs in its own format on each model
# load and learner's start, whatever ydf.verbose says ("[INFO 26-12-02 07:38:19.2615 UTC
# kernel.cc:1233] Loading model from path ..."): its INFO and WARNING lines; its errors still show.
# And oneDNN's notice, once a process, that an int64 op (a pretrained text encoder's table lookup:
# trainer/text_pretrained.py) runs on Eigen's kernel instead ("E ... util.cc:131] oneDNN supports
# DT_INT64 only on platforms with AVX-512. Falling back to the default Eigen-based implementation").
TF_RUNTIME_NOISE = re.compile(
    r"op_level_cost_estimator\.cc:\d+\] Error in PredictCost\(\)|All log messages before absl::InitializeLog"
    r"|oneDNN supports DT_INT64 only on platforms with AVX-512"
    r"|^\[(INFO|WARNING) \d\d-\d\d-\d\d [\d:.]+ UTC [\w.]+:\d+\] ")


# What libjpeg and libpng write to stderr about a damaged file, when a decode is only a check
# (components/image_example_gen.decodes): the caller names the file itself.
IMAGE_DECODE_NOISE = re.compile(
    r"Improper call to JPEG library|Premature end of JPEG file|Corrupt JPEG data|Invalid JPEG file|libpng")


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


def _restore_stderr(saved: int) -> None:
    """Put back the stderr descriptor ``saved`` (an ``os.dup(2)``) and close the copy."""
    sys.stderr.flush()
    os.dup2(saved, 2)
    os.close(saved)


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
        _restore_stderr(saved)


# The filter of ``stderr_noise_to_file``: a child process (no site, no third-party code) that
# reads the lines written to stderr and appends the noise to the file, the rest to its own
# stderr (the console) as each comes. It ignores Ctrl-C and ends when every writer has closed
# its end, so nothing written before then is lost.
_NOISE_FILTER = """
import re, signal, sys
signal.signal(signal.SIGINT, signal.SIG_IGN)
noise, console = re.compile(sys.argv[1]), sys.stderr.buffer
with open(sys.argv[2], "ab") as log:
    for line in sys.stdin.buffer:
        out = log if noise.search(line.decode("utf-8", "replace")) else console
        out.write(line)
        out.flush()
"""


@contextlib.contextmanager
def stderr_noise_to_file(noise: "re.Pattern[str]", path: str) -> Iterator[None]:
    """stderr (the file descriptor) through a filter during the block: each line ``noise``
    matches is appended to ``path``, every other line reaches the console as it is written
    (errors, and anything not known to be noise, still show, in time). For a long block (a
    pipeline run), where ``stderr_filtered``'s "after the block" would be too late. The filter
    is a child process, not a thread: a library that writes a pipe-full of lines while holding
    the GIL would wait forever on a thread that needs the GIL to read them. Child processes
    started in the block (Beam's workers) write through the filter too."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        flt = subprocess.Popen([sys.executable, "-I", "-S", "-c", _NOISE_FILTER, noise.pattern, path],
                               stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=saved)
    except OSError:  # no filter to start: stderr as it is
        flt = None
    if flt is None or flt.stdin is None:  # stdin: a pipe, as asked
        os.close(saved)
        yield
        return
    os.dup2(flt.stdin.fileno(), 2)
    try:
        yield
    finally:
        _restore_stderr(saved)
        flt.stdin.close()
        try:
            flt.wait(timeout=10)
        except subprocess.TimeoutExpired:  # a child of the block still holds stderr: it ends with that
            pass
