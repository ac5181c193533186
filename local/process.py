"""What a local run does to its own process while the components run in it: one console line
per component event (``ProgressHandler``), the libraries' logging into the run's log file
(``logging_to``), the memory a finished component freed handed back (``MemoryReleaser``,
``frozen_heap``), Ctrl-C and SIGTERM recorded as the run's end whatever a library turns them
into (``signals_stop_run``, ``interruption_of``). (Beam's notebook scripts off in a Jupyter
kernel: patches/interactive_beam.py.)
"""
from __future__ import annotations

import contextlib
import ctypes
import gc
import logging
import os
import re
import signal
import time
from typing import Iterator, List, Optional, TextIO

from tfxline.serving.native_stderr import TF_RUNTIME_NOISE, stderr_noise_to_file
from tfxline.trainer.tuning_settings import PROGRESS as TUNING_PROGRESS

_RUNNING = re.compile(r"Component (\S+) is running\.")
_FINISHED = re.compile(r"Component (\S+) is finished\.")
_CACHED = re.compile(r"A cached execution \d+ is used\.")
# TFX's launcher, when an executor returned and before its outputs are published
# (tfx/orchestration/portable/launcher.py:626 at v1.16.0), and when the next component starts
_SUCCEEDED = re.compile(r"Execution \d+ succeeded\.")


class ProgressHandler(logging.Handler):
    """Turns LocalDagRunner's log lines into one console line per component event."""

    def __init__(self, stream: TextIO):
        super().__init__(logging.INFO)
        self.stream = stream
        self.started: dict = {}
        self.cached = False

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = record.getMessage()
        except Exception:  # a malformed third-party log record must not break the run
            return
        if _SUCCEEDED.match(message) or _RUNNING.match(message):
            raise_stop_a_library_swallowed()
        if m := _RUNNING.match(message):
            node, self.cached = m.group(1), False
            self.started[node] = time.monotonic()
            self._print(f"[ start ] {node}")
        elif _CACHED.match(message):
            self.cached = True
        elif m := _FINISHED.match(message):
            node = m.group(1)
            seconds = time.monotonic() - self.started.pop(node, time.monotonic())
            tag = "cached" if self.cached else " done "
            self._print(f"[{tag} ] {node} ({seconds:.1f}s)")
        elif message.startswith(TUNING_PROGRESS):  # the Tuner's trials, and its summary line
            self._print(f"          {message}")

    def failed(self, tag: str = "failed ") -> List[str]:
        """The run raised: the components started and not finished failed, or were stopped (tag
        "stopped": a Ctrl-C or SIGTERM); returns them (local/runner.py calls it; LocalDagRunner logs nothing
        of its own when a component raises)."""
        nodes = list(self.started)
        for node, started in self.started.items():
            self._print(f"[{tag}] {node} ({time.monotonic() - started:.1f}s)")
        self.started.clear()
        return nodes

    def _print(self, line: str) -> None:
        print(line, file=self.stream, flush=True)


class MemoryReleaser(logging.Handler):
    """When a component finishes, hands the memory it freed back to the operating system
    (``gc.collect`` and glibc's ``malloc_trim``): every component runs in this one process, and
    glibc keeps freed heap, so a large day's Beam components left the process 1-2 GB bigger for
    the next one (bench/scale.py, docs/scale.md)."""

    def __init__(self):
        super().__init__(logging.INFO)
        try:
            self._trim = ctypes.CDLL("libc.so.6").malloc_trim
        except (OSError, AttributeError):  # not glibc: collecting is all there is
            self._trim = None

    def emit(self, record: logging.LogRecord) -> None:
        try:
            finished = _FINISHED.match(record.getMessage())
        except Exception:
            return
        if finished:
            gc.collect()
            if self._trim:
                self._trim(0)


