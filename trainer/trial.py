"""One trial of the Tuner: this project's model, built and fitted as the Trainer does (trainer/run.py
``build``, trainer/inputs.py, early stopping from trainer/callbacks.py), with a wall deadline; and
the strategy a trial trains under. trainer/tune.py's tuner calls ``fit_trial`` for each trial and
for the config's own values (its baseline)."""
from __future__ import annotations

import dataclasses
import functools
import math
import os
import time
from typing import Any, Dict, List, Optional

import numpy as np
import tensorflow as tf

from tfxline.trainer import callbacks as callbacks_lib
from tfxline.trainer import strategy as strategy_lib
from tfxline.trainer.inputs import input_data, plan_sizes
from tfxline.trainer.keras_compat import keras
from tfxline.trainer.run import build
from tfxline.trainer.settings import TrainerSettings


@dataclasses.dataclass
class Fitted:
    """A trial's fit: its history, and (when asked) the validation rows' labels."""
    history: Dict[str, List[float]]
    validation_labels: Optional[Any] = None


def trial_strategy(name: str):
    """The strategy a trial trains under. On Vertex AI's parallel trials (KERASTUNER_TUNER_ID set
    by TFX's Vertex Tuner, extensions/google_cloud_ai_platform/tuner/executor.py:211, :296) each
    replica runs its own trials: the job's TF_CONFIG, which Vertex AI sets on every replica of a
    job of several, describes that flock, not one training cluster, and would make ``auto`` (or a
    configured multi-worker strategy) join every replica into one collective. There each trial
    trains on its own machine."""
    if "KERASTUNER_TUNER_ID" not in os.environ:
        return strategy_lib.create_strategy(name)
    own = {k: v for k, v in os.environ.items() if k != "TF_CONFIG"}
    return strategy_lib.create_strategy("auto" if name in ("multi_worker_mirrored", "parameter_server") else name,
                                        own)


@functools.lru_cache(maxsize=None)
def deadline_class():
    class StopAtDeadline(keras().callbacks.Callback):
        """Ends the fit at the first epoch end past the wall budget (its best epoch counts)."""

        def __init__(self, deadline: float):
            super().__init__()
            self.deadline = deadline

        def on_epoch_end(self, epoch, logs=None):
            if time.monotonic() >= self.deadline:
                self.model.stop_training = True

    return StopAtDeadline


def fit_trial(fn_args, settings: TrainerSettings, strategy, policy: str, epochs: int,
              deadline: float = math.inf, labels: bool = False) -> Fitted:
    """Train the model ``settings`` describe for at most ``epochs`` (early stopping as the Trainer
    does, and the wall ``deadline``); the fit's history, and with ``labels`` the validation rows'."""
    keras().backend.clear_session()  # the previous trial's layers and names go
    tf.keras.utils.set_random_seed(settings.training.seed)
    settings = dataclasses.replace(settings, training=dataclasses.replace(settings.training, epochs=epochs))
    sizes = plan_sizes(fn_args, settings, strategy)
    inputs = input_data(fn_args, settings, sizes, {})
    built = build(fn_args, settings, sizes, strategy, policy)
    # the rows the Trainer's early stopping reads (model.family auto: the watched half; the held half
    # is the family choice's alone)
    early_stopping, _ = callbacks_lib.early_stopping_callback(settings, sizes.epochs, inputs.watched)
    callbacks = [c for c in (early_stopping, deadline_class()(deadline)) if c is not None]
    fitted = built.trainable.fit(
        inputs.train, epochs=sizes.epochs, steps_per_epoch=sizes.steps_per_epoch, validation_data=inputs.watched,
        validation_steps=inputs.watched_steps, callbacks=callbacks, class_weight=inputs.class_weight, verbose=0)
    history = {k: [float(x) for x in v] for k, v in fitted.history.items()}
    return Fitted(history, validation_labels(inputs.watched) if labels else None)


def validation_labels(validation) -> np.ndarray:
    """The labels of every validation batch (the rows each validation pass reads), as one array."""
    return np.concatenate([np.asarray(label).ravel() for _, label in validation] or [np.zeros(0)])


