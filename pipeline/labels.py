"""What a label column holds, and whether the configured task can learn from it.

The pre-flight check (``pipeline.data_source.check_csv``) feeds every row's label cell to a
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

from transforms import features as F

MISSING_LABELS = ("drop", "fail")
# The usual spellings of a two-valued label, positive first (compared without case)
POSITIVE_SPELLINGS: Tuple[Tuple[str, str], ...] = (
    ("yes", "no"), ("true", "false"), ("y", "n"), ("t", "f"), ("1", "0"), ("1.0", "0.0"),
    ("positive", "negative"), ("pos", "neg"))
DISTINCT_KEPT = 1000     # distinct values counted exactly; beyond, only "many"
MAX_CLASSES = 1000       # more distinct values than this is not a multi-class label
MULTICLASS_MAX_NUMBERS = 10  # whole numbers with at most this many values: classes, not a quantity
MIN_ROWS_PER_CLASS = 10  # fewer labelled rows a class on average: too few to learn (or to see in every split)


class LabelError(ValueError):
    """The label column cannot train the configured task."""


@dataclasses.dataclass
class LabelValues:
    """The values of one label column, fed a cell at a time."""
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
    """(task, why) for a label column: two values are binary; text with more is multi-class;
    a few whole numbers (at most MULTICLASS_MAX_NUMBERS) are classes; other numbers regression."""
    n = len(values.counts)
    if values.present == 0:
        raise LabelError(f"label column {values.column!r} is empty in every row; pick a column that holds the "
                         "label (--label COLUMN)")
    if n == 1 and not values.many:
        raise LabelError(f"label column {values.column!r} holds one value ({values.shown()}) in every labelled "
                         "row: there is nothing to learn; pick another --label, or add rows of the other classes")
    if n == 2 and not values.many:
        return F.TASK_BINARY, f"two values, {values.shown()}"
    if not values.numeric:
        if values.many or n > MAX_CLASSES:
            raise LabelError(f"label column {values.column!r} holds text with more than {MAX_CLASSES} distinct values "
                             f"(e.g. {values.shown(3)}); pick a column of classes or numbers for --label")
        return F.TASK_MULTICLASS, f"{n} text values (classes)"
    if values.integral and not values.many and n <= MULTICLASS_MAX_NUMBERS:
        return F.TASK_MULTICLASS, f"{n} whole-number values (classes; --task regression if they are amounts)"
    return F.TASK_REGRESSION, ("numbers with " + ("many" if values.many else str(n)) + " distinct values")


def check(label: F.Label, values: Optional[LabelValues], missing_labels: str = "drop") -> None:
    """Raise LabelError when ``label`` (the config's) cannot train on ``values`` (the data's)."""
    if values is None:
        return
    where = f"label column {values.column!r}"
    if values.missing and missing_labels == "fail":
        raise LabelError(f"{where} is empty in {values.missing} of {values.rows} rows and data.missing_labels is "
                         "fail; fill the labels, or set data.missing_labels: drop to leave those rows out")
    if values.present == 0:
        raise LabelError(f"{where} is empty in every row; fill the labels, or point features.label at another column")
    task = label.task
    n = len(values.counts)
    if task == F.TASK_BINARY and label.transform == "binary":
        positive = binary_positive(label, values)
        if values.many or n > 2:
            raise LabelError(f"{where} is a binary label but holds {'many' if values.many else n} values "
                             f"({values.shown()}); keep two values, or make it transform: class_vocabulary "
                             "(multi-class) or regression")
        if positive not in values.counts:
            others = "the values " + values.shown() if n > 1 else "only " + values.shown()
            fix = (f"set features.label.positive to the positive one (e.g. --set 'features.label.positive=\"{values.distinct[0]}\"')"
                   if label.positive is None else "set features.label.positive to a value the column holds")
            raise LabelError(f"{where} holds {others}, none of them the positive value {positive!r}"
                             f"{'' if label.positive is not None else ' (the default with no positive: set)'}; {fix}")
        if n < 2:
            raise LabelError(f"{where} holds only {values.shown()}: a binary model needs both classes; add rows of "
                             "the other class")
        if values.numeric and label.positive is None and {float(v) for v in values.counts} != {0.0, 1.0}:
            raise LabelError(f"{where} holds {values.shown()}, not 0 and 1; say which is positive: set "
                             f"features.label.positive (e.g. --set 'features.label.positive=\"{values.distinct[0]}\"')")
    elif task == F.TASK_MULTICLASS:
        if n < 2 and not values.many:
            raise LabelError(f"{where} holds one class ({values.shown()}): a multi-class model needs two or more; "
                             "add rows of other classes, or pick another label column")
        if values.many or n * MIN_ROWS_PER_CLASS > values.present:
            raise LabelError(f"{where} holds {'over ' + str(DISTINCT_KEPT) if values.many else n} classes in "
                             f"{values.present} labelled rows, under {MIN_ROWS_PER_CLASS} rows a class: too few to learn "
                             "each (a class missing from the train split cannot be predicted); pick a label with fewer "
                             "classes, or make it regression if the values are amounts")
        if values.numeric and not values.integral:
            raise LabelError(f"{where} is a class label (class_vocabulary) but holds fractional numbers (e.g. "
                             f"{values.shown(2)}); make it transform: regression, or write classes as words or "
                             "whole numbers")
    elif task == F.TASK_REGRESSION and not values.numeric:
        raise LabelError(f"{where} is a regression label but holds text, {values.first_text!r}; make it "
                         "transform: class_vocabulary (classes) or binary, or fix the values")


def binary_positive(label: F.Label, values: LabelValues) -> str:
    """The positive value of a binary label as it is written in the data: ``positive`` when
    set (a number matched by value, so 1 finds '1.0'), else '1'."""
    wanted = "1" if label.positive is None else str(label.positive)
    if wanted in values.counts:
        return wanted
    if values.numeric:
        try:
            number = float(wanted)
        except ValueError:
            return wanted
        for value in values.counts:
            if float(value) == number:
                return value
    return wanted
