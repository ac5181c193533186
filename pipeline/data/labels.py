"""What a label column holds, and whether the configured task can learn from it.

The pre-flight check (``pipeline.data.source.check_csv``) feeds every row's label cell to a
``LabelValues`` and ``check`` refuses, in one line naming the cause and the fix, a label that
would train silently wrong: a binary label with three values or without its positive value (a
string label without ``positive:`` used to become all zeros), a multi-class label with one
class, a regression label that is not a number, and (with ``data.missing_labels: fail``)
rows whose label is empty. ``tfxline init`` asks the same module which task a column's values
suggest (``infer_task``) and which of two values is the positive one (``usual_positive``).

No TensorFlow here: the pre-flight check refuses a bad file before TensorFlow loads.
"""
from __future__ import annotations

import collections
import dataclasses
import math
from typing import List, Optional, Tuple

from tfxline import task_types
from tfxline.task_types.base import LabelError  # noqa: F401 - raised here and by the task types' check_label
from tfxline.transforms import features as F

MISSING_LABELS = ("drop", "fail")
# The usual spellings of a two-valued label, positive first (compared without case)
POSITIVE_SPELLINGS: Tuple[Tuple[str, str], ...] = (
    ("yes", "no"), ("true", "false"), ("y", "n"), ("t", "f"), ("1", "0"), ("1.0", "0.0"),
    ("positive", "negative"), ("pos", "neg"))
DISTINCT_KEPT = 1000     # distinct values counted exactly; beyond, only "many"
MAX_CLASSES = 1000       # text with more distinct values than this is no label init takes


@dataclasses.dataclass
class LabelValues:
    """The values of one label column, fed a cell at a time."""
    DISTINCT_KEPT = DISTINCT_KEPT  # for the task types' messages (a class attribute, not a field)
    column: str
    counts: collections.Counter = dataclasses.field(default_factory=collections.Counter)
    missing: int = 0
    rows: int = 0
    many: bool = False            # more than DISTINCT_KEPT distinct values
    numeric: bool = True          # every present value parses as a number
    integral: bool = True         # ... and as a whole number
    first_text: str = ""          # the first value that is not a number

    def add(self, cell: str) -> None:
        self.rows += 1
        value = cell  # as CsvExampleGen reads it: only an empty cell is missing
        if not value:
            self.missing += 1
            return
        if value in self.counts or len(self.counts) < DISTINCT_KEPT:
            self.counts[value] += 1
        else:
            self.many = True
        if self.numeric:
            try:
                number = float(value)
            except ValueError:
                self.numeric = self.integral = False
                self.first_text = value
            else:
                self.integral = self.integral and math.isfinite(number) and number.is_integer()

    @property
    def present(self) -> int:
        return self.rows - self.missing

    @property
    def distinct(self) -> List[str]:
        """The values seen, most frequent first (all of them unless ``many``)."""
        return [v for v, _ in self.counts.most_common()]

    def shown(self, limit: int = 4) -> str:
        values = self.distinct
        more = len(values) - limit
        text = ", ".join(repr(v) for v in values[:limit])
        return text + (f" and {more if not self.many else 'many'} more" if more > 0 or self.many else "")


def usual_positive(values: List[str]) -> Optional[str]:
    """The positive one of two values spelled the usual way (yes/no, true/false, y/n, t/f,
    1/0, positive/negative), as written in the data; None for any other pair."""
    if len(values) != 2:
        return None
    lowered = {v.lower(): v for v in values}
    for positive, negative in POSITIVE_SPELLINGS:
        if set(lowered) == {positive, negative}:
            return lowered[positive]
    return None


def infer_task(values: LabelValues) -> Tuple[str, str]:
    """(task, why) for a label column: the first task type (in registry order) its values suggest:
    two values are binary; text with more is multi-class; a few whole numbers are classes; other
    numbers regression."""
    n = len(values.counts)
    if values.present == 0:
        raise LabelError(f"label column {values.column!r} is empty in every row; pick a column that holds the "
                         "label (--label COLUMN)")
    if n == 1 and not values.many:
        raise LabelError(f"label column {values.column!r} holds one value ({values.shown()}) in every labelled "
                         "row: there is nothing to learn; pick another --label, or add rows of the other classes")
    if not values.numeric and (values.many or n > MAX_CLASSES):
        raise LabelError(f"label column {values.column!r} holds text with more than {MAX_CLASSES} distinct values "
                         f"(e.g. {values.shown(3)}); pick a column of classes or numbers for --label")
    for task in task_types.REGISTERED:
        why = task.suggested_by(values)
        if why is not None:
            return task.name, why
    raise LabelError(f"label column {values.column!r} suits no task ({values.shown()}); pass --task")


def check(label: F.Label, values: Optional[LabelValues], missing_labels: str = "drop") -> None:
    """Raise LabelError when ``label`` (the config's) cannot train on ``values`` (the data's):
    the missing labels here, the rest by the label's task type (``check_label``)."""
    if values is None:
        return
    where = f"label column {values.column!r}"
    if values.missing and missing_labels == "fail":
        raise LabelError(f"{where} is empty in {values.missing} of {values.rows} rows and data.missing_labels is "
                         "fail; fill the labels, or set data.missing_labels: drop to leave those rows out")
    if values.present == 0:
        raise LabelError(f"{where} is empty in every row; fill the labels, or point features.label at another column")
    task_types.get(label.task).check_label(label, values, where)
