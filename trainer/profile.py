"""The training step under TensorFlow's profiler (``runtime.profile_steps``; also
bench/step_profile.py): a Keras callback that traces a few warm executions of the train
function, and a per-step summary of the trace with a verdict: input-bound, launch-bound (the
GPU idles while the host launches kernels), device-bound, or on a CPU compute- or
overhead-bound. The trace itself (``plugins/profile/<run>/<host>.xplane.pb`` under the log
directory) is what TensorBoard's Profile tab reads; the summary parses it with TensorFlow's own
XSpace proto, no TensorBoard needed.

Host plane (``/host:CPU``):
- ``train_function``: each execution of Keras' compiled train function (steps_per_execution
  steps): the profiled window runs from the first one's start to the last one's end.
- op events ("node:OpType") on TensorFlow's executor threads: the ops run per step that launch
  a kernel (variable reads, identities and constants left out, as in
  trainer.train_step.step_kernel_ops, which counts the graph before Grappler rewrites it) and
  the time the executors were busy. On a GPU these are the kernels' host-side launches.
- ``IteratorGetNextOp::DoCompute`` and ops of a ``*GetNext*`` type: the time the step waited
  for its next batch (with a prefetching input pipeline that keeps up, close to nothing).
Device planes (``/device:GPU:N``, only where CUPTI is loaded; the layout of XLA's
cupti_collector.cc): kernels and copies per step on the stream lines, and the fraction of the
window the device was busy (the union of their intervals).
"""
from __future__ import annotations

import collections
import functools
import logging
import os
import re
from typing import Dict, Iterable, List, Optional, Tuple

OP_EVENT = re.compile(r"^[^:]+:([A-Za-z0-9_]+)$")  # "dense/MatMul:MatMul" -> MatMul
INPUT_WAIT = "IteratorGetNextOp::DoCompute"
STEP_EVENT = "train_function"
# Steps left out before the profile starts (the first execution traces and compiles the step;
# the input pipeline fills its buffers).
WARMUP_STEPS = 10
# Thresholds of the verdict (fractions of the profiled window).
INPUT_BOUND = 0.25
DEVICE_BOUND = 0.7


@functools.lru_cache(maxsize=None)
def profile_callback_class():
    """The Keras callback (defined on first use: Keras is chosen at the entry point).

    ``ProfileSteps(log_dir, executions, executions_per_epoch, warmup)`` starts the profiler
    before execution number ``warmup`` of the train function (counted over the whole fit: the
    first one traces and compiles the step) and stops it after ``executions`` executions, or
    after the last execution of that epoch (so validation is never in the window), or when
    training ends. ``profiled`` and ``steps``: the executions and training steps traced (the
    last execution of an epoch may run fewer than steps_per_execution steps)."""
    import tensorflow as tf

    from tfxline.trainer.keras_compat import keras

    class ProfileSteps(keras().callbacks.Callback):
        def __init__(self, log_dir: str, executions: int, executions_per_epoch: int, warmup: int = 1):
            super().__init__()
            self.log_dir, self.executions, self.warmup = log_dir, executions, warmup
            self.per_epoch = max(1, executions_per_epoch)
            self.calls, self.profiled, self.steps, self.running = 0, 0, 0, False
            self._first = 0

        def on_train_batch_begin(self, batch, logs=None):
            self._first = batch
            if not self.running and not self.profiled and self.calls >= self.warmup:
                tf.profiler.experimental.start(self.log_dir)
                self.running = True

        def on_train_batch_end(self, batch, logs=None):
            # Keras passes an execution's first step to begin and its last to end.
            self.calls += 1
            if self.running:
                self.profiled += 1
                self.steps += batch - self._first + 1
                if self.profiled >= self.executions or self.calls % self.per_epoch == 0:
                    self._stop()

        def on_train_end(self, logs=None):
            self._stop()

        def _stop(self):
            if self.running:
                tf.profiler.experimental.stop()
                self.running = False

    return ProfileSteps


