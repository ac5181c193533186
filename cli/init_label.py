"""``tfxline init``'s label: its task (what the values suggest, or ``--task`` checked against them),
its spec as the task type reads it (a binary label's positive value, a skewed regression label
learnt in log space). The columns that give it away: cli/init_leaks.py.
"""
from __future__ import annotations

import shlex
from typing import Any, Dict, Optional, Sequence, Tuple

from tfxline import task_types
from tfxline.cli import column_profile as cp
from tfxline.cli.column_profile import ColumnProfile
from tfxline.pipeline.data import labels
from tfxline.task_types.binary import positive_value
from tfxline.transforms import features as F


class InitError(ValueError):
    """The data or the flags cannot make a config (one line: the problem and the fix)."""


def choose_label(column: ColumnProfile, cells: Sequence[str], task: Optional[str],
                 positive: Optional[str]) -> Tuple[Dict[str, Any], str, str]:
    """(the label's spec, its task, why)."""
    values = labels.LabelValues(column.name)
    for cell in cells:
        values.add(cell)
    try:
        inferred, why = labels.infer_task(values)
    except labels.LabelError as e:
        raise InitError(str(e)) from None
    if task is None:
        task, why = inferred, f"{why}; --task to choose another"
    else:
        check_task_flag(column.name, values, task, inferred)
        why = f"--task {task}"
    kind = task_types.get(task)
    if positive is not None and not kind.positive_label:
        raise InitError(f"--positive applies to a binary label, and {column.name!r} is {task} ({why}); "
                        "drop --positive, or pass --task binary")
    spec: Dict[str, Any] = {"name": column.name, "transform": kind.column_transform}
    if kind.positive_label:
        why += choose_positive(spec, values, positive)
    if kind.log_label:
        why += choose_log(spec, column)
    label = F.Label(**{k: v for k, v in spec.items()})
    try:
        labels.check(label, values, "drop")
    except labels.LabelError as e:
        raise InitError(str(e)) from None
    if values.missing:
        why += f"; {values.missing} rows without a label are left out (data.missing_labels: drop)"
    return spec, task, why


def choose_positive(spec: Dict[str, Any], values: labels.LabelValues, positive: Optional[str]) -> str:
    """Set the label's positive value (``--positive``, else the usual spelling of a two-valued
    label; none for 0/1) in ``spec``; what to add to why."""
    name = spec["name"]
    chosen = positive if positive is not None else labels.usual_positive(values.distinct)
    numeric01 = values.numeric and {float(v) for v in values.counts} == {0.0, 1.0}
    if chosen is None and not numeric01:
        shown = " and ".join(repr(v) for v in values.distinct[:2]) if len(values.counts) == 2 else values.shown()
        raise InitError(f"label column {name!r} holds {shown}: which is the positive class? pass "
                        f"--positive VALUE (e.g. --positive {shlex.quote(values.distinct[-1])})")
    if positive is not None and positive_value(
            F.Label(name=name, transform=spec["transform"], positive=positive), values) not in values.counts:
        raise InitError(f"--positive {shlex.quote(positive)} is not a value of column {name!r}, which holds "
                        f"{values.shown()}; pass one of them as the data writes it")
    if chosen is not None and not numeric01:
        spec["positive"] = positive_value(F.Label(name=name, transform=spec["transform"], positive=chosen),
                                                  values)
        how = " (--positive)" if positive is not None else " (its usual spelling)"
        return f"; positive {spec['positive']!r}" + how
    if chosen is not None and positive is not None:
        spec["positive"] = float(chosen) if "." in str(chosen) else int(float(chosen))
    return ""


def choose_log(spec: Dict[str, Any], column: ColumnProfile) -> str:
    """Learn a skewed non-negative label in log space (``log: true`` in ``spec``); what to add to why."""
    numbers = column.numbers if column.numeric else None
    if numbers is not None and len(numbers) and float(min(numbers)) >= 0 and column.skew > cp.SKEWED:
        # measured with bench/tables.py (docs/performance.md), seeds 42 and 7: in log space SLID's
        # wages (skew 1.05) RMSE -0.5 / -1.5 %, diamonds' price (1.6) +-0.9 % (a tie), MAE 3-7 %
        # lower on all four; sklearn's diabetes target (skew 0.4, below SKEWED) RMSE +7 %
        spec["log"] = True
        return f"; learnt as log(1 + {column.name}) (non-negative, skew {column.skew:.2f}), served in its unit"
    return ""


def check_task_flag(column: str, values: labels.LabelValues, task: str, inferred: str) -> None:
    """--task against the label's values, refused in init's own terms (its flags)."""
    problem = task_types.get(task).flag_problem(column, values)
    if problem:
        raise InitError(f"--task {task}: {problem}; drop --task (the values make it {inferred}), "
                        "or pick another --label")
