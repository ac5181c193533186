"""``tuner_fn``: the entry point TFX's Tuner calls (referenced by import path), and the tuner it
returns: a ``keras_tuner.Tuner`` whose ``run_trial`` trains this project's model with the
Trainer's own code (trainer/run.py ``build``, trainer/inputs.py) and returns the trial's best
validation metric.

Why a subclass: keras-tuner 1.4.8 builds its models with Keras 3 whenever the ``keras`` package is
installed, whatever ``TF_USE_LEGACY_KERAS`` says (keras_tuner/src/backend/config.py:15-23), and
refuses a tf_keras model with a FatalTypeError (src/engine/tuner.py:159-172; keras-team/keras-tuner
#1039, fix #1040 unmerged). A tuner that builds and fits the model itself never reaches that
check; tests/test_tuning.py pins the refusal, so the day keras-tuner accepts tf_keras that test
says this subclass can go.

Each trial: the settings with the trial's values laid over them (trainer/tuning_settings.py
``tuned``, as the Trainer lays the best ones), early stopping as the Trainer's, at most
``tuning.trial_epochs`` epochs, and the wall budget (``tuning.max_minutes``): no trial starts after
it, and the running one stops at its next epoch's end. The trials share the Transform graph (one
loaded layer, trainer/data.py) and each caches its split as the Trainer does; one trial's fit is
trainer/trial.py's (TFX reloads this module before each search: udf_utils, import_utils.py:62-63).

Before the trials, the config's own values train as the baseline (``fit_baseline``) and the noise
of their validation score is measured (the task type's ``metric_noise``): a trial replaces them only
when it beats them by more than tuning_settings.MARGIN_SE of it, else the Tuner writes no values
and the Trainer keeps the config's (docs/tuning.md, "A tuned model you can trust").
"""
from __future__ import annotations

import contextlib
import functools
import io
import logging
import math
import os
import tempfile
import time
from typing import Any, Dict, List, Optional

import attr

from tfxline import task_types
from tfxline.patches import autograph, tf_custom_gradients
from tfxline.trainer import data, precision, trees_search
from tfxline.trainer import trial as trial_lib
from tfxline.trainer import tuning_settings as T
from tfxline.trainer.keras_compat import keras
from tfxline.trainer.settings import TrainerSettings
from tfxline.typed_config.read import from_yaml


class NoTrialFinished(RuntimeError):
    """Every trial failed: nothing to train the model with."""


def settings_of(custom_config: Dict[str, Any]):
    """(TrainerSettings, TuningConfig) from the Tuner's custom_config: the Trainer's, plus ``tuning``."""
    config = dict(custom_config)
    tuning = from_yaml(T.TuningConfig, config.pop("tuning", {}), "tuning")
    return TrainerSettings.from_custom_config(config), tuning


def tuner_fn(fn_args):
    """TFX's Tuner UDF: the tuner, and no fit arguments (each trial reads its data itself)."""
    from tfx.components.tuner.component import TunerFnResult

    keras()  # fail early, with the fix named, if tf.keras is not tf_keras
    settings, tuning = settings_of(fn_args.custom_config)
    # the Tuner's fn_args name the Transform graph only by its newer name; the Trainer's code reads the older
    fn_args = attr.evolve(fn_args, transform_output=fn_args.transform_output or fn_args.transform_graph_path)
    # keras-tuner's own state (the oracle's trials) in the executor's working directory
    directory = fn_args.working_dir or tempfile.mkdtemp(prefix="tfxline-tuner-")
    tuner = trial_tuner_class()(fn_args, settings, tuning, oracle=make_oracle(settings, tuning),
                                directory=directory, project_name=project_name(), overwrite=True)
    return TunerFnResult(tuner=tuner, fit_kwargs={})


def project_name() -> str:
    """keras-tuner's project folder: one per tuner. On Vertex AI's parallel trials the chief
    machine holds two (TFX's Vertex Tuner, extensions/google_cloud_ai_platform/tuner/executor.py:
    its chief oracle in a subprocess, :209-223, and a trial-running worker, :285-307), both in the
    same /tmp (:53), and each would wipe the other's folder (overwrite=True) if they shared one;
    the extension names each tuner in KERASTUNER_TUNER_ID (:211, :296)."""
    tuner_id = os.environ.get("KERASTUNER_TUNER_ID")
    return f"trials-{tuner_id}" if tuner_id else "trials"


def search_space(space: Dict[str, tuple]):
    """keras-tuner's HyperParameters for a resolved space (tuning_settings.SearchSpace.resolved)."""
    import keras_tuner as kt

    hp = kt.HyperParameters()
    for key, values in space.items():
        if key in T.RANGES:
            hp.Float(key, min_value=float(values[0]), max_value=float(values[1]), sampling="log")
        else:
            hp.Choice(key, list(values), ordered=not isinstance(values[0], (str, bool)))
    return hp


