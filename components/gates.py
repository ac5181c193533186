"""The blessing gates' vocabulary: for each gated metric, the config keys that set its thresholds
and whether its floor is exclusive ("above", not "at least"). pipeline/eval_config.py builds the
thresholds with it (``lower_bound``); components/tfma_results.py words a failed one with it and
names the key that would let the model through; ``value_rule`` states a rule as the config reads.

TFMA's value thresholds are inclusive: ``return metric >= lower_bound and metric <= upper_bound``
(tensorflow_model_analysis/evaluators/metrics_validator.py:64, TFMA 0.47.1, and the same line in
its source at 0.49.0.dev; releases before 0.27 compared with ``>``). An exclusive floor ``x`` is
therefore written as the next double above ``x`` (``strictly_above``): no double lies between
the two, so the gate passes exactly the values ``> x`` (and, under a strict comparison, all but
that one double).
"""
from __future__ import annotations

import dataclasses
import math
from typing import Dict, Optional, Tuple

from tfxline import task_types


@dataclasses.dataclass(frozen=True)
class Gate:
    value_key: str = ""      # the config key of its value threshold (a floor or a ceiling)
    change_key: str = ""     # the config key of its change threshold against the serving model
    exclusive: bool = False  # its floor is exclusive: the metric must be above it
    trivial: str = ""        # what a metric at that floor means, when the floor is the default
    # (the value of a model that learnt nothing, how near it a value is "next to nothing"): AUC 0.5, no lift, R² 0
    chance: Optional[Tuple[float, float]] = None


GATES: Dict[str, Gate] = {
    "auc": Gate("evaluation.min_auc", "evaluation.max_auc_drop", chance=(0.5, 0.05)),
    "binary_accuracy": Gate("evaluation.min_accuracy"),
    "accuracy": Gate("evaluation.min_accuracy", "evaluation.max_accuracy_drop"),
    "accuracy_lift": Gate("evaluation.min_accuracy_lift", exclusive=True,
                          trivial="no better than always predicting the commonest class", chance=(0.0, 0.01)),
    "r2": Gate("evaluation.min_r2", exclusive=True, trivial="no better than always predicting the mean",
               chance=(0.0, 0.02)),
    "rmse": Gate("evaluation.max_rmse", "evaluation.max_error_increase"),
    "mae": Gate("evaluation.max_mae"),
    # binary: the share of eval rows called positive at the model's threshold, strictly inside (0, 1);
    # no number moves it: evaluation.threshold moves the threshold (``one_class`` says so)
    "predicted_positive_rate": Gate(exclusive=True),
}

# The gate every task applies with no number set (its task type's default_gate): a model no
# better than the trivial one (chance ranking, the commonest class, the mean) is refused.
DEFAULT_GATE: Dict[str, str] = {t.name: t.default_gate for t in task_types.REGISTERED}


def strictly_above(x: float) -> float:
    """The inclusive lower bound that passes exactly the values above ``x``."""
    return math.nextafter(x, math.inf)


def lower_bound(metric: str, floor_value: float) -> float:
    """The TFMA lower bound of a floor set to ``floor_value`` on ``metric``: one step above it
    for an exclusive floor, the number itself for an "at least" one."""
    return strictly_above(floor_value) if GATES[metric].exclusive else floor_value


def floor(metric: str, lower_bound: float) -> float:
    """The config's number behind a lower bound (an exclusive floor's bound is one step above it)."""
    gate = GATES.get(metric)
    return math.nextafter(lower_bound, -math.inf) if gate and gate.exclusive else lower_bound


def value_rule(metric: str, value_threshold) -> str:
    """A GenericValueThreshold in words: '> 0', '>= 0.55', '<= 30', '>= 0.1 and <= 0.9'; '' when
    it has no bound."""
    rules = []
    if value_threshold.HasField("lower_bound"):
        exclusive = GATES.get(metric, Gate()).exclusive
        value = floor(metric, value_threshold.lower_bound.value)
        if not exclusive and value > round(value, 9):  # one step above a number: a strict floor (a
            exclusive, value = True, round(value, 9)  # histogram metric's 'both classes predicted', > 0)
        rules.append(f"{'>' if exclusive else '>='} {value:g}")
    if value_threshold.HasField("upper_bound"):
        value = value_threshold.upper_bound.value
        rules.append(f"< {round(value, 9):g}" if value < round(value, 9) else f"<= {value:g}")
    return " and ".join(rules)


# what a model near its gate's chance value is told to look at (tfma_results.describe_failure)
LOOK_AT = ("it learnt next to nothing from its inputs: look at the report's training curves (a validation loss "
           "that never fell) and the columns it leans on; a column of free text declared as a vocabulary learns "
           "nothing from its whole values (transform: text reads its words; tfxline init chooses it)")


def learnt_nothing(metric: str, value: float) -> bool:
    """``value`` of ``metric`` is about what a model that learnt nothing scores (a coin flip's AUC)."""
    chance = GATES[metric].chance if metric in GATES else None
    return chance is not None and abs(value - chance[0]) <= chance[1]


def remedy(metric: str, kind: str) -> str:
    """'; to bless it anyway lower evaluation.min_auc': the key that moves a failed gate of
    ``kind`` ('floor', 'ceiling' or 'change'), and which way; '' for a metric no key gates."""
    gate = GATES.get(metric)
    key = gate and (gate.change_key if kind == "change" else gate.value_key)
    if not key:
        return ""
    return f"; to bless it anyway {'lower' if kind == 'floor' else 'raise'} {key}"


def default_gate_keys(task: Optional[str] = None) -> str:
    """The key of the gate a task always has ('evaluation.min_accuracy_lift'); when the task is
    unknown, every task's, named by task ('evaluation.min_auc (binary), ... or ...')."""
    if task in DEFAULT_GATE:
        return GATES[DEFAULT_GATE[task]].value_key
    keys = [f"{GATES[m].value_key} ({t})" for t, m in DEFAULT_GATE.items()]
    return ", ".join(keys[:-1]) + " or " + keys[-1]


def one_class(value: float, threshold) -> str:
    """A model that predicts one class only at its threshold on the eval split, in words, with
    the key that changes its threshold."""
    which = "no row positive" if value <= 0.0 else "every row positive"
    at = f"its threshold {threshold:.4g}" if isinstance(threshold, float) else "its threshold"
    return (f"the model calls {which} at {at} on the eval split (predicted_positive_rate {value:.4f}), so it "
            "predicts one class only; choose its threshold for another objective: set evaluation.threshold "
            "(f1, recall:R, precision:P or a number)")