def summarize_run(profiler, log_dir: str, device: str) -> Optional[Dict]:
    """The Trainer's profile (``runtime.profile_steps``) once the fit is over: the summary, or
    None with a warning saying why nothing was traced. A trace that cannot be read is a warning
    too: the profile is a diagnosis, the training it describes succeeded."""
    import tensorflow as tf
    from google.protobuf.message import DecodeError

    if not profiler.profiled:
        logging.warning("runtime.profile_steps: nothing was traced: the profile starts after %d "
                        "executions of the train function and the training ran %d",
                        profiler.warmup, profiler.calls)
        return None
    try:
        summary = summarize(load(find_trace(log_dir)), gpu=device == "gpu", steps=profiler.steps)
    except (OSError, ValueError, DecodeError, tf.errors.OpError) as e:
        logging.warning("runtime.profile_steps: the trace under %s could not be summarised: %s", log_dir, e)
        return None
    logging.info("training step profile (TensorBoard's Profile tab: tensorboard --logdir %s):\n%s",
                 log_dir, format_summary(summary))
    return summary


def find_trace(log_dir: str) -> str:
    """The newest trace under ``log_dir`` (local or a cloud path: tf.io.gfile)."""
    import tensorflow as tf

    runs = sorted(tf.io.gfile.glob(os.path.join(log_dir, "plugins", "profile", "*")))
    paths = tf.io.gfile.glob(os.path.join(runs[-1], "*.xplane.pb")) if runs else []
    if not paths:
        raise FileNotFoundError(f"no .xplane.pb under {log_dir}/plugins/profile: was the profiler started?")
    return sorted(paths)[-1]


def load(path: str):
    import tensorflow as tf
    from tensorflow.tsl.profiler.protobuf import xplane_pb2

    space = xplane_pb2.XSpace()  # pyright: ignore[reportAttributeAccessIssue] - protoc's class, not in TF's stubs
    with tf.io.gfile.GFile(path, "rb") as f:
        space.ParseFromString(f.read())
    return space


def _events(plane, line) -> Iterable[Tuple[str, int, int]]:
    """(name, start ps, end ps) of a line's events, on the trace's absolute clock."""
    base = line.timestamp_ns * 1000
    for e in line.events:
        name = plane.event_metadata[e.metadata_id].name
        start = base + e.offset_ps
        yield name, start, start + e.duration_ps


def union_ps(intervals: List[Tuple[int, int]], lo: int, hi: int) -> int:
    """Length of the union of [start, end) intervals, clipped to [lo, hi)."""
    total, end = 0, lo
    for s, e in sorted((max(s, lo), min(e, hi)) for s, e in intervals):
        if e <= s or e <= end:
            continue
        total += e - max(s, end)
        end = e
    return total


def _window(host) -> Optional[Tuple[int, int, int]]:
    """(start, end, executions) from the train function's events."""
    spans = [(s, e) for line in host.lines for name, s, e in _events(host, line) if name == STEP_EVENT]
    if not spans:
        return None
    return min(s for s, _ in spans), max(e for _, e in spans), len(spans)


def summarize(space, steps_per_execution: int = 1, gpu: bool = False, steps: Optional[int] = None,
              top: int = 8) -> Dict:
    """Per-step figures of the profiled window (see the module's docstring). ``steps``: the
    training steps traced (ProfileSteps.steps), else executions x ``steps_per_execution``;
    ``gpu``: the profiled step ran on a GPU."""
    from tfxline.trainer.train_step import NO_KERNEL_OPS  # imports TensorFlow: not at module import

    host = next((p for p in space.planes if p.name == "/host:CPU"), None)
    if host is None:
        raise ValueError("the trace has no /host:CPU plane")
    window = _window(host)
    if window is None:
        raise ValueError(f"the trace has no '{STEP_EVENT}' events: profile the steps of a Keras fit")
    lo, hi, executions = window
    steps = steps or executions * steps_per_execution
    wall = hi - lo
    ops, op_busy, waits = collections.Counter(), [], []
    op_time = collections.Counter()
    for line in host.lines:
        input_line = line.name.startswith("tf_data")
        for name, s, e in _events(host, line):
            if s < lo or s >= hi:
                continue
            m = None if input_line or line.name == "python" else OP_EVENT.match(name)
            if name == INPUT_WAIT or (m and "GetNext" in m.group(1)):
                waits.append((s, e))  # the iterator's op (e.g. a multi-device shard's) waits too
                continue
            if m and m.group(1) not in NO_KERNEL_OPS:
                ops[m.group(1)] += 1
                op_time[m.group(1)] += e - s
                op_busy.append((s, e))
    out = {
        "steps": steps,
        "ms_per_step": round(wall / steps / 1e9, 3),
        "host_ops_per_step": round(sum(ops.values()) / steps, 1),
        "host_op_busy_fraction": round(union_ps(op_busy, lo, hi) / wall, 3),
        "input_wait_fraction": round(union_ps(waits, lo, hi) / wall, 3),
        # [op type, runs per step, microseconds per step]
        "top_host_ops": [[t, round(ops[t] / steps, 1), round(ps / steps / 1e6, 1)]
                         for t, ps in op_time.most_common(top)],
        "devices": [],
    }
    for plane in space.planes:
        if plane.name.startswith("/device:GPU"):
            out["devices"].append(_device(plane, lo, hi, steps, top))
    out["verdict"] = verdict(out, gpu)
    return out