def make_oracle(settings: TrainerSettings, tuning: T.TuningConfig):
    """The search algorithm, over the resolved space, ranking trials by the objective."""
    import keras_tuner as kt

    name, direction = T.objective(tuning, settings.features.task)
    space = tuning.space.resolved(settings.features.task, settings.training.batch_size)
    common: Dict[str, Any] = dict(objective=kt.Objective(name, direction), hyperparameters=search_space(space),
                                  seed=settings.training.seed, tune_new_entries=False, allow_new_entries=False)
    if tuning.algorithm == "hyperband":
        oracle = kt.oracles.HyperbandOracle(max_epochs=trial_epochs(settings, tuning), factor=3, **common)
        oracle.max_trials = tuning.max_trials  # its bracket decides the trials; max_trials caps them
        return oracle
    if tuning.algorithm == "random":
        return kt.oracles.RandomSearchOracle(max_trials=tuning.max_trials, **common)
    return kt.oracles.BayesianOptimizationOracle(
        max_trials=tuning.max_trials, num_initial_points=min(3, tuning.max_trials), **common)


def trial_epochs(settings: TrainerSettings, tuning: T.TuningConfig) -> int:
    return tuning.trial_epochs or settings.training.epochs


@functools.lru_cache(maxsize=None)
def trial_tuner_class():
    """The tuner class (defined on first use: keras-tuner imports Keras 3 when it loads)."""
    import keras_tuner as kt

    class TrialTuner(kt.Tuner):
        """Trains this project's model per trial; keeps a record of every trial."""

        def __init__(self, fn_args, settings: TrainerSettings, tuning: T.TuningConfig, **kwargs):
            super().__init__(**kwargs)
            self.fn_args, self.settings, self.tuning = fn_args, settings, tuning
            self.objective_name, self.direction = T.objective(tuning, settings.features.task)
            self.strategy = trial_lib.trial_strategy(settings.runtime.strategy)
            self.policy = precision.resolve_policy(settings.runtime.precision, self.strategy)
            self.trials: List[Dict[str, Any]] = []
            self.failures: List[str] = []  # the failed trials' errors
            self.started = time.monotonic()
            self.deadline = self.started + tuning.max_minutes * 60 if tuning.max_minutes else math.inf
            self.out_of_time = False
            self.baseline: Optional[Dict[str, Any]] = None  # the config's own values, as a trial (search)
            self.trees_record: Optional[Dict[str, Any]] = None  # the trees' search (model.family trees or auto)
            if not self._is_worker():  # the oracle is here (a local run, or Vertex AI's chief oracle)
                self.oracle.create_trial = until_deadline(self, self.oracle.create_trial)

        def search(self, *args, **kwargs):
            """keras-tuner's search after the config's own values (the baseline a trial must beat),
            quiet on the console: no progress table (verbose 0), and the traceback it prints for a
            failed trial (keras_tuner/src/engine/base_tuner.py:280-282) into the log, where
            run_trial logged it already with the trial's progress line."""
            with contextlib.redirect_stderr(_LogWriter()):
                if "KERASTUNER_ORACLE_IP" not in os.environ:  # one search here, not Vertex AI's parallel trials
                    # the trees' space first (cheap trials, a quarter of the budget at most: trainer/trees_search.py)
                    self.trees_record = trees_search.search(self.fn_args, self.settings, self.tuning, self.started,
                                                            progress)
                    self.baseline = fit_baseline(self)
                try:
                    return super().search(*args, **dict(kwargs, verbose=0))
                except RuntimeError as e:  # keras-tuner's "Number of consecutive failures exceeded the limit"
                    if not self.failures:
                        raise
                    after_failures(self, e)
                    return None

        def keeps_config(self) -> bool:
            """No trial beat the config's own values by more than the validation rows' noise allows."""
            return T.keeps_config(self.baseline, self.trials, self.direction)

        def get_best_hyperparameters(self, num_trials=1):
            """What TFX writes as best_hyperparameters (tuner/executor.py:64): none when the config's
            own values are kept (the Trainer then trains with them), else the best trial's; and the
            trees' best where their search beat the config's trees settings."""
            import keras_tuner as kt

            chosen = [kt.HyperParameters()] if self.keeps_config() else super().get_best_hyperparameters(num_trials)
            return [trees_search.with_trees(hp, self.trees_record) for hp in chosen]  # the trees' best, trees.KEY

        def run_trial(self, trial, *args, **kwargs):
            values = dict(trial.hyperparameters.values)
            epochs = int(values.get("tuner/epochs") or trial_epochs(self.settings, self.tuning))
            started = time.monotonic()
            try:
                history = fit(self, T.tuned(self.settings, values), epochs).history
            except Exception as e:
                logging.exception("tuning: trial %s failed", trial.trial_id)
                self.failures.append(f"{type(e).__name__}: {e}")
                progress("%strial %d/%d failed (%.1fs): %s", T.PROGRESS, len(self.trials) + len(self.failures),
                         self.tuning.max_trials, time.monotonic() - started, self.failures[-1].splitlines()[0])
                raise
            self.trials.append(dict(scored(self, history, started), trial=trial.trial_id,
                                    values=T.best_values(values)))
            progress("%s", T.trial_line(len(self.trials) + len(self.failures), self.tuning.max_trials,
                                        self.objective_name, self.trials[-1]))
            return {self.objective_name: self.trials[-1]["score"]}

        def record(self) -> Dict[str, Any]:
            """What the Tuner's tuning_run.json records (the run report and summary read it)."""
            return dict(T.tuning_record(self.tuning, self.objective_name, self.direction, self.trials,
                                        time.monotonic() - self.started, self.out_of_time, self.failures,
                                        self.baseline), trees=self.trees_record)

    return TrialTuner


