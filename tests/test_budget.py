"""The Trainer's time budget (trainer/budget.py, training.time_budget_minutes): the passes that
fit, the learning rate's decay compressed onto them, the record and the summary's line. A fake
clock stands in for the passes' seconds (no test here depends on this machine's speed)."""
import numpy as np
import pytest
import tensorflow as tf

from tfxline.runs.training_notes import budget_note
from tfxline.trainer import budget as budget_lib
from tfxline.trainer import optimizer as optimizer_lib
from tfxline.trainer.keras_compat import keras


def test_the_passes_that_fit_are_those_done_and_what_the_rest_of_the_budget_holds():
    assert budget_lib.fitting_passes(600, 35, 35, 1, 40) == 17  # 1 + 565 // 35
    assert budget_lib.fitting_passes(600, 10, 5, 2, 40) == 40   # all fit: the planned ones, no more
    assert budget_lib.fitting_passes(600, 700, 35, 3, 40) == 3  # over already: none more, never fewer than done


class Clock:
    """time.monotonic for trainer/budget.py: each pass takes ``seconds`` (a callback ahead of the
    budget's moves it at each pass's end)."""

    def __init__(self, seconds):
        self.now, self.paces = 1000.0, list(seconds) if isinstance(seconds, (list, tuple)) else None
        self.seconds = self.paces.pop(0) if self.paces else seconds

    def tick(self, *_):
        self.now += self.seconds
        if self.paces:
            self.seconds = self.paces.pop(0)

    def __call__(self):
        return self.now


def fit(monkeypatch, minutes, planned, seconds_a_pass, steps=4, early_stopping=None):
    clock = Clock(seconds_a_pass)
    monkeypatch.setattr(budget_lib.time, "monotonic", clock)
    k = keras()
    tf.keras.utils.set_random_seed(0)
    model = k.Sequential([k.layers.Input((3,)), k.layers.Dense(1)])
    scale = budget_lib.scale_variable()
    schedule = budget_lib.compressed(optimizer_lib.learning_rate_schedule(0.01, steps * planned), scale)
    model.compile(optimizer=k.optimizers.Adam(schedule), loss="mse")
    passes = k.callbacks.LambdaCallback(on_epoch_end=clock.tick)
    callback = budget_lib.callback_class()(minutes, planned, scale, early_stopping)
    x, y = np.random.rand(32, 3).astype("float32"), np.random.rand(32, 1).astype("float32")
    history = model.fit(x, y, batch_size=8, epochs=planned, steps_per_epoch=steps, verbose=0,
                        callbacks=[passes, callback])
    return model, schedule, callback, history


class BestSoFar:
    """Early stopping as the budget reads it: the best pass's weights (here, all zeros)."""
    best_weights = [np.zeros((3, 1), "float32"), np.zeros(1, "float32")]


def test_a_budget_that_holds_three_of_ten_passes_runs_three_and_ends_the_decay_with_them(monkeypatch):
    model, schedule, callback, history = fit(monkeypatch, minutes=1, planned=10, seconds_a_pass=20,
                                             early_stopping=BestSoFar())
    assert all(not w.any() for w in model.get_weights())  # stopped by the budget: early stopping's best kept
    assert len(history.history["loss"]) == 3  # 20 s a pass in 60 s
    record = callback.record()
    assert record["passes"] == 3 and record["planned_passes"] == 10 and record["stopped_by_budget"]
    assert record["seconds_per_pass"] == 20 and record["all_passes_minutes"] == pytest.approx(200 / 60, abs=0.05)
    # the cosine's end (10 % of the peak) at the last pass that fit, not the rate of pass 3 of 10
    assert float(schedule(model.optimizer.iterations)) == pytest.approx(0.001, rel=1e-3)
    uncompressed = optimizer_lib.learning_rate_schedule(0.01, 4 * 10)
    assert float(uncompressed(12)) > 0.007


def test_the_plan_follows_the_pace_of_the_passes_after_the_first(monkeypatch):
    """A first pass of 20 s (tracing, or a machine busy with other work), then 5 s a pass: 100 s hold
    1 + 16 passes. Planned off the first pass alone it would be 5."""
    _, _, callback, history = fit(monkeypatch, minutes=100 / 60, planned=20, seconds_a_pass=[20] + [5] * 19)
    assert len(history.history["loss"]) == 17 and callback.record()["seconds_per_pass"] == 5


