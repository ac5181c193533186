"""The fit's callbacks, in order: TensorBoard, early stopping (what it watches: the task type's
choice), the time budget (training.time_budget_minutes: trainer/budget.py), the resumable
checkpoint and the step profile (runtime.profile_steps)."""
from __future__ import annotations

import dataclasses
import logging
import math
import tempfile
from typing import Any, Dict, List, Optional, Tuple

from tfxline import task_types
from tfxline.trainer import budget as budget_lib
from tfxline.trainer import profile as profile_lib
from tfxline.trainer import resume
from tfxline.trainer import strategy as strategy_lib
from tfxline.trainer.keras_compat import keras
from tfxline.trainer.settings import TrainerSettings


@dataclasses.dataclass
class Callbacks:
    """The fit's callbacks and what a restart and the training record need of them."""
    log_dir: str
    callbacks: List[Any]
    early_stopping: Any
    early_stopping_info: str
    checkpoint: Any
    first_epoch: int
    profiler: Any
    budget: Any = None  # the time budget's callback (its record: trainer/budget.py)


def early_stopping_monitor(task: str, validation) -> Tuple[str, str]:
    """(metric early stopping watches, why it is not the usual one or ''), as the task type
    decides (binary: ``val_auc``, unless the validation rows hold one class). A task type that
    asks reads the validation batches' labels once, all of them (a partly read cached dataset
    would discard its cache)."""
    def classes_seen():
        classes, rows = set(), 0
        for _, label in validation:
            values = label.numpy().ravel()
            classes.update(values.tolist())
            rows += values.size
        return classes, rows

    return task_types.get(task).early_stopping(classes_seen)


def early_stopping_callback(settings: TrainerSettings, epochs: int, validation):
    """(the early stopping callback or None, what it watches for the record)."""
    patience = settings.training.early_stopping_patience
    if not (patience and epochs > 1):
        return None, "off"
    monitor, why = early_stopping_monitor(settings.features.task, validation)
    if why:
        logging.warning("early stopping watches val_loss: %s", why)
    info = f"{monitor}, patience {patience}" + (f" ({why})" if why else "")
    return resume.resumable_early_stopping_class()(
        monitor=monitor, mode="max" if monitor == "val_auc" else "min",
        patience=patience, restore_best_weights=True), info


def make_callbacks(model_run_dir: str, settings: TrainerSettings, strategy, model, optimizer, validation, *,
                   epochs: int, steps_per_epoch: int, global_batch: int, per_call: int,
                   backup: Optional[str], state: Dict[str, Any], budget_scale=None) -> Callbacks:
    """The callbacks of a fit over ``epochs`` of ``steps_per_epoch``; ``backup``: the resumable
    checkpoint's directory, None when the strategy cannot resume; ``state``: what it read there;
    ``budget_scale``: the learning rate's scale a time budget sets (None: no budget)."""
    # Only the chief writes TensorBoard logs where users look; other workers write to a
    # temporary directory (every worker must run the callback in multi-worker training).
    log_dir = model_run_dir if strategy_lib.is_chief() else tempfile.mkdtemp(prefix="tfxline-worker-logs-")
    callbacks = [keras().callbacks.TensorBoard(log_dir=log_dir, update_freq="epoch")]
    early_stopping, early_stopping_info = early_stopping_callback(settings, epochs, validation)
    if early_stopping is not None:
        callbacks.append(early_stopping)
    budget = None
    if budget_scale is not None:  # after early stopping: its best weights are this pass's when it is the best
        budget = budget_lib.callback_class()(settings.training.time_budget_minutes, epochs, budget_scale,
                                             early_stopping)
        callbacks.append(budget)
    checkpoint, first_epoch = None, 0
    if backup is not None:
        checkpoint = resume.TrainingCheckpoint(backup, model, optimizer, early_stopping, global_batch)
        first_epoch = checkpoint.restore(state)
        callbacks.append(checkpoint.callback())  # after early stopping: saves its state too
    else:
        logging.warning("%s cannot resume a killed training; a restarted Trainer starts over",
                        type(strategy).__name__)
    profiler = None
    if settings.runtime.profile_steps and strategy_lib.is_chief():
        profiler = profile_lib.profile_callback_class()(
            log_dir, math.ceil(settings.runtime.profile_steps / per_call),
            executions_per_epoch=math.ceil(steps_per_epoch / per_call),
            warmup=math.ceil(profile_lib.WARMUP_STEPS / per_call))
        callbacks.append(profiler)
    return Callbacks(log_dir, callbacks, early_stopping, early_stopping_info, checkpoint, first_epoch, profiler,
                     budget)