def fit(tuner, settings: TrainerSettings, epochs: int, labels: bool = False) -> trial_lib.Fitted:
    """One fit of ``settings`` as a trial: its graphs let go after it (patches/tf_custom_gradients.py),
    the precision policy set for it alone."""
    with autograph.libraries_not_converted(), precision.precision_policy(tuner.policy), \
            tf_custom_gradients.released():
        return trial_lib.fit_trial(tuner.fn_args, settings, tuner.strategy, tuner.policy, epochs, tuner.deadline,
                                   labels=labels)


def scored(tuner, history: Dict[str, List[float]], started: float) -> Dict[str, Any]:
    """A fit's score (its best epoch's objective), epochs and seconds; keras-tuner's FatalValueError,
    which stops the search, when the model does not compile the objective (the same for every trial)."""
    scores = history.get(tuner.objective_name)
    if not scores:
        import keras_tuner as kt

        raise kt.errors.FatalValueError(
            f"tuning.objective: {tuner.objective_name} is not among the model's validation metrics "
            f"({', '.join(sorted(k for k in history if k.startswith('val_')))}); name one of them, or auto")
    best = (max if tuner.direction == "max" else min)(scores)
    return {"score": float(best), "epochs": len(scores), "best_epoch": scores.index(best) + 1,
            "seconds": round(time.monotonic() - started, 1)}


def fit_baseline(tuner) -> Optional[Dict[str, Any]]:
    """The config's own values, trained as a trial, with the noise of their score on the validation
    rows (the task type's metric_noise): what a trial must beat by more than MARGIN_SE of it. None
    when it fails (the best trial is then used)."""
    started = time.monotonic()
    try:
        fitted = fit(tuner, tuner.settings, trial_epochs(tuner.settings, tuner.tuning), labels=True)
        baseline = dict(scored(tuner, fitted.history, started), trial="config", values={})
    except Exception as e:  # an objective the model does not compile: the first trial stops the search
        logging.exception("tuning: the config's own values failed")
        progress("%sthe config's own values failed (%s): the best trial is used", T.PROGRESS, str(e).splitlines()[0])
        return None
    labels = fitted.validation_labels
    assert labels is not None  # fit(..., labels=True) reads them
    baseline.update(rows=int(len(labels)), noise=float(task_types.get(tuner.settings.features.task).metric_noise(
        tuner.objective_name.removeprefix("val_"), baseline["score"], labels)))
    progress("%s", T.baseline_line(tuner.objective_name, baseline))
    return baseline


def after_failures(tuner, error: Exception) -> None:
    """keras-tuner stopped the search after failed trials in a row: the finished trials' best is
    still a tuned model (one line says so); with none finished, NoTrialFinished names the first error."""
    if tuner.trials:
        progress("%sstopped after %d failed trials in a row (%s); the best of the %d finished is used", T.PROGRESS,
                 tuner.oracle.max_consecutive_failed_trials, tuner.failures[-1].splitlines()[0], len(tuner.trials))
        return
    raise NoTrialFinished(
        f"tuning: {len(tuner.failures)} trials failed, none finished; the first: {tuner.failures[0].splitlines()[0]} "
        "(the run's log has each trial's traceback); fix what it names, or turn tuning off (tuning.enabled: false)"
    ) from error


def until_deadline(tuner, create_trial):
    """The oracle's create_trial, which past the tuner's wall budget starts no more trials: it
    stops at max_trials (keras_tuner/src/engine/oracle.py:472-473). In the oracle, not in
    on_trial_end: on Vertex AI's parallel trials a worker's oracle is keras-tuner's OracleClient
    (src/engine/base_tuner.py:135-140), which has no trials to count (src/distribute/oracle_client.py:51-60)
    and no say over the chief's max_trials; the chief's oracle answers every worker's create_trial
    (src/distribute/oracle_chief.py:43-47)."""

    def create(tuner_id):
        if time.monotonic() >= tuner.deadline and not tuner.out_of_time:
            tuner.out_of_time = True
            tuner.oracle.max_trials = max(1, len(tuner.oracle.trials))
        return create_trial(tuner_id)

    return create


def progress(message: str, *args) -> None:
    """A line a local run's console shows (local/process.py's ProgressHandler reads absl's logger)."""
    from absl import logging as absl_logging

    absl_logging.info(message, *args)


class _LogWriter(io.TextIOBase):
    """A text stream whose lines go to the log (debug level)."""

    def write(self, text: str) -> int:
        for line in text.splitlines():
            if line.strip():
                logging.debug("%s", line)
        return len(text)


def forget() -> None:
    """After the search: the Transform layers the trials shared let go (trainer/data.py)."""
    data.forget_transform_layers()
