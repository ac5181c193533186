"""tf.distribute strategy from the config's ``runtime.strategy``.

``auto``: MultiWorkerMirroredStrategy when TF_CONFIG describes more than one worker,
else MirroredStrategy on more than one GPU, OneDeviceStrategy on one GPU, and the default
strategy on CPU. OneDeviceStrategy measured 7-57 % faster than no strategy scope on an H100
(its iterator prefetches batches to the GPU; bench/gpu_bench.py), and the Trainer's own
checkpoint (trainer/resume.py) resumes under it. A named strategy that cannot run here raises
``StrategyError`` naming what is missing; nothing silently falls back. Also here: whether the
step is XLA-compiled (``use_xla``) and how many steps run per call.
"""
from __future__ import annotations

import glob
import json
import os
from typing import Mapping, Optional

import tensorflow as tf

from tfxline.trainer.settings import STRATEGIES


class StrategyError(RuntimeError):
    """The requested strategy cannot run in this environment."""


def tf_config(env: Mapping[str, str] = os.environ) -> dict:
    raw = env.get("TF_CONFIG", "")
    if not raw:
        return {}
    try:
        return json.loads(raw)
    except json.JSONDecodeError as e:
        raise StrategyError(f"TF_CONFIG is not valid JSON ({e}); fix the TF_CONFIG variable") from None


def cluster_size(cfg: dict) -> int:
    cluster = cfg.get("cluster", {})
    return len(cluster.get("worker", [])) + len(cluster.get("chief", []))


def is_chief(cfg: Optional[dict] = None) -> bool:
    """Chief = task 'chief', or worker 0 when the cluster has no chief; True when local."""
    cfg = tf_config() if cfg is None else cfg
    task = cfg.get("task", {})
    if not task:
        return True
    if task.get("type") == "chief":
        return True
    has_chief = bool(cfg.get("cluster", {}).get("chief"))
    return task.get("type") == "worker" and task.get("index", 0) == 0 and not has_chief


def enable_memory_growth() -> None:
    """Allocate GPU memory as needed instead of taking the whole card from other processes
    (must run before the GPUs are initialised; a no-op without GPUs)."""
    for gpu in tf.config.list_physical_devices("GPU"):
        try:
            tf.config.experimental.set_memory_growth(gpu, True)
        except RuntimeError:  # already initialised (a second Trainer in the same process)
            pass


def steps_per_execution(configured: int, steps_per_epoch: int) -> int:
    """The configured value, or auto (0): 50 steps per call (at most an epoch). A small
    model's step is dominated by the per-call overhead: measured with bench/gpu_bench.py on
    this project's 2-core CPU, batch 256, 38k -> 60k examples/s; on an H100, 5.7 -> 4.7 ms
    per step (../shared/gpu/README.md)."""
    return configured or max(1, min(50, steps_per_epoch))


def use_xla(jit_compile: str, device: str) -> bool:
    """``runtime.jit_compile``: "true" / "false" as set; "auto" compiles the training step with
    XLA on a GPU and not on a CPU. Measured with bench/gpu_bench.py (taxi model, float32, 50
    steps per call, docs/performance.md "Trainer throughput"): on an H100 XLA took batch 256 from 146k to
    374k examples/s and batch 4096 from 2.4M to 5.6M (OneDeviceStrategy); on that machine's 16
    CPU cores it helped too (161k -> 184k, 581k -> 789k), but on a 2-core CPU it was slower at
    batch 256 (69k -> 56k), so a CPU compiles only when asked. On a TPU, Keras compiles anyway."""
    return jit_compile == "true" or (jit_compile == "auto" and device == "gpu")


def create_strategy(name: str, env: Mapping[str, str] = os.environ) -> tf.distribute.Strategy:
    enable_memory_growth()
    cfg = tf_config(env)
    if name == "auto" and cluster_size(cfg) > 1:
        name = "multi_worker_mirrored"
    if name == "multi_worker_mirrored":
        # Must come before anything initialises the TF runtime (even listing logical
        # devices does): collective ops are configured at start-up.
        return tf.distribute.MultiWorkerMirroredStrategy()
    gpus = tf.config.list_physical_devices("GPU")
    if name == "auto":
        if len(gpus) > 1:
            name = "mirrored"
        elif len(gpus) == 1:
            name = "one_device"
        else:
            name = "default"
    if name == "default":
        return tf.distribute.get_strategy()
    if name == "one_device":
        return tf.distribute.OneDeviceStrategy("/gpu:0" if gpus else "/cpu:0")
    if name == "mirrored":
        if gpus:
            return tf.distribute.MirroredStrategy()
        # No GPU: mirror over the logical CPU devices (tests split the CPU into several).
        cpus = [d.name for d in tf.config.list_logical_devices("CPU")]
        return tf.distribute.MirroredStrategy(devices=cpus)
    if name == "parameter_server":
        cluster = cfg.get("cluster", {})
        if not cluster.get("ps") or not (cluster.get("worker") or cluster.get("chief")):
            raise StrategyError(
                "strategy parameter_server needs a cluster with 'ps' and 'worker' tasks in "
                "TF_CONFIG; none is set here. Use runtime.strategy=auto to train locally")
        resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
        return tf.distribute.experimental.ParameterServerStrategy(resolver)
    if name == "tpu":
        if not env.get("TPU_NAME") and not glob.glob("/dev/accel*"):
            raise StrategyError(
                "strategy tpu needs a TPU: no TPU_NAME is set and no TPU device (/dev/accel*) "
                "is present; run on a TPU VM or set TPU_NAME, or use runtime.strategy=auto")
        try:
            resolver = tf.distribute.cluster_resolver.TPUClusterResolver(
                tpu=env.get("TPU_NAME", ""))
            tf.config.experimental_connect_to_cluster(resolver)
            tf.tpu.experimental.initialize_tpu_system(resolver)
        except (ValueError, RuntimeError, tf.errors.OpError) as e:
            raise StrategyError(
                f"strategy tpu needs a TPU, and none was found ({str(e).splitlines()[0]}); "
                "run on a TPU VM or set TPU_NAME, or use runtime.strategy=auto") from None
        return tf.distribute.TPUStrategy(resolver)
    raise StrategyError(f"unknown strategy {name!r}; use one of {', '.join(STRATEGIES)}")


def device_kind(strategy: tf.distribute.Strategy) -> str:
    """Where the strategy's replicas run: "tpu", "gpu" or "cpu"."""
    if isinstance(strategy, tf.distribute.TPUStrategy):
        return "tpu"
    try:
        devices = strategy.extended.worker_devices
    except (RuntimeError, NotImplementedError, AttributeError):  # the default strategy
        devices = [d.name for d in tf.config.list_logical_devices("GPU")]
    return "gpu" if any(":GPU:" in d.upper() for d in devices) else "cpu"


def strategy_kind(strategy: tf.distribute.Strategy) -> str:
    """The public name (MultiWorkerMirroredStrategy's class is CollectiveAllReduceStrategy)."""
    named = ((tf.distribute.MultiWorkerMirroredStrategy, "MultiWorkerMirroredStrategy"),
             (tf.distribute.MirroredStrategy, "MirroredStrategy"),
             (tf.distribute.OneDeviceStrategy, "OneDeviceStrategy"),
             (tf.distribute.TPUStrategy, "TPUStrategy"),
             (tf.distribute.experimental.ParameterServerStrategy, "ParameterServerStrategy"))
    for cls, name in named:
        if isinstance(strategy, cls):
            return name
    return "DefaultStrategy" if strategy is tf.distribute.get_strategy() else type(strategy).__name__