def test_a_budget_that_holds_every_pass_changes_nothing(monkeypatch):
    model, schedule, callback, history = fit(monkeypatch, minutes=10, planned=5, seconds_a_pass=20)
    assert len(history.history["loss"]) == 5 and not callback.record()["stopped_by_budget"]
    assert float(callback.scale.numpy()) == 1.0


def test_the_summary_says_how_long_training_took_and_what_a_bigger_budget_would_buy():
    info = {"train_seconds": 594.0, "early_stopping": "val_loss, patience 10",
            "history": {"val_loss": [0.9, 0.5, 0.41, 0.40, 0.38, 0.37]},
            "budget": {"minutes": 10.0, "planned_passes": 40, "passes": 17, "stopped_by_budget": True,
                       "seconds_per_pass": 34.0, "all_passes_minutes": 22.7}}
    assert budget_note(info) == (
        "9.9 min for 17 of 40 passes: the most that fit training.time_budget_minutes (10) at 34 s a pass, the "
        "learning rate's decay fitted to them; val_loss moved -0.04 over the last 3 passes; all 40 would take about "
        "22.7 min (training.time_budget_minutes: 30)")
    info["budget"].update(passes=12, stopped_by_budget=False)
    info["best_epoch"] = 7
    assert budget_note(info) == ("9.9 min for 12 of 40 passes, within training.time_budget_minutes (10): early "
                                 "stopping ended it (val_loss best at pass 7)")
    info["budget"].update(passes=40)
    assert budget_note(info).endswith("within training.time_budget_minutes (10): all of them ran")
    assert budget_note({"budget": None}) == ""


def test_the_key_is_read_only_where_a_budget_is_set_and_refused_below_zero():
    from tfxline.typed_config.problems import ConfigError
    from tfxline.pipeline.config.load import load_config

    plain = load_config().trainer_settings.to_custom_config()["training"]
    assert "time_budget_minutes" not in plain  # a table's Trainer custom_config (its cache key) as before
    budgeted = load_config(overrides=["training.time_budget_minutes=10"]).trainer_settings.to_custom_config()
    assert budgeted["training"]["time_budget_minutes"] == 10
    with pytest.raises(ConfigError, match=r"training.time_budget_minutes: -1.0; must be >= 0"):
        load_config(overrides=["training.time_budget_minutes=-1"])


def test_a_budget_spent_in_the_frozen_phase_skips_the_fine_tuning_phase():
    """An image backbone from a weights file trains in two fits (frozen, then unfrozen:
    trainer/images.py); Keras starts each fit afresh, so the budget's stop in the first is kept by
    trainer/run.fit, which unfreezes and fits again only while the budget lasts."""
    from types import SimpleNamespace

    from tfxline.trainer import run

    fits, tuned = [], []
    budget = SimpleNamespace(stopped=False)

    def one_fit(data, initial_epoch, epochs, **_):
        fits.append((initial_epoch, epochs))
        budget.stopped = True  # the budget ran out within this phase

    built = SimpleNamespace(trainable=SimpleNamespace(fit=one_fit), frozen_epochs=3, fine_tune=lambda: tuned.append(1))
    inputs = SimpleNamespace(train=None, validation=None, validation_steps=1, watched=None, watched_steps=1,
                             class_weight=None)
    cbs = SimpleNamespace(first_epoch=0, budget=budget, callbacks=[], early_stopping=None)
    run.fit(built, inputs, SimpleNamespace(epochs=10, steps_per_epoch=1), cbs, {})
    assert fits == [(0, 3)] and tuned == []
    budget.stopped, fits[:] = False, []
    cbs.budget = None  # no budget: both phases, as before
    run.fit(built, inputs, SimpleNamespace(epochs=10, steps_per_epoch=1), cbs, {})
    assert fits == [(0, 3), (3, 10)] and tuned == [1]


def test_a_budget_applies_where_one_process_decides():
    """Several workers (TF_CONFIG) would each time their own passes; one stopping before the others
    would leave them waiting in a collective: they run the planned passes."""
    assert budget_lib.applies(10, 40, 1) and not budget_lib.applies(10, 40, 3)
    assert not budget_lib.applies(0, 40, 1) and not budget_lib.applies(10, 1, 1)  # no budget; one pass
