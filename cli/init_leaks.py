"""``tfxline init``'s leak check: the columns that give the label away, each judged alone.

A column computed from the label, or recorded after it, makes a model that is perfect on the
data and useless at prediction time; kept, it also blocks every honest model after it (the gate
compares with the leaky one serving). Tried on public tables: openintro's ``loans_full_schema``
(``sub_grade`` names ``grade``: accuracy 1.0000 blessed), AER's ``CreditCard``
(``expenditure > 0`` implies ``card = yes``: AUC 0.993). Two tests, each on one column alone:

- **a one-column model on binned values**: the column's values (text) or up to ``MAX_BINS``
  quantile bins (numbers), a missing value a bin of its own, each bin predicting its majority
  class (accuracy; binary: AUC of the bins' positive rates) or its mean (R²). At ``PERFECT``
  or above against a non-trivial baseline, the column is **left out**. Bins must hold ``MIN_PER_BIN``
  rows on average, so a near-unique column cannot score by memorising rows.
- **a one-sided perfect split**: a number off its floor or ceiling (``x > c`` where every other row
  is ``c``), or a column's being empty or filled, holds one class only and ``COVERAGE`` of that
  class's rows (at least ``MIN_SIDE`` of all rows): ``expenditure > 0`` ⇒ yes (the event recorded
  after the label's). **Left out** too. A cut inside a number's range is a pattern, not a rule, and
  is kept: Stat2Data's ``Kershaw`` (every pitch under 78.2 mph a curveball, 99.8 % of them) lost
  its two speed columns to it, accuracy 0.978 against the trees' 0.994 with them.

Numbers that follow a numeric or binary label closely (|r| >= ``WARN_CORRELATION``) but pass
both tests are kept with a warning: only the user knows whether they exist at prediction time.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

from tfxline import task_types
from tfxline.cli import column_profile as cp

PERFECT = 0.99           # a one-column model's accuracy, AUC or R² at or above: a leak
COVERAGE = 0.9           # a pure side holding this share of its class's rows: a leak
MIN_SIDE = 0.1           # ... and at least this share of all rows
MAX_BINS = 100
MIN_PER_BIN = 5
WARN_CORRELATION = 0.95  # |r| with a numeric or binary label: kept, with a warning
MIN_ROWS = 50


@dataclasses.dataclass
class Leak:
    why: str
    leave_out: bool


def find_leaks(header: Sequence[str], columns: Sequence[Sequence[str]], label: str, task: str,
               positive: Any = None) -> Dict[str, Leak]:
    """{column: Leak} for the columns that give ``label`` away."""
    cells = columns[header.index(label)]
    rows = [i for i, c in enumerate(cells) if c]
    if len(rows) < MIN_ROWS:
        return {}
    kind = task_types.get(task)
    labelled = [cells[i] for i in rows]
    numbers = kind.label_as_numbers(labelled, positive)
    y = np.array(numbers, np.float64) if numbers is not None else None
    classes = np.unique(labelled, return_inverse=True)[1] if kind.predicts_classes else None
    found: Dict[str, Leak] = {}
    for name, column in zip(header, columns):
        if name == label:
            continue
        values = [column[i] for i in rows]
        numeric = cp.kind_of(values) in (cp.INT, cp.FLOAT)
        bins = _bins(values, numeric)
        why = None
        if bins is not None:
            why = _one_column_model(bins, classes, y, kind.name == "binary")
        if why is None and classes is not None:
            why = _pure_side(values, numeric, classes, labelled)
        if why is not None:
            found[name] = Leak(why, True)
        elif numeric and y is not None:
            r = _correlation(values, y)
            if r is not None and abs(r) >= WARN_CORRELATION:
                found[name] = Leak(f"it follows the label closely (r = {r:.2f}); if it is computed from the label "
                                   "or known only after it, remove it from the inputs", False)
    return found


def _bins(values: List[str], numeric: bool) -> Optional[np.ndarray]:
    """Each row's bin (0: missing), or None where the column has too many values to bin."""
    present = np.array([bool(v) for v in values])
    if numeric:
        x = np.array([float(v) if v else np.nan for v in values])
        distinct = np.unique(x[present])
        edges = distinct if len(distinct) <= MAX_BINS else np.unique(
            np.quantile(x[present], np.linspace(0, 1, MAX_BINS + 1)[1:-1]))
        out = np.where(present, np.searchsorted(edges, np.nan_to_num(x), side="right") + 1, 0)
    else:
        out = np.unique(np.array(values, dtype=object).astype(str), return_inverse=True)[1] + 1
        out = np.where(present, out, 0)
    used = len(np.unique(out))
    return out if 1 < used <= len(values) / MIN_PER_BIN else None