def _device(plane, lo: int, hi: int, steps: int, top: int) -> Dict:
    """A GPU plane as CUPTI's collector writes it: one line per stream ("Stream #7(Kernel,
    MemcpyH2D)"), besides "CUPTI overhead" and counter lines, which are not the device's work;
    allocations and frees ("MemoryAlloc") are not either."""
    kernels, copies, busy = collections.Counter(), collections.Counter(), []
    kernel_time = collections.Counter()
    for line in plane.lines:
        if not line.name.startswith("Stream"):
            continue
        for name, s, e in _events(plane, line):
            if e <= lo or s >= hi or name.startswith("Memory"):
                continue
            busy.append((s, e))
            if name.startswith(("Memcpy", "Memset")):
                copies[name.split(" ")[0]] += 1
            else:
                kernels[name] += 1
                kernel_time[name] += e - s
    return {
        "device": plane.name,
        "kernels_per_step": round(sum(kernels.values()) / steps, 1),
        "copies_per_step": {k: round(v / steps, 1) for k, v in sorted(copies.items())},
        "busy_fraction": round(union_ps(busy, lo, hi) / (hi - lo), 3),
        # [kernel, launches per step, microseconds per step]
        "top_kernels": [[k[:80], round(kernels[k] / steps, 1), round(t / steps / 1e6, 1)]
                        for k, t in kernel_time.most_common(top)],
    }


def verdict(s: Dict, gpu: bool = False) -> str:
    """One line: what bounds the step. ``gpu``: the step ran on a GPU (a GPU trace without a
    device plane means CUPTI was not loaded)."""
    wait, busy, ops = s["input_wait_fraction"], s["host_op_busy_fraction"], s["host_ops_per_step"]
    if wait >= INPUT_BOUND:
        return (f"input-bound: the step waited for the next batch {wait:.0%} of the time "
                "(the input pipeline does not keep up)")
    if not s["devices"]:
        if gpu:
            return ("no device trace: CUPTI was not loaded (libcupti.so.12 on LD_LIBRARY_PATH); "
                    f"the host ran {ops:g} ops per step")
        if not ops:
            return ("no ops traced one by one on this host: an XLA-compiled step (one cluster), or a step "
                    "that runs on other machines (parameter servers)")
        if busy >= DEVICE_BOUND:
            return f"compute-bound on the CPU: executors busy {busy:.0%} of the time, {ops:g} ops per step"
        return (f"overhead-bound on the CPU: executors busy only {busy:.0%} of the time, {ops:g} ops per "
                "step; the rest is the per-call overhead of the train function (steps_per_execution)")
    device_busy = min(d["busy_fraction"] for d in s["devices"])
    kernels = max(d["kernels_per_step"] for d in s["devices"])
    if device_busy >= DEVICE_BOUND:
        return f"device-bound: the GPU was busy {device_busy:.0%} of the time ({kernels:g} kernels per step)"
    return (f"launch-bound: the GPU was busy only {device_busy:.0%} of the time while the host launched "
            f"{kernels:g} kernels per step (fewer, larger kernels or steps_per_execution help)")


def format_summary(s: Dict) -> str:
    lines = [f"{s['steps']} steps, {s['ms_per_step']} ms/step; {s['verdict']}",
             f"host: {s['host_ops_per_step']:g} ops/step, executors busy {s['host_op_busy_fraction']:.0%}, "
             f"waiting for input {s['input_wait_fraction']:.0%}",
             "  top host ops (type, per step, us per step): "
             + ", ".join(f"{t} {n:g} {us:g}" for t, n, us in s["top_host_ops"])]
    for d in s["devices"]:
        copies = ", ".join(f"{k} {v:g}" for k, v in d["copies_per_step"].items()) or "none"
        lines += [f"{d['device']}: busy {d['busy_fraction']:.0%}, {d['kernels_per_step']:g} kernels/step, "
                  f"copies/step: {copies}"]
        lines += [f"  {us:>8g} us {n:>5g}x  {k}" for k, n, us in d["top_kernels"]]
    return "\n".join(lines)