class Stopped(KeyboardInterrupt):
    """SIGTERM (``kill``, ``timeout``, a scheduler stopping the job) raised as a Ctrl-C is: a
    command says so in one line, a run is recorded as interrupted instead of dying unrecorded."""

    signal_name, signum = "SIGTERM", signal.SIGTERM


def interruption_name(e: BaseException) -> str:
    """How the user stopped the run: 'Ctrl-C' or the signal's name."""
    return getattr(e, "signal_name", "Ctrl-C")


def interruption_exit_code(e: BaseException) -> int:
    """The exit code a shell gives a command that signal ended: 128 + its number (130 for Ctrl-C)."""
    return 128 + int(getattr(e, "signum", signal.SIGINT))


_SEEN: List[List[KeyboardInterrupt]] = []  # the lists of the signals_stop_run contexts active now


def _record(e: KeyboardInterrupt) -> KeyboardInterrupt:
    for seen in _SEEN:
        if not any(x is e for x in seen):  # nested contexts' handlers: each passes it on to the next
            seen.append(e)
    return e


@contextlib.contextmanager
def signals_stop_run() -> Iterator[List[KeyboardInterrupt]]:
    """While inside, SIGTERM raises :class:`Stopped` in the main thread as SIGINT raises
    KeyboardInterrupt, and each one raised is also put in the list this yields. A library that
    catches the exception and raises its own cannot hide that the user stopped the command: Beam
    turns a Ctrl-C in a bundle into ``RuntimeError: KeyboardInterrupt [while running
    'Analyze/...']`` (``interruption_of`` finds it). SIGINT keeps the process's handler, recorded
    on its way through: Python's, or what a notebook kernel set; one the process ignores (a shell's
    background job) stays ignored. Outside the main thread, where Python allows no handler,
    nothing changes and the list stays empty."""
    seen: List[KeyboardInterrupt] = []

    def stop(signum, frame):
        raise _record(Stopped())

    def on_sigint(signum, frame):
        try:
            if callable(previous_int):  # it is: on_sigint is installed only then
                previous_int(signum, frame)
        except KeyboardInterrupt as e:
            _record(e)
            raise

    try:
        previous_term = signal.signal(signal.SIGTERM, stop)
    except ValueError:  # not the main thread
        yield seen
        return
    previous_int = signal.getsignal(signal.SIGINT)
    if callable(previous_int):
        signal.signal(signal.SIGINT, on_sigint)
    _SEEN.append(seen)
    try:
        yield seen
    finally:
        _SEEN.remove(seen)
        signal.signal(signal.SIGTERM, previous_term)
        if callable(previous_int):
            signal.signal(signal.SIGINT, previous_int)


def raise_stop_a_library_swallowed() -> None:
    """Raises again a Ctrl-C or SIGTERM that ``signals_stop_run`` saw and a library swallowed:
    TensorFlow turned one that landed in an import into ``SystemError: <built-in function
    __import__> returned a result with an exception set``, which a fallback caught, and the run
    went on to exit 0 (CI, 2026-11-27). ProgressHandler calls it at a component's boundaries (its
    executor returned, before its outputs are published; the next component starts), where a
    stop still on its way up would already have ended the executor. Raised once per signal."""
    for seen in _SEEN:
        if seen and not getattr(seen[0], "raised_again", False):
            seen[0].raised_again = True  # pyright: ignore[reportAttributeAccessIssue] - a mark on the exception
            raise _record(type(seen[0])())


def interruption_of(error: BaseException, seen: List[KeyboardInterrupt]) -> Optional[KeyboardInterrupt]:
    """The Ctrl-C or SIGTERM that ended what raised ``error``: ``error`` itself, one it was raised
    from or during, or else the first signal ``signals_stop_run`` saw meanwhile (``seen``); None
    where none did."""
    from tfxline.local.monitoring import causes

    for e in causes(error):
        if isinstance(e, KeyboardInterrupt):
            return e
    return seen[0] if seen else None


