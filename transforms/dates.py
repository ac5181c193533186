"""ISO dates and date-times in a text column: what ``transform: datetime`` reads
(transforms/features.py) and what ``tfxline init`` recognises (cli/init_inputs.py), by one pattern.

A value is ``YYYY-MM-DD``, optionally followed by ``T`` or a space and ``hh:mm``, then optionally
``:ss`` and a fraction (``.5``), then optionally ``Z`` or an offset (``+hh:mm``, ``-hhmm``). The
offset is accepted and not applied: the parts are the wall-clock time as written. The fraction of a
second is dropped. A value that does not match, or names no real day or time (2013-02-30, 24:00),
counts as missing.

The parts (``PARTS``): ``hour`` of day 0-23 (0 for a date without a time), ``weekday`` 0 (Monday)
to 6 (Sunday), ``month`` 0 (January) to 11, categories; ``days`` since 1970-01-01 with the time
of day as its fraction (negative before 1970), a number. In the graph (``parse_tensor``) the
string ops are TensorFlow's and the calendar is integer arithmetic (days from the civil date,
H. Hinnant's algorithm), so it needs no table and no Python at serving time.
"""
from __future__ import annotations

import datetime
import re
from typing import Any, Dict, Optional, Tuple

PARTS: Dict[str, Optional[int]] = {"hour": 24, "weekday": 7, "month": 12, "days": None}  # categories; None: number
PATTERN = r"(\d{4})-(\d{2})-(\d{2})(?:[ T](\d{2}):(\d{2})(?::(\d{2})(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?"
_VALUE = re.compile(PATTERN)
_MONTH_DAYS = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
EPOCH_DAYS = 719468   # days from 0000-03-01 to 1970-01-01 in the proleptic Gregorian calendar


def parse(text: str) -> Optional[Tuple[datetime.datetime, bool]]:
    """(the value as written, whether it has a time of day), or None: not an ISO date (-time)."""
    m = _VALUE.fullmatch(text)
    if not m:
        return None
    try:
        year, month, day, hour, minute, second = (int(g or 0) for g in m.groups())
        value = datetime.datetime(year, month, day, hour, minute, second)
    except ValueError:  # no such day or time
        return None
    return value, m.group(4) is not None


def parse_tensor(text: Any) -> Tuple[Dict[str, Any], Any]:
    """({part: rank-1 tensor}, which values parsed) of a rank-1 string tensor; where a value did
    not parse, the parts are those of 1970-01-01 00:00:00."""
    import tensorflow as tf

    matched = tf.strings.regex_full_match(text, PATTERN)
    safe = tf.where(matched, text, "1970-01-01")
    # every group as a number: an absent time field becomes "0" ("0" + the empty group)
    fields = tf.strings.regex_replace(safe, f"^{PATTERN}$", r"\1 \2 \3 0\4 0\5 0\6")
    numbers = tf.reshape(tf.strings.to_number(tf.strings.split(fields).flat_values, tf.int64), [-1, 6])
    year, month, day, hour, minute, second = tf.unstack(numbers, 6, axis=1)
    leap = tf.logical_and(tf.equal(year % 4, 0), tf.logical_or(tf.not_equal(year % 100, 0), tf.equal(year % 400, 0)))
    month_days = tf.gather(tf.constant(_MONTH_DAYS, tf.int64), tf.clip_by_value(month - 1, 0, 11))
    month_days += tf.cast(tf.logical_and(leap, tf.equal(month, 2)), tf.int64)
    valid = tf.reduce_all(tf.stack([matched, month >= 1, month <= 12, day >= 1, day <= month_days,
                                    hour < 24, minute < 60, second < 60], axis=1), axis=1)
    days = days_from_civil(year, month, day)
    seconds = hour * 3600 + minute * 60 + second
    parts = {"hour": hour, "weekday": tf.math.floormod(days + 3, 7), "month": month - 1,  # 1970-01-01: a Thursday
             "days": tf.cast(days, tf.float64) + tf.cast(seconds, tf.float64) / 86400.0}
    return parts, valid


def days_from_civil(year, month, day):
    """Days since 1970-01-01 of proleptic Gregorian dates (int64 tensors): years counted from
    March, so a leap day is the last of its year; 400-year eras of 146,097 days."""
    import tensorflow as tf

    year = year - tf.cast(month <= 2, tf.int64)
    era = year // 400
    year_of_era = year - era * 400
    day_of_year = (153 * ((month + 9) % 12) + 2) // 5 + day - 1
    day_of_era = year_of_era * 365 + year_of_era // 4 - year_of_era // 100 + day_of_year
    return era * 146097 + day_of_era - EPOCH_DAYS
