"""The Tuner's search loop on keras-tuner's real oracle, each trial's fit replaced by a stand-in
(the real fit, and TFX's executor around it: tests/test_tuning_e2e.py): the wall budget, the best
trial written, failures, the config's own values as the baseline a trial must beat, and an
objective the model does not compile."""
import pytest

from tfxline.pipeline.config.load import load_config
from tfxline.pipeline.tuning import tuner_custom_config
from tfxline.trainer import tuning_settings as T


def _search(tmp_path, monkeypatch, fake_fit, *sets, baseline=None, labels=None):
    """tuner_fn's tuner searching with the real keras-tuner oracle loop, each trial's fit replaced by
    ``fake_fit`` and the config's own values' by ``baseline`` (default: fake_fit too), whose validation
    rows have ``labels`` (the real fit, and TFX's executor around it: test_tuning_e2e); (record, best values)."""
    import numpy as np
    from tfx.components.trainer.fn_args_utils import FnArgs

    from tfxline.trainer import trial as trial_lib
    from tfxline.trainer import tune

    def fit(fn_args, settings, strategy, policy, epochs, deadline, labels=False):
        history = (baseline or fake_fit)(fn_args, settings, strategy, policy, epochs, deadline) if labels else \
            fake_fit(fn_args, settings, strategy, policy, epochs, deadline)
        return trial_lib.Fitted(history, (np.arange(200) % 2 if rows is None else rows) if labels else None)

    rows = labels
    monkeypatch.setattr(trial_lib, "fit_trial", fit)
    monkeypatch.setattr(trial_lib.strategy_lib, "create_strategy", lambda name: None)
    monkeypatch.setattr(tune.precision, "resolve_policy", lambda name, strategy: "float32")
    cfg = load_config(overrides=[f"output_root={tmp_path}", "tuning.enabled=true", *sets])
    result = tune.tuner_fn(FnArgs(working_dir=str(tmp_path / "work"), transform_graph_path=str(tmp_path / "graph"),
                                  custom_config=tuner_custom_config(cfg)))
    result.tuner.search(**result.fit_kwargs)
    return result.tuner.record(), result.tuner.get_best_hyperparameters()[0].values


def _low(*args):
    return {"val_auc": [0.01]}  # the config's own values: any trial beats them


def test_the_wall_budget_ends_the_search(tmp_path, monkeypatch):
    import time

    def slow_fit(fn_args, settings, strategy, policy, epochs, deadline):
        time.sleep(0.2)
        return {"val_auc": [0.25, 0.5 + settings.model.learning_rate]}  # the best epoch counts

    record, best = _search(tmp_path, monkeypatch, slow_fit, "tuning.max_trials=5", "tuning.max_minutes=0.001",
                           "tuning.algorithm=random", baseline=_low)
    assert record["ended_by"] == "max_minutes" and len(record["trials"]) == 1
    assert record["best"]["score"] == 0.5 + best["learning_rate"] and record["best"]["best_epoch"] == 2


def test_the_best_of_every_trial_is_written(tmp_path, monkeypatch):
    def fit(fn_args, settings, strategy, policy, epochs, deadline):
        return {"val_auc": [0.5 + settings.model.learning_rate], "val_loss": [1.0]}

    record, best = _search(tmp_path, monkeypatch, fit, "tuning.max_trials=4", "tuning.algorithm=random",
                           baseline=_low)
    assert record["ended_by"] == "max_trials" and len(record["trials"]) == 4
    assert record["baseline"]["score"] == 0.01 and not record["kept_config"]
    assert best["learning_rate"] == max(t["values"]["learning_rate"] for t in record["trials"])
    assert record["best"]["values"] == {k: v for k, v in best.items() if not k.startswith("tuner/")}


def test_trials_that_all_fail_stop_the_tuner_in_one_line(tmp_path, monkeypatch):
    from tfxline.trainer.tune import NoTrialFinished

    def broken(fn_args, settings, strategy, policy, epochs, deadline):
        raise ValueError("the Trainer's train files hold no rows (x); give the data more rows")

    with pytest.raises(NoTrialFinished, match=r"^tuning: 3 trials failed, none finished; the first: ValueError: "
                                              r"the Trainer's train files hold no rows"):
        _search(tmp_path, monkeypatch, broken, "tuning.max_trials=5", "tuning.algorithm=random")


def test_trials_within_the_noise_keep_the_configs_own_values(tmp_path, monkeypatch):
    """20 trials on a few hundred validation rows: the best beats the config's own values by chance
    alone. A trial must beat them by more than twice the noise of the score on those rows (AUC's
    standard error from its class counts, task_types/binary.py), or the Trainer keeps the config."""
    import numpy as np

    def near(fn_args, settings, strategy, policy, epochs, deadline):
        return {"val_auc": [0.80 + settings.model.learning_rate]}  # at most 0.82: within the noise

    def own(*args):
        return {"val_auc": [0.80]}

    labels = (np.arange(400) % 5 == 0).astype(int)  # 80 positives in 400 rows: AUC's noise ~0.03
    record, best = _search(tmp_path, monkeypatch, near, "tuning.max_trials=4", "tuning.algorithm=random",
                           baseline=own, labels=labels)
    assert record["kept_config"] and best == {}  # best_hyperparameters with no values: the config's
    assert record["best"]["trial"] == "config" and 0.02 < record["baseline"]["noise"] < 0.04
    assert record["baseline"]["rows"] == 400
    assert "none beat the config's own values (val_auc 0.8000) by more than 2 x its noise" in T.summary_line(record)
    assert T.tuned(load_config().trainer_settings, T.best_values({"space": [], "values": best})) == \
        load_config().trainer_settings
    far, _ = _search(tmp_path / "far", monkeypatch, lambda *a: {"val_auc": [0.95]}, "tuning.max_trials=2",
                     "tuning.algorithm=random", baseline=own, labels=labels)
    assert not far["kept_config"] and far["best"]["score"] == 0.95


def test_failures_after_a_finished_trial_keep_its_values(tmp_path, monkeypatch):
    calls = []

    def fails_later(fn_args, settings, strategy, policy, epochs, deadline):
        calls.append(1)
        if len(calls) > 1:
            raise MemoryError("out of memory at batch 512")
        return {"val_auc": [0.8]}

    record, best = _search(tmp_path, monkeypatch, fails_later, "tuning.max_trials=8", "tuning.algorithm=random",
                           baseline=_low)
    assert len(record["trials"]) == 1 and len(record["failed"]) == 3
    assert record["failed"][0].startswith("MemoryError: out of memory")
    assert best["learning_rate"] == record["best"]["values"]["learning_rate"]


def test_an_objective_the_model_does_not_compile_is_named(tmp_path, monkeypatch):
    import keras_tuner as kt

    def fit(fn_args, settings, strategy, policy, epochs, deadline):
        return {"val_auc": [0.9], "val_loss": [0.3]}

    with pytest.raises(kt.errors.FatalValueError, match="tuning.objective: val_mae is not among the model's validation "
                                              r"metrics \(val_auc, val_loss\)"):
        _search(tmp_path, monkeypatch, fit, "tuning.objective=val_mae", "tuning.algorithm=random")
