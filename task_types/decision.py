"""A binary model's decision threshold: chosen on the validation split for an objective
(``evaluation.threshold``), served beside the probability as ``predicted_class``.

A model that ranks well can still decide badly: on ISLR's Caravan (6 % positives) a model with
AUC 0.715 predicted no positive at 0.5 and was blessed with recall 0. So the Trainer picks the
threshold where the validation split's objective is best:

``f1`` (default)   the threshold with the best F1 on the validation split;
``recall:R``       the highest threshold whose recall is at least R (e.g. ``recall:0.8``);
``precision:P``    the lowest threshold whose precision is at least P (the most recall at that
                   precision); the highest-precision one where none reaches P;
a number           that threshold, as written (e.g. ``0.5``).

Thresholds are on a grid of 1/``GRID`` (the Evaluator's histogram buckets,
components/histogram_metrics.py), so what serving decides and what the Evaluator measures
draw the same line. Pure numpy: the Trainer calls it on validation outputs.
"""
from __future__ import annotations

from typing import Any, Dict, Optional, Tuple

PREDICTED_CLASS = "predicted_class"   # serving_default's 0/1 output, predict's column
GRID = 10_000                         # calibration_histogram.DEFAULT_NUM_BUCKETS
OBJECTIVES = ("f1", "recall", "precision")
DEFAULT_OBJECTIVE = "f1"


def parse_objective(text: Any) -> Tuple[str, Optional[float]]:
    """('f1', None), ('recall', 0.8), ('precision', 0.9) or ('fixed', 0.35); ValueError naming the
    forms otherwise."""
    forms = "use f1, recall:R, precision:P (R, P in (0, 1]) or a fixed threshold in (0, 1)"
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        if 0.0 < float(text) < 1.0:
            return "fixed", float(text)
        raise ValueError(f"a fixed threshold must be in (0, 1); {forms}")
    kind, _, target = str(text).strip().partition(":")
    if not target:
        try:
            return parse_objective(float(kind))
        except ValueError:
            if kind == "f1":
                return "f1", None
            raise ValueError(forms) from None
    if kind not in ("recall", "precision"):
        raise ValueError(forms)
    try:
        value = float(target)
    except ValueError:
        raise ValueError(forms) from None
    if not 0.0 < value <= 1.0:
        raise ValueError(forms)
    return kind, value


def on_grid(threshold: float) -> float:
    return min(max(round(threshold * GRID), 1), GRID - 1) / GRID


def choose_threshold(probabilities, labels, objective: str = DEFAULT_OBJECTIVE) -> Dict[str, Any]:
    """The threshold for ``objective`` on these outputs and 0/1 labels, and what it gives there:
    {threshold, objective, why, precision, recall, f1, predicted_positive_rate, rows}."""
    import numpy as np

    kind, objective_target = parse_objective(objective)
    target = 0.0 if objective_target is None else objective_target  # None: f1's, which has none
    p = np.asarray(probabilities, np.float64).reshape(-1)
    y = np.asarray(labels, np.float64).reshape(-1)
    positives = float(y.sum())
    if kind == "fixed":
        threshold, why = on_grid(target), f"fixed at {target:g} (evaluation.threshold)"
    elif not len(p) or positives in (0.0, float(len(y))):
        threshold = 0.5
        why = "0.5: the validation rows hold one class only, so no threshold can be chosen on them"
    else:
        # every distinct grid point at or below a prediction is a candidate: P >= t calls it positive
        candidates = np.unique(np.clip(np.floor(p * GRID), 1, GRID - 1)) / GRID
        order = np.argsort(p)
        sorted_p, sorted_y = p[order], y[order]
        first = np.searchsorted(sorted_p, candidates, side="left")   # rows below each candidate
        called = len(p) - first                                     # predicted positive
        tp = positives - np.concatenate([[0.0], np.cumsum(sorted_y)])[first]
        precision = np.divide(tp, called, out=np.zeros_like(tp), where=called > 0)
        recall = tp / positives
        f1 = np.divide(2 * tp, called + positives)
        if kind == "f1":
            i = len(f1) - 1 - int(np.argmax(f1[::-1]))  # the highest of the best
            why = f"best F1 on the validation split ({f1[i]:.4f})"
        elif kind == "recall":
            ok = np.nonzero(recall >= target)[0]
            i = int(ok[-1]) if len(ok) else 0
            why = f"the highest with recall >= {target:g} on the validation split"
        else:
            ok = np.nonzero(precision >= target)[0]
            i = int(ok[0]) if len(ok) else int(np.argmax(precision))
            why = (f"the lowest with precision >= {target:g} on the validation split" if len(ok)
                   else f"no threshold reaches precision {target:g} on the validation split: the most precise")
        threshold = float(candidates[i])
    return dict(threshold=threshold, objective=str(objective), why=why, rows=int(len(p)),
                **measures(p, y, threshold))


def measures(p, y, threshold: float) -> Dict[str, Optional[float]]:
    """precision, recall, F1 and the share predicted positive at ``threshold`` (None: undefined)."""
    import numpy as np

    called = p >= threshold
    tp, n_called, positives = float(np.sum(y[called])), float(np.sum(called)), float(np.sum(y))
    precision = tp / n_called if n_called else None
    recall = tp / positives if positives else None
    f1 = 2 * tp / (n_called + positives) if n_called + positives else None
    return {"precision": precision, "recall": recall, "f1": f1,
            "predicted_positive_rate": n_called / len(p) if len(p) else None}
