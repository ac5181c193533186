"""The ``tuning`` config section: whether TFX's Tuner runs before the Trainer, how (algorithm,
trials, a wall budget, the objective), over which of the model's own keys (``space``), or which
saved best hyperparameters the Trainer takes instead (``reuse``); and how a set of tuned values
lands on the Trainer's settings (``tuned``), the one place both the Tuner's trials and the
Trainer apply them.

A search-space key is a ``model`` or ``training`` key (``hidden_layers`` with ``hidden_units`` make
the model's layer widths); a key left unset takes the task type's default
(task_types/base.py ``tuning_space``), an empty list tunes nothing there (the config's value).
"""
from __future__ import annotations

import dataclasses
from typing import Any, Dict, Iterator, Mapping, Optional, Tuple

from tfxline import task_types
from tfxline.typed_config.problems import Problem, bad

ALGORITHMS = ("random", "bayesian", "hyperband")
REUSE_LATEST = "latest"  # tuning.reuse: the newest tuned run's in a local run's store (local/reuse.py)
BEST_FILE = "best_hyperparameters.txt"  # the name TFX's Tuner writes (components/tuner/executor.py:34)
# The pipeline's node ids of the Tuner and of the Importer of reused values (pipeline/tuning.py makes
# them; runs/tuning.py reads their executions without importing TFX)
TUNER_ID = "Tuner"
REUSED_ID = "ReusedHyperparameters"
# The keys a search space names, by kind: a log-uniform [low, high] range, or a list of choices.
RANGES = ("learning_rate",)
CHOICES = ("hidden_layers", "hidden_units", "dropout", "embedding_max_dim", "batch_size", "weight_decay",
           "batch_norm", "class_weight")
# The trees' tuned keys (trainer/trees_search.py) in best_hyperparameters: "trees.max_depth", laid
# over model.trees
TREES_PREFIX = "trees."
# Where a value lands: the section of TrainerSettings each key belongs to.
_SECTION = {"learning_rate": "model", "dropout": "model", "embedding_max_dim": "model", "weight_decay": "model",
            "batch_norm": "model", "batch_size": "training", "class_weight": "training"}


