"""Strategy choice from config and TF_CONFIG (in-process; the multi-device runs are in
test_trainer_run.py, in fresh processes)."""
import json

import pytest
import tensorflow as tf

from tfxline.trainer import strategy as s


def test_auto_on_cpu_is_the_default_strategy():
    strategy = s.create_strategy("auto", env={})
    assert strategy is tf.distribute.get_strategy()
    assert s.strategy_kind(strategy) == "DefaultStrategy"


@pytest.mark.parametrize("name, env, message", [
    ("parameter_server", {}, "needs a cluster with 'ps' and 'worker'"),
    ("tpu", {}, "needs a TPU"),
    ("auto", {"TF_CONFIG": "{not json"}, "TF_CONFIG is not valid JSON"),
])
def test_strategies_that_cannot_run_here_say_what_is_missing(name, env, message):
    with pytest.raises(s.StrategyError, match=message):
        s.create_strategy(name, env=env)


def test_chief_detection():
    cluster = {"worker": ["a:1", "b:2"]}
    assert s.is_chief({})
    assert s.is_chief({"cluster": cluster, "task": {"type": "worker", "index": 0}})
    assert not s.is_chief({"cluster": cluster, "task": {"type": "worker", "index": 1}})
    with_chief = {"cluster": dict(cluster, chief=["c:3"]), "task": {"type": "worker", "index": 0}}
    assert not s.is_chief(with_chief)
    assert s.is_chief({"cluster": with_chief["cluster"], "task": {"type": "chief", "index": 0}})
    assert s.cluster_size(json.loads(json.dumps(with_chief))) == 3


@pytest.mark.parametrize("capability, policy", [
    ((9, 0), "float32"), ((8, 0), "float32"), ((7, 5), "mixed_float16"), ((7, 0), "mixed_float16"),
    ((6, 1), "float32"), (None, "float32")])
def test_auto_precision_per_gpu_class(capability, policy):
    """TF32 from Ampere on (float32 measured fastest on an H100); float16 where there is none."""
    from tfxline.trainer.precision import policy_for_gpu

    assert policy_for_gpu(capability) == policy


def test_memory_growth_is_harmless_without_gpus():
    s.enable_memory_growth()
    assert s.create_strategy("auto", env={}) is not None


def test_steps_per_execution_auto_is_fifty_at_most_an_epoch():
    assert s.steps_per_execution(0, steps_per_epoch=47) == 47
    assert s.steps_per_execution(0, steps_per_epoch=500) == 50
    assert s.steps_per_execution(20, steps_per_epoch=47) == 20


@pytest.mark.parametrize("setting, device, xla", [
    ("auto", "gpu", True), ("auto", "cpu", False), ("auto", "tpu", False),
    ("true", "cpu", True), ("false", "gpu", False)])
def test_xla_auto_compiles_on_gpus_only(setting, device, xla):
    """XLA measured 1.8-3.0x faster on an H100, slower on a 2-core CPU."""
    assert s.use_xla(setting, device) is xla
