"""Resumable training: a killed Trainer, started again on the same inputs, continues the
same training and ends with the model the uninterrupted run gives.

Everything that decides the final model is saved at the end of every epoch, and restored:

* the model's weights and the optimizer (its step count drives the learning-rate schedule);
* the dropout layers' random generators (the masks continue, not restart);
* early stopping's counters, best value, best epoch and best weights;
* the history so far (the run's record covers every epoch, not only those after the restart).

The input position is not saved: the train dataset is seeded and deterministic, so the
resumed run skips the batches the finished epochs consumed (``skip_batches``).

Keras' own ``BackupAndRestore`` keeps only the weights, the optimizer and the epoch, and
refuses OneDeviceStrategy (the usual single-GPU strategy); this works with every strategy
except ParameterServerStrategy.

Files (under the backup directory; the run removes it when the fit finishes):
``ckpt-<epoch>.*`` (tf.train.Checkpoint), ``best-<epoch>.npz`` (early stopping's best
weights, when they changed), ``state.json`` (written last, atomically: the epoch, the files
that belong to it, early stopping's state, the history). A kill at any moment leaves the
previous complete state in place. In multi-worker training every worker saves (distributed
variables are read collectively) but only the chief writes here; all restore from it.
"""
from __future__ import annotations

import io
import json
import logging
import os
import tempfile
from typing import Any, Dict, List, Optional

import numpy as np
import tensorflow as tf

from tfxline.trainer import strategy as strategy_lib
from tfxline.trainer.keras_compat import keras

STATE_FILE = "state.json"
# What the checkpoint holds, by the code that wrote it: raised when its layout changes (2: the
# fused Adam/AdamW of trainer/optimizer.py, whose slots Keras' AdamW checkpoints do not match).
STATE_VERSION = 2
EARLY_STOPPING_FIELDS = ("wait", "best", "best_epoch", "stopped_epoch")


def read_state(directory: str, global_batch: Optional[int] = None) -> Dict[str, Any]:
    """The last complete state saved in ``directory`` ({} when there is none). A state saved
    by a training with another global batch (restarted on another device, where
    ``training.batch_scaling: auto`` picks another batch), or by another version of this code
    (``STATE_VERSION``), is not this training's: it is removed, with a warning, and the
    training starts over."""
    path = os.path.join(directory, STATE_FILE)
    if not tf.io.gfile.exists(path):
        return {}
    with tf.io.gfile.GFile(path) as f:
        state = json.load(f)
    saved = state.get("global_batch")
    if state.get("version") != STATE_VERSION:
        why = f"was saved by another version of the trainer (state version {state.get('version', 1)}, " \
              f"this one {STATE_VERSION})"
    elif global_batch is not None and saved is not None and saved != global_batch:
        why = f"used a global batch of {saved}, this one {global_batch} (another device?)"
    else:
        return state
    logging.warning("the saved training in %s %s: starting over", directory, why)
    tf.io.gfile.rmtree(directory)
    return {}


def skip_batches(state: Dict[str, Any], steps_per_epoch: int) -> int:
    """Train batches the finished epochs consumed (the resumed input starts after them)."""
    return int(state.get("epoch", 0)) * steps_per_epoch


def dropout_generators(model) -> Dict[str, tf.random.Generator]:
    """The random generators of the model's dropout layers (Keras saves them only into a
    SavedModel, not into checkpoints)."""
    out = {}
    for layer in model.submodules if hasattr(model, "submodules") else []:
        generator = getattr(getattr(layer, "_random_generator", None), "_generator", None)
        if isinstance(generator, tf.random.Generator):
            out[f"rng_{layer.name}"] = generator
    return out


def resumable_early_stopping_class():
    k = keras()

    class ResumableEarlyStopping(k.callbacks.EarlyStopping):
        """EarlyStopping whose state survives a restart: ``restored`` is applied after
        Keras resets the callback at the start of the fit."""

        restored: Optional[Dict[str, Any]] = None

        def on_train_begin(self, logs=None):
            super().on_train_begin(logs)
            if self.restored:
                for field in EARLY_STOPPING_FIELDS:
                    setattr(self, field, self.restored[field])
                self.best_weights = self.restored.get("best_weights")

        def state(self) -> Dict[str, Any]:
            return {f: float(getattr(self, f)) if f == "best" else int(getattr(self, f))
                    for f in EARLY_STOPPING_FIELDS}

    return ResumableEarlyStopping


