"""The task types, one module each (task_types/base.py documents the interface), and their registry.

A new task type is a module here, its tests, and one entry in ``REGISTERED``: the feature spec's
label transforms, ``tfxline init --task`` and every layer above find it through ``get``.
"""
from __future__ import annotations

from typing import Dict, Optional, Tuple

from tfxline.task_types import binary, multiclass, regression
from tfxline.task_types.base import LabelError, TaskType, TaskView, UnknownTask

# The registry, in the order `tfxline init` tries a label's values and messages list the names
REGISTERED: Tuple[TaskType, ...] = (binary.TASK, multiclass.TASK, regression.TASK)

TASK_BINARY, TASK_MULTICLASS, TASK_REGRESSION = binary.NAME, multiclass.NAME, regression.NAME
NAMES: Tuple[str, ...] = tuple(t.name for t in REGISTERED)
LABEL_TRANSFORMS: Tuple[str, ...] = tuple(x for t in REGISTERED for x in t.label_transforms)
_BY_NAME: Dict[str, TaskType] = {t.name: t for t in REGISTERED}
_BY_LABEL_TRANSFORM: Dict[str, TaskType] = {x: t for t in REGISTERED for x in t.label_transforms}

__all__ = ["LABEL_TRANSFORMS", "LabelError", "NAMES", "REGISTERED", "TASK_BINARY", "TASK_MULTICLASS",
           "TASK_REGRESSION", "TaskType", "TaskView", "UnknownTask", "find", "for_label_transform", "get"]


def get(name: str) -> TaskType:
    """The task type called ``name``; UnknownTask for any other name."""
    task = _BY_NAME.get(name)
    if task is None:
        raise UnknownTask(f"unknown task {name!r}; use one of {', '.join(NAMES)}")
    return task


def find(name: Optional[str]) -> Optional[TaskType]:
    """The task type called ``name``, or None (a run recorded before tasks were, an unknown name)."""
    return _BY_NAME.get(name or "")


def for_label_transform(transform: str) -> TaskType:
    """The task type a features.label transform makes; UnknownTask for a transform none owns."""
    task = _BY_LABEL_TRANSFORM.get(transform)
    if task is None:
        raise UnknownTask(f"features.label: unknown transform {transform!r}; use one of {', '.join(LABEL_TRANSFORMS)}")
    return task
