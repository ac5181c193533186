"""The TFLite model's gate: its outputs against the SavedModel's on the same eval rows, and its
line in the run summary (serving/tflite.py builds and converts the model).

``none`` / ``dynamic`` / ``float16``: the largest difference of an output (regression: in
standard deviations of the SavedModel's predictions, the task type's ``output_difference``);
``int8``: the task's main metric (auc, accuracy: the drop; rmse: the relative increase).
"""
from __future__ import annotations

import dataclasses
from typing import Any, Dict, Mapping

import numpy as np

from tfxline import task_types

# The default tolerance per mode (serving.tflite_tolerance: 0 takes it), above what bench/tflite.py
# measures on the taxi, penguin and penguin-mass models (docs/serving.md). float16 strays more
# than dynamic on the taxi model: its float constants (the means that fill a missing value)
# become float16 too, and a filled value that lands across a bucket boundary moves a row.
DEFAULT_TOLERANCE = {"none": 1e-4, "dynamic": 0.1, "float16": 0.1, "int8": 0.02}


@dataclasses.dataclass
class Parity:
    mode: str
    rows: int
    max_abs_diff: float      # regression: in standard deviations of the SavedModel's predictions
    metric: str
    saved_model_metric: float
    tflite_metric: float
    tolerance: float
    ok: bool
    reason: str = ""

    def to_dict(self) -> Dict[str, Any]:
        return dataclasses.asdict(self)


def parity(mode: str, task: str, saved: np.ndarray, tflite: np.ndarray, labels: np.ndarray,
           tolerance: float = 0.0) -> Parity:
    tolerance = tolerance or DEFAULT_TOLERANCE[mode]
    kind = task_types.get(task)
    view = kind.view
    diff = kind.output_difference(saved, tflite)
    max_diff = float(np.max(diff)) if diff.size else 0.0
    finite = bool(np.all(np.isfinite(tflite)))
    saved_metric = kind.main_metric_value(saved, labels)
    tflite_metric = kind.main_metric_value(tflite, labels) if finite else float("nan")
    result = Parity(mode, len(labels), round(max_diff, 6), view.main, round(saved_metric, 6),
                    round(tflite_metric, 6), tolerance, True)
    if not finite:
        result.ok, result.reason = False, "the TFLite model output NaN or infinity"
    elif mode != "int8":
        if max_diff > tolerance:
            result.ok, result.reason = False, (
                f"its outputs differ from the SavedModel's by up to {max_diff:.6g}{kind.difference_unit} on "
                f"{len(labels)} eval rows (allowed {tolerance:g})")
    elif view.higher_is_better and saved_metric - tflite_metric > tolerance:
        result.ok, result.reason = False, (
            f"{view.main} {tflite_metric:.4f} is {saved_metric - tflite_metric:.4f} below the SavedModel's "
            f"{saved_metric:.4f} on {len(labels)} eval rows (allowed drop {tolerance:g})")
    elif not view.higher_is_better and tflite_metric > saved_metric * (1 + tolerance):
        result.ok, result.reason = False, (
            f"{view.main} {tflite_metric:.4f} is {100 * (tflite_metric / saved_metric - 1):.1f}% above the "
            f"SavedModel's {saved_metric:.4f} on {len(labels)} eval rows (allowed increase {100 * tolerance:g}%)")
    return result


def summary_line(meta: Mapping[str, Any]) -> str:
    """'model.tflite (dynamic, 107 KB): auc 0.9561 vs the SavedModel's 0.9561, largest output
    difference 0.0187; TFLite builtins only' from push metadata's ``tflite``."""
    p = meta["parity"]
    flex = ", ".join(meta.get("flex_ops") or []) or ""
    return (f"{meta['file']} ({meta['mode']}, {meta['bytes'] / 1024:.0f} KB): {p['metric']} {p['tflite_metric']:.4f} "
            f"vs the SavedModel's {p['saved_model_metric']:.4f}, largest output difference {p['max_abs_diff']:.3g} "
            f"on {p['rows']} eval rows; " + (f"Select TF ops: {flex}" if flex else "TFLite builtins only"))