class TrainingCheckpoint:
    """Saves and restores one training's state in ``directory`` (see the module doc)."""

    def __init__(self, directory: str, model, optimizer, early_stopping=None, global_batch: int = 0):
        self.directory = directory
        self.global_batch = global_batch
        self.model = model
        self.early_stopping = early_stopping
        self.checkpoint = tf.train.Checkpoint(model=model, optimizer=optimizer, **dropout_generators(model))
        self.history: Dict[str, List[float]] = {}
        self._best_file = ""
        self._best_epoch = None

    def restore(self, state: Dict[str, Any]) -> int:
        """Restore ``state`` (from ``read_state``); returns the epoch to continue from."""
        if not state:
            return 0
        self.checkpoint.read(os.path.join(self.directory, state["checkpoint"])).expect_partial()
        self.history = {k: list(v) for k, v in state.get("history", {}).items()}
        self._best_file = state.get("best_weights", "")
        if self.early_stopping is not None and state.get("early_stopping"):
            restored = dict(state["early_stopping"])
            if self._best_file:
                with tf.io.gfile.GFile(os.path.join(self.directory, self._best_file), "rb") as f:
                    arrays = np.load(io.BytesIO(f.read()))
                restored["best_weights"] = [arrays[f"arr_{i}"] for i in range(len(arrays.files))]
            self._best_epoch = restored["best_epoch"]
            self.early_stopping.restored = restored
        logging.info("resuming the training after epoch %d from %s", state["epoch"], self.directory)
        return int(state["epoch"])

    def save(self, epoch: int, logs: Optional[Dict[str, Any]], stopped: bool) -> None:
        """After epoch ``epoch`` (0-based) finished: everything, then the state file."""
        for key, value in (logs or {}).items():
            self.history.setdefault(key, []).append(float(value))
        chief = strategy_lib.is_chief()
        target = self.directory if chief else tempfile.mkdtemp(prefix="tfxline-worker-backup-")
        tf.io.gfile.makedirs(target)
        prefix = f"ckpt-{epoch + 1}"
        self.checkpoint.write(os.path.join(target, prefix))
        state = {"version": STATE_VERSION, "epoch": epoch + 1, "checkpoint": prefix, "stopped": stopped,
                 "global_batch": self.global_batch, "history": self.history, "best_weights": self._best_file}
        es = self.early_stopping
        if es is not None:
            state["early_stopping"] = es.state()
            if es.best_weights is not None and es.best_epoch != self._best_epoch:
                self._best_file, self._best_epoch = f"best-{es.best_epoch + 1}.npz", es.best_epoch
                buffer = io.BytesIO()  # (zip needs a seekable file; GFile on GCS is not)
                np.savez(buffer, *es.best_weights)
                with tf.io.gfile.GFile(os.path.join(target, self._best_file), "wb") as f:
                    f.write(buffer.getvalue())
            state["best_weights"] = self._best_file if es.best_weights is not None else ""
        if not chief:
            tf.io.gfile.rmtree(target)
            return
        tmp = os.path.join(target, STATE_FILE + ".tmp")
        with tf.io.gfile.GFile(tmp, "w") as f:
            json.dump(state, f)
        tf.io.gfile.rename(tmp, os.path.join(target, STATE_FILE), overwrite=True)
        self._prune(keep={prefix, state["best_weights"]})

    def _prune(self, keep) -> None:
        for name in tf.io.gfile.listdir(self.directory):
            stem = name.split(".")[0]
            if stem.startswith(("ckpt-", "best-")) and stem not in {k.split(".")[0] for k in keep if k}:
                if name != "checkpoint":
                    tf.io.gfile.remove(os.path.join(self.directory, name))

    def callback(self):
        """The Keras callback that saves after every epoch (put it after early stopping)."""
        ckpt = self

        class SaveTrainingState(keras().callbacks.Callback):
            def on_epoch_end(self, epoch, logs=None):
                ckpt.save(epoch, logs, stopped=bool(self.model.stop_training))

        return SaveTrainingState()
