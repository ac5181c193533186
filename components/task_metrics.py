"""What each task's evaluation shows downstream: its headline metrics in order, the main metric
(the one ``tfxline runs``, the report's history chart and the worst-slices list follow) and
which way it is better. The console, the report, ``tfxline runs`` and the push metadata read
the task's view here; ``pipeline/eval_config.py`` decides which metrics exist, per task.

Multi-class runs also show each class's recall, from TFMA's confusion matrix
(``tfma_results.class_recall``), as ``recall[<class>]`` metrics.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Dict, Mapping, Optional, Tuple

from transforms import features as F

CLASS_RECALL = "recall[{}]"


@dataclasses.dataclass(frozen=True)
class TaskView:
    task: str
    main: str                  # the run's one number
    higher_is_better: bool
    headline: Tuple[str, ...]  # the console's and push metadata's metrics, in order

    def main_value(self, metrics: Mapping[str, Any]) -> Optional[float]:
        return metrics.get(self.main)

    def headline_metrics(self, metrics: Mapping[str, Any]) -> Dict[str, Any]:
        """The headline metrics present, then per-class recall (multi-class) in class order."""
        out = {k: metrics[k] for k in self.headline if k in metrics}
        out.update({k: v for k, v in metrics.items() if k.startswith("recall[")})
        return out


VIEWS: Dict[str, TaskView] = {
    F.TASK_BINARY: TaskView(F.TASK_BINARY, "auc", True, (
        "auc", "accuracy", "binary_accuracy", "pr_auc", "precision", "recall", "loss", "example_count")),
    F.TASK_MULTICLASS: TaskView(F.TASK_MULTICLASS, "accuracy", True, (
        "accuracy", "accuracy_lift", "loss", "example_count")),
    F.TASK_REGRESSION: TaskView(F.TASK_REGRESSION, "rmse", False, (
        "rmse", "mae", "r2", "mean_label", "mean_prediction", "example_count")),
}


def view(task: str = "", metrics: Optional[Mapping[str, Any]] = None) -> TaskView:
    """The view of ``task``; without one (a run recorded before tasks were, a compiled run's
    bare TFMA output), the task whose main metric the metrics hold."""
    if task in VIEWS:
        return VIEWS[task]
    metrics = metrics or {}
    for candidate in (F.TASK_BINARY, F.TASK_REGRESSION, F.TASK_MULTICLASS):
        if VIEWS[candidate].main in metrics:
            return VIEWS[candidate]
    if "mean_absolute_error" in metrics:  # regression runs recorded before rmse existed
        return VIEWS[F.TASK_REGRESSION]
    return VIEWS[F.TASK_BINARY]