@dataclasses.dataclass(frozen=True)
class SearchSpace:
    """What the Tuner may try: each key unset (null) takes the task's default, [] tunes nothing."""
    # [low, high], searched on a log scale (default [0.0005, 0.02])
    learning_rate: Optional[Tuple[float, ...]] = None
    hidden_layers: Optional[Tuple[int, ...]] = None        # how many hidden layers (default [1, 2, 3])
    # the first hidden layer's width; each next one is half as wide, at least 8 (default [32, 64, 128, 256])
    hidden_units: Optional[Tuple[int, ...]] = None
    dropout: Optional[Tuple[float, ...]] = None            # after each hidden layer (default [0, 0.1, 0.3])
    embedding_max_dim: Optional[Tuple[int, ...]] = None    # the embeddings' width cap (default [4, 8, 16])
    # default: half, once and twice training.batch_size (the training length was sized for it)
    batch_size: Optional[Tuple[int, ...]] = None
    weight_decay: Optional[Tuple[float, ...]] = None       # AdamW's decoupled decay, 0: Adam (default [0, 0.01, 0.1])
    batch_norm: Optional[Tuple[bool, ...]] = None          # default: not tuned (model.batch_norm)
    # none | balanced; default: [none, balanced] for a multi-class label, not tuned otherwise
    class_weight: Optional[Tuple[str, ...]] = None

    def problems(self) -> Iterator[Problem]:
        lr = self.learning_rate
        if lr is not None and lr and not (len(lr) == 2 and 0 < lr[0] <= lr[1]):
            yield bad(self, "learning_rate", "write [low, high] with 0 < low <= high ([]: model.learning_rate)")
        for key, ok, rule in (("hidden_layers", lambda v: v >= 1, ">= 1"), ("hidden_units", lambda v: v >= 1, ">= 1"),
                              ("dropout", lambda v: 0 <= v < 1, "in [0, 1)"),
                              ("embedding_max_dim", lambda v: v >= 2, ">= 2"), ("batch_size", lambda v: v >= 1, ">= 1"),
                              ("weight_decay", lambda v: 0 <= v < 1, "in [0, 1)"),
                              ("class_weight", lambda v: v in ("none", "balanced"), "none or balanced")):
            if not all(ok(v) for v in getattr(self, key) or ()):
                yield bad(self, key, f"every choice must be {rule}")

    def resolved(self, task: str, batch_size: int) -> Dict[str, tuple]:
        """Every key's choices (or range): the config's where set, else the task type's default
        (batch_size's: half, once and twice ``batch_size``, the configured one); keys with nothing
        to choose left out."""
        defaults = dict(task_types.get(task).tuning_space(),
                        batch_size=(max(8, batch_size // 2), batch_size, batch_size * 2))
        out = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            value = defaults.get(f.name, ()) if value is None else value
            if value and not (f.name in CHOICES and len(set(value)) < 2):
                out[f.name] = tuple(value)
        return out


@dataclasses.dataclass(frozen=True)
class TuningConfig:
    # Run TFX's Tuner before the Trainer; the Trainer trains on the best values it found.
    enabled: bool = False
    # random | bayesian (a Gaussian process over the finished trials) | hyperband (many short trials,
    # the best of them trained longer; its bracket sets the number of trials, max_trials caps it)
    algorithm: str = "bayesian"
    # The most trials (model configurations) the search trains, one after another locally.
    max_trials: int = 10
    # A wall budget: no trial starts after it, and the running one stops at its next epoch's end
    # (its best epoch counts). 0: no budget (max_trials alone).
    max_minutes: float = 10.0
    # What the trials are ranked by, on the validation split: auto is the task's main metric
    # (val_auc, val_accuracy, val_rmse); or val_loss, or any val_ metric the model compiles.
    objective: str = "auto"
    # Each trial's most epochs (0: training.epochs); early stopping (training.early_stopping_patience)
    # ends a trial sooner.
    trial_epochs: int = 0
    # Train on saved best hyperparameters instead of tuning: a best_hyperparameters.txt file (or
    # its folder), or `latest`, the newest the pipeline's store holds (a local run's).
    reuse: str = ""
    # Vertex AI only: trials at once (TFX's Vertex Tuner extension, one worker each). Local
    # tuning runs its trials one after another.
    parallel_trials: int = 1
    # What the trials may try, over the model's and training's own keys (tuning.space.* below).
    space: SearchSpace = SearchSpace()

    @property
    def tunes(self) -> bool:
        """The Tuner runs in this pipeline (reuse feeds saved values instead)."""
        return self.enabled and not self.reuse

    def problems(self) -> Iterator[Problem]:
        if self.algorithm not in ALGORITHMS:
            yield bad(self, "algorithm", f"use one of {', '.join(ALGORITHMS)}")
        if not self.max_trials >= 1:
            yield bad(self, "max_trials", "must be >= 1")
        if not self.max_minutes >= 0:
            yield bad(self, "max_minutes", "must be >= 0 (0: no wall budget)")
        if not (self.objective == "auto" or self.objective.startswith("val_")):
            yield bad(self, "objective", "use auto (the task's main metric) or a validation metric such as val_loss")
        if not self.trial_epochs >= 0:
            yield bad(self, "trial_epochs", "must be >= 0 (0: training.epochs)")
        if not self.parallel_trials >= 1:
            yield bad(self, "parallel_trials", "must be >= 1")
        yield from (p.within("space") for p in self.space.problems())


def objective(tuning: TuningConfig, task: str) -> Tuple[str, str]:
    """(the metric the trials are ranked by, 'max' or 'min')."""
    task_type = task_types.get(task)
    name = f"val_{task_type.main_metric}" if tuning.objective == "auto" else tuning.objective
    if name == f"val_{task_type.main_metric}":
        return name, "max" if task_type.higher_is_better else "min"
    return name, "min" if any(w in name for w in ("loss", "error", "rmse", "mae", "mse")) else "max"


def layer_widths(layers: int, first: int) -> Tuple[int, ...]:
    """``layers`` hidden layers, the first ``first`` wide, each next one half as wide (>= 8)."""
    return tuple(max(8, first // 2 ** i) if i else first for i in range(layers))


def tuned(settings: Any, values: Mapping[str, Any]) -> Any:
    """``settings`` (trainer.settings.TrainerSettings) with tuned ``values`` laid over its model and
    training sections; keys this project does not tune (keras-tuner's own ``tuner/...``) ignored."""
    model, training = dict(_fields(settings.model)), dict(_fields(settings.training))
    sections = {"model": model, "training": training}
    for key, value in values.items():
        if key in _SECTION:
            section = sections[_SECTION[key]]
            section[key] = type(section[key])(value)
    if "hidden_layers" in values or "hidden_units" in values:
        current = settings.model.hidden_units
        model["hidden_units"] = layer_widths(int(values.get("hidden_layers", len(current) or 1)),
                                             int(values.get("hidden_units", current[0] if current else 64)))
    trees = {k[len(TREES_PREFIX):]: v for k, v in values.items() if str(k).startswith(TREES_PREFIX)}
    if trees:
        model["trees"] = tuned_trees(settings.model.trees, trees)
    return dataclasses.replace(settings, model=type(settings.model)(**model),
                               training=type(settings.training)(**training))


def tuned_trees(config: Any, values: Mapping[str, Any]) -> Any:
    """``config`` (trees/settings.py TreesConfig) with tuned ``values`` (its own keys) laid over it."""
    fields = _fields(config)
    return type(config)(**{**fields, **{k: type(fields[k])(v) for k, v in values.items() if k in fields}})


def best_values(hyperparameters: Optional[Mapping[str, Any]]) -> Dict[str, Any]:
    """The values of TFX's best_hyperparameters (keras-tuner's HyperParameters config, as the
    Trainer's fn_args.hyperparameters holds it): {} for none."""
    if not hyperparameters:
        return {}
    values = hyperparameters.get("values", hyperparameters)
    return {k: v for k, v in values.items() if not str(k).startswith("tuner/")}


def _fields(section: Any) -> Dict[str, Any]:
    return {f.name: getattr(section, f.name) for f in dataclasses.fields(section)}


# A local run's console shows the Tuner's log lines that start so (local/process.py ProgressHandler).
PROGRESS = "tuning: "
TUNING_RUN_FILE = "tuning_run.json"  # the Tuner's record, beside TFX's tuner_results.json


def shown(values: Mapping[str, Any]) -> str:
    """'learning_rate=0.0031 hidden_layers=2 ...': values as the console and report show them."""
    return " ".join(f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}" for k, v in values.items())


def trial_line(done: int, max_trials: int, objective_name: str, trial: Mapping[str, Any]) -> str:
    """A trial's progress line: 'tuning: trial 2/10: val_auc 0.9412 (4 epochs, 12.3s) lr=...'."""
    return (f"{PROGRESS}trial {done}/{max_trials}: {objective_name} {trial['score']:.4f} "
            f"({trial['epochs']} epochs, {trial['seconds']:.1f}s) {shown(trial['values'])}")


# A trial replaces the config's own values only when it beats them by more than this many standard
# errors of the objective on the validation rows: the best of many trials on a few hundred rows
# beats the baseline by about two by chance alone (the expected maximum of 10-20 draws).
MARGIN_SE = 2.0


def keeps_config(baseline: Optional[Mapping[str, Any]], trials, direction: str) -> bool:
    """Whether the config's own values stay: no trial beat the ``baseline`` (fit_baseline's) by more
    than MARGIN_SE of its noise; False without a baseline or a finished trial."""
    if not baseline or not trials:
        return False
    best = (max if direction == "max" else min)(t["score"] for t in trials)
    gain = best - baseline["score"] if direction == "max" else baseline["score"] - best
    return gain <= MARGIN_SE * baseline["noise"]


def baseline_line(objective_name: str, baseline: Mapping[str, Any]) -> str:
    """'tuning: the config's own values: val_auc 0.7120 ±0.0210 on 522 rows (6 epochs, 3.1s)'."""
    return (f"{PROGRESS}the config's own values: {objective_name} {baseline['score']:.4f} ±{baseline['noise']:.4f} "
            f"on {baseline['rows']} validation rows ({baseline['epochs']} epochs, {baseline['seconds']:.1f}s)")


def tuning_record(tuning: TuningConfig, objective_name: str, direction: str, trials, seconds: float,
                  out_of_time: bool, failures=(), baseline: Optional[Mapping[str, Any]] = None) -> Dict[str, Any]:
    """The Tuner's record: its settings, the config's own values as a trial (``baseline``), every
    trial, the chosen one (the baseline when ``keeps_config``) and why the search ended."""
    ranked = sorted(trials, key=lambda t: t["score"], reverse=direction == "max")
    kept = keeps_config(baseline, trials, direction)
    return {"algorithm": tuning.algorithm, "objective": objective_name, "direction": direction,
            "max_trials": tuning.max_trials, "max_minutes": tuning.max_minutes, "seconds": round(seconds, 1),
            "ended_by": "max_minutes" if out_of_time else "max_trials", "trials": list(trials),
            "failed": list(failures), "baseline": dict(baseline) if baseline else None, "kept_config": kept,
            "margin_se": MARGIN_SE, "best": dict(baseline) if kept and baseline else (ranked[0] if ranked else None)}


def summary_line(record: Mapping[str, Any]) -> str:
    """'tuning: 3 trials in 41s, best val_auc 0.9431 (the config's own 0.9402 ±0.0051): learning_rate=...';
    or, when no trial beat the config's own values by enough, that the Trainer keeps them."""
    best = record.get("best")
    trials = len(record.get("trials", ()))
    budget = " (the max_minutes budget ended it)" if record.get("ended_by") == "max_minutes" else ""
    head = f"{PROGRESS}{trials} trials in {record.get('seconds', 0):.0f}s{budget}"
    if not best:
        return f"{head}, none finished"
    base = record.get("baseline") or {}
    if record.get("kept_config"):
        return (f"{head}: none beat the config's own values ({record['objective']} {base['score']:.4f}) by more than "
                f"{record.get('margin_se', MARGIN_SE):g} x its noise (±{base['noise']:.4f} on {base['rows']} "
                "validation rows): the Trainer keeps them")
    own = f" (the config's own {base['score']:.4f} ±{base['noise']:.4f})" if base else ""
    return f"{head}, best {record['objective']} {best['score']:.4f}{own}: {shown(best['values'])}"


def trees_summary_line(trees: Optional[Mapping[str, Any]]) -> str:
    """The trees' search (trainer/trees_search.py) in one line: 'trees: 9 trials in 12s, best val_auc
    0.8512 (the config's own 0.8420 ±0.0110): trees.max_depth=8 ...', or that the Trainer keeps the
    config's trees settings; '' where no trees were searched."""
    if not trees:
        return ""
    base, trials = trees["baseline"], len(trees.get("trials") or ())
    head = f"trees: {trials} trials in {trees.get('seconds', 0):.0f}s"
    if trees.get("kept_config"):
        return (f"{head}: none beat the config's own trees settings ({trees['objective']} {base['score']:.4f} "
                f"±{base['noise']:.4f} on {base['rows']} validation rows) by more than "
                f"{trees.get('margin_se', MARGIN_SE):g} x its noise: the Trainer keeps them")
    best = trees["best"]
    values = shown({TREES_PREFIX + k: v for k, v in best["values"].items()})
    return (f"{head}, best {trees['objective']} {best['score']:.4f} (the config's own {base['score']:.4f} "
            f"±{base['noise']:.4f}): {values}")
