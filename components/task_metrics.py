"""What each task's evaluation shows downstream: its headline metrics in order, the main metric
(the one ``tfxline runs``, the report's history chart and the worst-slices list follow) and
which way it is better. The console, the report, ``tfxline runs`` and the push metadata read
the task's view here; each task type (task_types/) defines its own, and its TFMA metrics.

Multi-class runs also show each class's recall, from TFMA's confusion matrix
(``tfma_results.class_recall``), as ``recall[<class>]`` metrics.
"""
from __future__ import annotations

from typing import Any, Dict, Mapping, Optional

from tfxline import task_types
from tfxline.task_types import TaskView

CLASS_RECALL = "recall[{}]"

VIEWS: Dict[str, TaskView] = {t.name: t.view for t in task_types.REGISTERED}

# Regression runs recorded before rmse existed name their main metric this way
_LEGACY_MAIN = {"mean_absolute_error": task_types.TASK_REGRESSION}


def view(task: str = "", metrics: Optional[Mapping[str, Any]] = None) -> TaskView:
    """The view of ``task``; without one (a run recorded before tasks were, a compiled run's
    bare TFMA output), the task whose main metric the metrics hold (binary's when none does)."""
    if task in VIEWS:
        return VIEWS[task]
    metrics = metrics or {}
    for candidate in VIEWS.values():
        if candidate.main in metrics:
            return candidate
    for name, legacy_task in _LEGACY_MAIN.items():
        if name in metrics:
            return VIEWS[legacy_task]
    return VIEWS[task_types.TASK_BINARY]
