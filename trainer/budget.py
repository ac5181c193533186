"""A training's time budget (``training.time_budget_minutes``): the Trainer times its own passes
on the machine it runs on and fits the planned passes into the budget.

``tfxline init`` plans passes for the data (40 for images from scratch), but how long a pass takes
depends on the machine: 5,000 photos at 48 px took 35 s a pass on a 2-core AMD machine, 15 s on a
2-core Intel one. With a budget, the Trainer plans after its first pass (which includes tracing)
and again after each pass until half the planned ones are done, at the mean pace of the passes
after the first: the passes that fit in what is left of the budget, at most the configured ones.
When fewer fit, the learning rate's cosine decay (trainer/optimizer.py) is compressed onto them
(its step is scaled by planned / fitting passes, a variable the schedule reads), so the shorter
training still ends at the low rate a full one ends at, rather than being cut while the rate is
high; the run stops after the last pass that fits, keeping early stopping's best weights. A pass
much slower than the plan's (a machine shared with other work) stops the run at 1.25 x the budget.
0 (the default) is no budget. The record (training_run.json ``budget``) says how many passes
fitted, the seconds a pass, and how long all the planned passes would take: the summary's "what a
bigger budget would buy".

A Trainer that resumes after a kill plans its passes again with the whole budget (it times its own
passes, not the killed one's). A training across several workers (TF_CONFIG) runs its planned
passes: each worker would time its own, and one stopping before the others would leave them
waiting in a collective.
"""
from __future__ import annotations

import logging
import math
import time
from typing import Any, Dict, List, Optional

from tfxline.trainer.keras_compat import keras

OVERRUN = 1.25  # a training this far past its budget stops whatever the plan said (a slowed machine)
FIRST_RUN_MINUTES = 10  # what `tfxline init` writes for images and text (issue #72: about 10 minutes on 2 cores)
INIT_COMMENT = "the Trainer times its passes and runs those that fit, the summary says what more would buy (0: all)"


def compressed(inner, scale):
    """``inner`` (a learning-rate schedule) read at ``step * scale``: ``scale`` (a variable) is
    planned / fitting passes, so the inner schedule's end comes with the last pass that fits."""
    return compressed_class()(inner, scale)


def compressed_class():
    k = keras()

    class CompressedSchedule(k.optimizers.schedules.LearningRateSchedule):
        def __init__(self, inner, scale):
            super().__init__()
            self.inner, self.scale = inner, scale

        def __call__(self, step):
            import tensorflow as tf

            return self.inner(tf.cast(step, tf.float32) * self.scale)

        def get_config(self):
            return {"inner": k.optimizers.schedules.serialize(self.inner), "scale": float(self.scale.numpy())}

    return CompressedSchedule


def applies(minutes: float, epochs: int, workers: int) -> bool:
    """A budget is kept where one process decides: several workers (TF_CONFIG's cluster) each timing
    their own passes could stop at different passes and leave the others waiting in a collective, so
    a multi-worker training runs its planned passes (and says so in its log)."""
    if minutes and workers > 1:
        logging.warning("training.time_budget_minutes is not applied across %d workers: each would time its "
                        "own passes; the planned passes all run", workers)
    return bool(minutes) and epochs > 1 and workers <= 1


def scale_variable():
    """The schedule's scale (1: as planned), outside any strategy's scope: a callback assigns it."""
    import tensorflow as tf

    return tf.Variable(tf.constant(1.0, tf.float32), trainable=False, name="budget_scale")


def fitting_passes(budget_s: float, elapsed_s: float, per_pass_s: float, done: int, planned: int) -> int:
    """The passes a training may run in all: those done, and as many more as the rest of the budget
    holds at ``per_pass_s`` each, at most ``planned``; never fewer than ``done``."""
    more = int(max(0.0, budget_s - elapsed_s) // max(per_pass_s, 1e-9))
    return max(done, min(planned, done + more))


def callback_class():
    k = keras()

    class TimeBudget(k.callbacks.Callback):
        """Plans the passes that fit after each pass of the first half; stops after the last that fits."""

        def __init__(self, minutes: float, planned: int, scale, early_stopping=None):
            super().__init__()
            self.budget_s, self.planned, self.scale = minutes * 60.0, planned, scale
            self.early_stopping = early_stopping
            self.started: Optional[float] = None
            self.pass_seconds: List[float] = []
            self.fitting, self.done, self.stopped = planned, 0, False

        def on_train_begin(self, logs=None):
            if self.started is None:  # a second phase (an image backbone unfrozen) keeps the first's start
                self.started = time.monotonic()

        def on_epoch_begin(self, epoch, logs=None):
            self._pass_started = time.monotonic()

        def on_epoch_end(self, epoch, logs=None):
            self.pass_seconds.append(time.monotonic() - self._pass_started)
            self.done = epoch + 1
            elapsed = time.monotonic() - (self.started or self._pass_started)
            # planned again after each pass until half the fitting ones are done, at the steady pace (the
            # mean pass after the first, which traces): a machine busy with other work early on does not
            # fix a short plan; later the rate's decay is left alone
            if len(self.pass_seconds) <= max(2, self.fitting // 2):
                steady = self.pass_seconds[1:] or self.pass_seconds
                self.fitting = fitting_passes(self.budget_s, elapsed, sum(steady) / len(steady), self.done,
                                              self.planned)
                self.scale.assign(self.planned / max(self.fitting, 1))
            if (self.fitting < self.planned and self.done >= self.fitting) or elapsed > OVERRUN * self.budget_s:
                if self.done < self.planned:
                    self.stopped = True
                    self.model.stop_training = True
                    best = getattr(self.early_stopping, "best_weights", None)
                    if best is not None:
                        self.model.set_weights(best)

        def record(self) -> Dict[str, Any]:
            steady = self.pass_seconds[1:] or self.pass_seconds
            per_pass = sum(steady) / len(steady) if steady else 0.0
            return {"minutes": self.budget_s / 60.0, "planned_passes": self.planned, "passes": self.done,
                    "stopped_by_budget": self.stopped, "seconds_per_pass": round(per_pass, 2),
                    # all the planned passes at the steady pace, the first pass's tracing included
                    "all_passes_minutes": round(((self.pass_seconds[0] if self.pass_seconds else 0.0)
                                                 + per_pass * (self.planned - 1)) / 60.0, 1)}

    return TimeBudget


def suggested_minutes(record: Dict[str, Any]) -> int:
    """A budget that holds all the planned passes (rounded up to 5 minutes, with 20 % to spare)."""
    return int(5 * math.ceil(record["all_passes_minutes"] * 1.2 / 5))
