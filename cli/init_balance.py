"""``tfxline init``'s look at how the rows are spread: repeated rows (how the split treats them),
a rare class (how the model is made to predict it), and classes too small for every split.

- **Duplicates.** A repeated row's copies are numbered and each split by its bytes and number
  (components/example_splits.py), so copies of a row spread over the splits as different rows
  do; ``data.split_key`` keeps a group's rows together where copies are one entity seen twice.
- **Imbalance.** A binary label whose rarer class is under ``RARE_SHARE`` of the rows: its
  threshold is chosen on the validation split for the best F1 (``evaluation.threshold: f1``, the
  default, written out), so the rare class is predicted and the probabilities stay calibrated.
  A multi-class label with a class under ``RARE_SHARE`` of the average class's share is named and
  left unweighted: its gate judges accuracy, which equal class weights trade away for the rare
  classes' recall (a 5-class survey table pushed at 0.650 unweighted was refused at 0.463 with
  ``balanced``, below the commonest class's share). Weighting is chosen where validation says it
  helps: the Tuner's space for a multi-class label holds ``class_weight: [none, balanced]``.
- **Small classes.** A class expected to have fewer than ``MIN_PER_SPLIT`` rows in the validation
  or eval split is named: its recall there is noise, or undefined.
"""
from __future__ import annotations

import collections
import dataclasses
from typing import Any, Dict, List, Sequence, Tuple

from tfxline import task_types
from tfxline.trainer.settings import MAX_CLASS_WEIGHT

RARE_SHARE = 0.2
MIN_PER_SPLIT = 5


@dataclasses.dataclass
class Balance:
    lines: List[str]                                   # init's lines, one per finding
    evaluation: Dict[str, Tuple[Any, str]] = dataclasses.field(default_factory=dict)  # key: (value, why)
    training: Dict[str, Tuple[Any, str]] = dataclasses.field(default_factory=dict)


def duplicate_rows(columns: Sequence[Sequence[str]]) -> int:
    """Rows equal in every cell of ``columns`` (the table's, less its row numbers and IDs) to an
    earlier row."""
    seen = set()
    repeats = 0
    for row in zip(*columns):
        if row in seen:
            repeats += 1
        else:
            seen.add(row)
    return repeats


def balance(label_cells: Sequence[str], task: str, positive: Any, buckets: Tuple[int, int, int],
            rows: int, repeats: int) -> Balance:
    out = Balance([])
    if repeats:
        out.lines.append(
            f"duplicates: {repeats} rows ({repeats / max(rows, 1):.1%}) repeat an earlier row; each copy is split "
            "as a row of its own, so copies spread over the splits as different rows do (data.split_key: "
            "COLUMN keeps each group's rows in one split)")
    kind = task_types.get(task)
    if not kind.predicts_classes:
        return out
    counts = collections.Counter(c for c in label_cells if c)
    total = sum(counts.values())
    if not total:
        return out
    if kind.decides:
        value, count = min(counts.items(), key=lambda kv: kv[1])
        if count < RARE_SHARE * total:
            why = (f"{value!r} is {count / total:.1%} of the labelled rows: the decision threshold is chosen on the "
                   "validation split for the best F1, not fixed at 0.5, so the rare class is predicted; AUC and "
                   "PR-AUC judge the ranking")
            out.lines.append(f"imbalance: {why}")
            out.evaluation["threshold"] = ("f1", why.split(":")[0] + ": threshold for the best F1 on validation "
                                           "(recall:R, precision:P or a number choose another)")
    else:
        average = total / len(counts)
        rare = sorted((v for v, c in counts.items() if c < RARE_SHARE * average), key=lambda v: counts[v])
        if rare:
            shown = ", ".join(f"{v!r} {counts[v] / total:.1%}" for v in rare[:5]) + (" ..." if len(rare) > 5 else "")
            why = (f"class(es) far below the others ({shown}; an average class {average / total:.1%}): rows kept "
                   "alike in the loss (class_weight: none), since the gate judges accuracy and equal class weights "
                   "trade it for the rare classes' recall; tuning.enabled: true tries balanced on validation")
            out.lines.append(f"imbalance: {why}")
            out.training["class_weight"] = ("none", "accuracy is gated: balanced (weights capped at "
                                            f"{MAX_CLASS_WEIGHT:g}x) favours rare classes' recall")
    smallest = min(buckets[1] or buckets[2], buckets[2]) / sum(buckets)
    small = sorted((v for v, c in counts.items() if c * smallest < MIN_PER_SPLIT), key=lambda v: counts[v])
    if small:
        shown = ", ".join(f"{v!r} ({counts[v]} rows)" for v in small[:5]) + (" ..." if len(small) > 5 else "")
        out.lines.append(
            f"small classes: {shown}: about {smallest:.0%} of a class's rows go to the smallest of the validation "
            f"and eval splits, under {MIN_PER_SPLIT} for these, so their figures there are noise or missing; more "
            "rows of them, or merging them into a neighbouring class, fixes it")
    return out