# Python's oldest-generation threshold while the heap is frozen (its default: 10). CPython runs
# a full collection after that many young-generation ones, if the objects promoted since the
# last exceed a quarter of those it counts as long-lived; frozen objects are not counted, so the
# quarter is of almost nothing and nearly every chance became a full collection: 24 in a small
# taxi run (3.1 s of its 5.9 s in the collector on a busy 2-core machine), 2 at 100 (0.5 s).
# MemoryReleaser still collects fully after every component.
FROZEN_FULL_THRESHOLD = 100


@contextlib.contextmanager
def frozen_heap() -> Iterator[None]:
    """While the components run, the objects alive before them (TensorFlow's, TFX's and Beam's
    modules: millions) are out of the garbage collector's sight (``gc.freeze``): a collection,
    Python's own or MemoryReleaser's, then walks only what the components made. A full one
    took about 0.5 s with them, 5 s of a run's MemoryReleaser calls. Full collections of
    Python's own are fewer meanwhile (``FROZEN_FULL_THRESHOLD``)."""
    gc.collect()
    gc.freeze()
    thresholds = gc.get_threshold()
    gc.set_threshold(thresholds[0], thresholds[1], max(thresholds[2], FROZEN_FULL_THRESHOLD))
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
        gc.unfreeze()


class logging_to:
    """Route Python/absl logging to a file and component progress to the console; TensorFlow's
    known runtime noise on stderr (``TF_RUNTIME_NOISE``: native lines no log level stops) to
    the file too, any other stderr line to the console as before."""

    def __init__(self, log_path: str, stream: TextIO):
        self.log_path, self.stream = log_path, stream

    def __enter__(self) -> ProgressHandler:
        from absl import logging as absl_logging

        os.makedirs(os.path.dirname(self.log_path), exist_ok=True)
        self.file_handler = logging.FileHandler(self.log_path)
        self.file_handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        self.progress = ProgressHandler(self.stream)
        root = logging.getLogger()
        # Libraries call logging.basicConfig() at import, and TensorFlow gives its own logger a
        # console handler when it is imported before logging is configured ("INFO:tensorflow:...");
        # keep those quiet for the run so the console shows progress and the file has the rest.
        self.muted = [(logger, h) for logger in (root, logging.getLogger("tensorflow")) for h in logger.handlers
                      if isinstance(h, logging.StreamHandler) and not isinstance(h, logging.FileHandler)]
        for logger, h in self.muted:
            logger.removeHandler(h)
        # absl's verbosity as its flag and its logger's own level (NOTSET: the root's) had them
        self.previous_level = root.level
        self.previous_verbosity = absl_logging.get_verbosity(), logging.getLogger("absl").level
        # Python's warnings already logged (a notebook's, cli/notebook.py) stay so after the run
        self.captured_warnings = getattr(logging, "_warnings_showwarning", None) is not None
        root.setLevel(logging.INFO)
        absl_logging.set_verbosity(absl_logging.INFO)
        root.addHandler(self.file_handler)
        logging.getLogger("absl").addHandler(self.progress)
        self.releaser = MemoryReleaser()
        logging.getLogger("absl").addHandler(self.releaser)
        logging.captureWarnings(True)  # library warnings go to the log file, not the console
        self.native = stderr_noise_to_file(TF_RUNTIME_NOISE, self.log_path)
        self.native.__enter__()
        return self.progress

    def __exit__(self, *exc) -> None:
        from absl import logging as absl_logging

        self.native.__exit__(*exc)
        logging.captureWarnings(self.captured_warnings)
        absl_logging.set_verbosity(self.previous_verbosity[0])
        logging.getLogger("absl").setLevel(self.previous_verbosity[1])
        logging.getLogger("absl").removeHandler(self.progress)
        logging.getLogger("absl").removeHandler(self.releaser)
        root = logging.getLogger()
        root.removeHandler(self.file_handler)
        root.setLevel(self.previous_level)
        for logger, h in self.muted:
            logger.addHandler(h)
        self.file_handler.close()

