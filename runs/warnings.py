"""A run's warnings about what its numbers mean, in its summary and its report:

- **suspect columns**: what ``tfxline init`` found giving the label away (``evaluation.suspect_columns``,
  which it writes), repeated while an input still reads the column (init leaves such a column out;
  a user who adds it back sees why it was left out on every run);
- **too good to be true**: an eval metric near perfect against a non-trivial baseline (AUC, accuracy
  or R² at ``TOO_GOOD`` or above, accuracy with the commonest class under it), naming the columns
  the model leans on most (the Trainer's permutation importance, trainer/importance.py): a column
  computed from the label, or recorded after it, is the usual cause;
- **classes the eval split lacks**: a multi-class model's classes with no eval row (no recall).
"""
from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Sequence

TOO_GOOD = 0.99
NEAR_PERFECT = {"auc": TOO_GOOD, "accuracy": TOO_GOOD, "r2": TOO_GOOD}


def suspect_lines(suspects: Mapping[str, str], read: Sequence[str]) -> List[str]:
    return [f"{column} gives the label away ({why}; tfxline init); the model reads it: remove it from "
            f"features.inputs unless it is known when a prediction is asked for"
            for column, why in suspects.items() if column in read]


def too_good(metrics: Mapping[str, Any], leans_on: Optional[Sequence[Sequence[Any]]]) -> str:
    """'' or one line: the near-perfect metric, and the columns the model leans on."""
    for name, floor in NEAR_PERFECT.items():
        value = metrics.get(name)
        if not isinstance(value, (int, float)) or value < floor:
            continue
        if name == "accuracy":
            lift = metrics.get("accuracy_lift")
            if isinstance(lift, (int, float)) and value - lift >= TOO_GOOD:
                continue  # the commonest class alone is that accurate: not a sign of a leak
            if "auc" in metrics:
                continue  # binary: judged on its AUC
        leaned = ", ".join(f"{c} ({d:.3g} lost without it)" for c, d in (leans_on or [])[:3])
        return (f"{name} {value:.4f} is too good to be true for most data: check that no input is computed from the "
                f"label or known only after it" + (f"; the model leans most on {leaned}" if leaned else ""))
    return ""


def missing_classes(metrics: Mapping[str, Any], classes: Sequence[str]) -> str:
    """'' or one line: the classes the model learnt (its label vocabulary) that no eval row holds
    (multi-class: their recall is missing; the split had too few of their rows)."""
    if not any(k.startswith("recall[") for k in metrics):
        return ""
    missing = [c for c in classes if f"recall[{c}]" not in metrics]
    if not missing:
        return ""
    shown = ", ".join(repr(c) for c in missing[:5]) + (" ..." if len(missing) > 5 else "")
    return (f"the eval split holds no row of class(es) {shown}: nothing says how the model does on them; more rows "
            "of them (or data.eval_buckets) bring them into the eval split")


def run_warnings(suspects: Mapping[str, str], read: Sequence[str], metrics: Dict[str, Any],
                 leans_on: Optional[Sequence[Sequence[Any]]], classes: Sequence[str] = (),
                 leaks_possible: bool = True) -> List[str]:
    """``leaks_possible``: False for an image model (its one input is the image; copies of a file
    share a split), so near-perfect accuracy there is not a sign of a leaked column."""
    lines = [too_good(metrics, leans_on) if leaks_possible else "", missing_classes(metrics, classes)]
    return suspect_lines(suspects, read) + [line for line in lines if line]