def _one_column_model(bins: np.ndarray, classes: Optional[np.ndarray], y: Optional[np.ndarray],
                      binary: bool) -> Optional[str]:
    if classes is not None:
        k = int(classes.max()) + 1
        table = np.bincount(bins * k + classes, minlength=(int(bins.max()) + 1) * k).reshape(-1, k)
        accuracy = table.max(axis=1).sum() / len(bins)
        commonest = np.bincount(classes).max() / len(bins)
        if commonest < PERFECT and accuracy >= PERFECT:
            return f"its value alone names the class in {accuracy:.1%} of rows (the commonest class is {commonest:.1%})"
        if binary and y is not None:
            rate = table[:, 1] / np.maximum(table.sum(axis=1), 1) if k == 2 else None
            auc = _auc(rate[bins], y) if rate is not None else None
            if auc is not None and auc >= PERFECT:
                return f"its values alone rank the label with AUC {auc:.3f}"
        return None
    if y is None or np.std(y) == 0:
        return None
    means = np.bincount(bins, weights=y) / np.maximum(np.bincount(bins), 1)
    r2 = 1.0 - float(np.sum((y - means[bins]) ** 2) / np.sum((y - y.mean()) ** 2))
    return f"its values alone explain the label with R² {r2:.3f}" if r2 >= PERFECT else None


def _pure_side(values: List[str], numeric: bool, classes: np.ndarray, labelled: List[str]) -> Optional[str]:
    """'x > c' or 'empty' / 'filled' holding one class only and most of its rows, in words."""
    n = len(values)
    present = np.array([bool(v) for v in values])
    sides = [("empty", ~present), ("filled", present)]
    if numeric and present.sum() >= MIN_ROWS:
        x = np.array([float(v) for v, p in zip(values, present) if p])
        order = np.argsort(x, kind="stable")
        xs, cs = x[order], classes[present][order]
        rows = np.nonzero(present)[0][order]
        for k in np.unique(cs):
            for ascending in (True, False):
                seq = cs if ascending else cs[::-1]
                xseq = xs if ascending else xs[::-1]
                length = int(np.argmax(seq != k)) if np.any(seq != k) else len(seq)
                while 0 < length < len(seq) and xseq[length] == xseq[length - 1]:
                    length -= 1  # a cut between two distinct values
                if length and length < len(seq) and np.all(xseq[length:] == xseq[length]):
                    mask = np.zeros(n, bool)
                    mask[(rows if ascending else rows[::-1])[:length]] = True
                    rule = f"< {xseq[length]:g}" if ascending else f"> {xseq[length]:g}"
                    sides.append((rule, mask))
    for rule, mask in sides:
        inside = classes[mask]
        if len(inside) < MIN_SIDE * n or len(np.unique(inside)) != 1:
            continue
        k = inside[0]
        share = len(inside) / np.sum(classes == k)
        if share >= COVERAGE and np.sum(classes == k) < n:
            value = labelled[int(np.nonzero(mask)[0][0])]
            where = f"where it is {rule}" if rule in ("empty", "filled") else f"where it is {rule}"
            return (f"every row {where} is class {value!r}, and they are {share:.1%} of that class's rows "
                    "(a rule, not a pattern)")
    return None


def _auc(scores: np.ndarray, y: np.ndarray) -> Optional[float]:
    """scikit-learn's ROC AUC (as the binary task's main metric), None with one class only."""
    from sklearn.metrics import roc_auc_score

    return float(roc_auc_score(y, scores)) if 0 < y.sum() < len(y) else None


def _correlation(values: List[str], y: np.ndarray) -> Optional[float]:
    pairs = [(float(v), t) for v, t in zip(values, y) if v]
    if len(pairs) < MIN_ROWS:
        return None
    x, t = np.array(pairs).T
    if np.std(x) == 0 or np.std(t) == 0:
        return None
    return float(np.corrcoef(x, t)[0, 1])
