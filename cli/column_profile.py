"""What each column of a CSV holds: the statistics ``tfxline init`` decides a column's role from.

Pure Python and numpy over the cells as CsvExampleGen reads them (``data_source.read_columns``):
the kind of value (CsvExampleGen's type inference: int, float or string; empty when no cell has a
value), empty cells, distinct values, for numbers their range, skew and whether they are whole, and
for text how many values are ISO dates or date-times (transforms/dates.py) and how many words a
value holds (free text's lengths and vocabulary: cli/init_text.py), and whether whole numbers rise
with the row order (a counter or a time-ordered ID).
"""
from __future__ import annotations

import collections
import dataclasses
from typing import List, Optional, Sequence, Tuple

import numpy as np

from tfxline.cli import init_text
from tfxline.transforms import dates

INT, FLOAT, STRING, EMPTY = "int", "float", "string", "empty"
SKEWED = 1.0   # skewness above which non-negative numbers are log-scaled (inputs, a regression label)


@dataclasses.dataclass
class ColumnProfile:
    name: str
    kind: str                     # int | float | string | empty
    rows: int
    missing: int                  # empty cells
    distinct: int                 # distinct present values
    top: List[Tuple[str, int]]    # the most frequent values and their counts
    numbers: Optional[np.ndarray] = None  # int / float: the present values
    dated: int = 0                # text: present values that are ISO dates or date-times
    hours: int = 0                # ... their distinct hours of day (0: none has a time of day)
    date_range: Optional[Tuple[str, str]] = None  # ... the earliest and the latest, as written
    words: float = 0.0            # text: the median value's words (as the Transform tokenises)
    text: Optional[init_text.TextStats] = None  # free text (init_text.is_text): its lengths and vocabulary
    rising: float = 0.0           # numbers: the share of steps from one present value to the next that rise

    @property
    def present(self) -> int:
        return self.rows - self.missing

    @property
    def numeric(self) -> bool:
        return self.kind in (INT, FLOAT)

    @property
    def values(self) -> np.ndarray:
        """The present numbers (none for a text or empty column)."""
        return self.numbers if self.numbers is not None else np.zeros(0)

    @property
    def whole(self) -> bool:
        """Every value is a whole number (an int column, or floats such as 81.0)."""
        return self.numeric and bool(np.all(np.mod(self.values, 1) == 0))

    @property
    def skew(self) -> float:
        """Sample skewness of the numbers (0 for a constant column)."""
        x = self.values
        std = float(np.std(x)) if len(x) else 0.0
        return float(np.mean(((x - np.mean(x)) / std) ** 3)) if std > 0 else 0.0

    @property
    def is_text(self) -> bool:
        return self.text is not None

    @property
    def consecutive(self) -> bool:
        """Whole numbers, each once, filling their range: a row number."""
        x = self.values
        return (self.whole and self.distinct == self.present
                and float(np.max(x) - np.min(x)) + 1 == self.distinct)


def kind_of(cells: Sequence[str]) -> str:
    """The column's type as CsvExampleGen infers it (``column_type``): int when every value is
    an integer, float when every value is a number, else string."""
    values = [c for c in cells if c]
    if not values:
        return EMPTY
    try:
        for v in values:
            int(v)
        return INT
    except ValueError:
        pass
    try:
        for v in values:
            float(v)
        return FLOAT
    except ValueError:
        return STRING


def profile(name: str, cells: Sequence[str], top: int = 10) -> ColumnProfile:
    kind = kind_of(cells)
    counts = collections.Counter(c for c in cells if c)
    missing = len(cells) - sum(counts.values())
    numbers = None
    if kind in (INT, FLOAT):
        numbers = np.array([float(c) for c in cells if c], np.float64)
    column = ColumnProfile(name, kind, len(cells), missing, len(counts), counts.most_common(top), numbers)
    if kind == STRING:
        date_stats(column, counts)
        present = [c for c in cells if c]
        column.words = init_text.median_words(present)
        if init_text.is_text(kind, column.distinct, column.present, column.words):
            column.text = init_text.text_stats(present)
    elif numbers is not None and len(numbers) > 1:
        column.rising = float(np.mean(np.diff(numbers) > 0))
    return column


def date_stats(column: ColumnProfile, counts: collections.Counter) -> None:
    """Fill in how many of a text column's values are ISO dates or date-times (each distinct
    value parsed once)."""
    parsed = {}
    for value, n in counts.items():
        found = dates.parse(value)
        if found:
            parsed[value] = found
            column.dated += n
    if parsed:
        column.hours = len({t.hour for t, timed in parsed.values() if timed})
        column.date_range = (min(parsed, key=lambda v: parsed[v][0]), max(parsed, key=lambda v: parsed[v][0]))


def profile_table(header: Sequence[str], columns: Sequence[Sequence[str]]) -> List[ColumnProfile]:
    return [profile(name, cells) for name, cells in zip(header, columns)]
