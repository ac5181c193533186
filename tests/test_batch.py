"""training.batch_scaling: which batch each device and data size gets, and resume across a change."""
import json
import math

import pytest

from tfxline.trainer import batch
from tfxline.trainer.batch import MAX_PER_REPLICA, MIN_STEPS_PER_EPOCH


def test_small_data_keeps_the_written_batch_on_every_device():
    """The taxi data (12k train rows, 47 steps per epoch at 256): the same model everywhere."""
    for device in ("cpu", "gpu", "tpu"):
        p = batch.plan(256, 0.003, "auto", device, 12_002)
        assert (p.per_replica, p.learning_rate, p.factor) == (256, 0.003, 1)


def test_cpu_and_off_keep_the_written_batch_on_large_data():
    assert batch.plan(256, 0.003, "auto", "cpu", 50_000_000).per_replica == 256
    assert batch.plan(256, 0.003, "off", "gpu", 50_000_000).per_replica == 256
    assert batch.plan(256, 0.003, "always", "cpu", 50_000_000).per_replica == MAX_PER_REPLICA


def test_a_step_budget_does_not_grow_the_batch():
    p = batch.plan(256, 0.003, "auto", "gpu", None)
    assert p.per_replica == 256 and "step budget" in p.reason


@pytest.mark.parametrize("rows, per_replica", [
    (2 * 256 * MIN_STEPS_PER_EPOCH - 1, 256),       # one row short of the first doubling
    (2 * 256 * MIN_STEPS_PER_EPOCH, 512),
    (8 * 256 * MIN_STEPS_PER_EPOCH, 2048),
    (10**9, MAX_PER_REPLICA),                      # capped
])
def test_large_data_on_an_accelerator_grows_the_batch_keeping_the_step_floor(rows, per_replica):
    p = batch.plan(256, 0.003, "auto", "gpu", rows)
    assert p.per_replica == per_replica and p.factor == per_replica // 256
    assert math.isclose(p.learning_rate, 0.003 * math.sqrt(p.factor))
    assert rows // p.per_replica >= MIN_STEPS_PER_EPOCH


def test_replicas_and_accumulation_count_in_the_steps_per_epoch():
    """Steps per epoch are optimizer steps: rows / (per replica x replicas x micro-batches)."""
    rows = 8 * 256 * MIN_STEPS_PER_EPOCH
    assert batch.plan(256, 0.003, "auto", "gpu", rows, replicas=4).per_replica == 512
    assert batch.plan(256, 0.003, "auto", "gpu", rows, replicas=2, accumulation=2).per_replica == 512
    assert batch.plan(256, 0.003, "auto", "gpu", rows, replicas=8).per_replica == 256


def test_an_unknown_scaling_is_refused():
    with pytest.raises(ValueError, match="batch_scaling 'max'; use one of auto, always, off"):
        batch.plan(256, 0.003, "max", "gpu", 10**9)


def test_a_backup_from_another_global_batch_is_not_resumed(tmp_path):
    """Restarted on another device, auto may pick another batch: the saved epochs belong to
    another training, so they are removed and the training starts over."""
    from tfxline.trainer.resume import STATE_FILE, STATE_VERSION, read_state

    backup = tmp_path / "backup"
    backup.mkdir()
    (backup / STATE_FILE).write_text(json.dumps(
        {"version": STATE_VERSION, "epoch": 2, "checkpoint": "ckpt-2", "global_batch": 4096}))
    assert read_state(str(backup), 4096)["epoch"] == 2
    assert read_state(str(backup))["epoch"] == 2
    assert read_state(str(backup), 256) == {}
    assert not backup.exists()


def test_a_backup_from_another_trainer_version_is_not_resumed(tmp_path, caplog):
    """A checkpoint of the previous optimizer (Keras' AdamW, no version in state.json) would
    restore the weights and silently leave the fused optimizer's slots and step count new."""
    from tfxline.trainer.resume import STATE_FILE, read_state

    backup = tmp_path / "backup"
    backup.mkdir()
    (backup / STATE_FILE).write_text(json.dumps({"epoch": 2, "checkpoint": "ckpt-2", "global_batch": 256}))
    assert read_state(str(backup), 256) == {}
    assert not backup.exists()
    assert "another version of the trainer (state version 1" in caplog.text
