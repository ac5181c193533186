"""``tfxline init``'s inputs: each column but the label becomes features (free text its n-grams,
ISO dates and date-times their parts, other text a vocabulary, few whole numbers categories, skewed
non-negative numbers log-scaled, many-valued numbers also quantile buckets) or is left out (empty,
constant, an ID), with the reason; and the slices.

An ID is found by what it holds, not only by its name: text unique per row (one word a value: a
row of free text is unique too), whole numbers each once filling their range (a row number) or
rising with the row order (a counter, a time-ordered message ID), or a mostly empty column with an
ID's name (``user_id_str``, ``caseid``).
"""
from __future__ import annotations

import dataclasses
import re
from typing import Any, Dict, List, Optional, Sequence, Tuple

from tfxline.cli import column_profile as cp
from tfxline.cli import init_text
from tfxline.cli.column_profile import ColumnProfile
from tfxline.cli.init_label import InitError

MAX_CATEGORY_NUMBERS = 20    # whole numbers with at most this many values are categories
MAX_CODE = 39                # ... and those all in [0, MAX_CODE] are their own index (identity)
MAX_VOCABULARY = 1000        # a text column's top_k
NEAR_UNIQUE = 0.5            # text with more distinct values than this share of rows: an ID
BUCKETS_FROM = 50            # numbers with at least this many distinct values also get quantile buckets
MAX_SLICES = 2
DATE_SHARE = 0.99            # text with at least this share of its values ISO dates (-times): their parts
DATE_PARTS = {"hour": "hour of day", "weekday": "day of week", "month": "month", "days": "days since 1970 (zscore)"}
_NAME = re.compile(r"[^A-Za-z0-9_]+")
_ID_NAME = re.compile(r"(?i)^(id|.*[_ .-]id|rownames|row_?names|index|unnamed: ?\d+|(.*[_ .-])?ids?_?str|.*[_ .-]ids"
                      r"|[a-z]*(case|user|row|record|message|msg|item|product|customer|order|session|doc|tweet|post"
                      r"|account|transaction|patient|subject|person|review|comment|thread|parent)_?id)$")
RISING = 0.99                # whole numbers, nearly each once, rising at this share of steps: an ID
MOSTLY_EMPTY = 0.5


@dataclasses.dataclass
class Decision:
    column: str
    what: str           # e.g. "vocabulary (top 4)", "left out"
    why: str
    kept_as: List[Dict[str, Any]] = dataclasses.field(default_factory=list)  # a leak's specs, were it kept

    def line(self) -> str:
        return f"  {self.column}: {self.what} ({self.why})"


def feature_name(column: str, taken: set) -> str:
    """A name Keras and TensorFlow accept (letters, digits, _), unique among ``taken``."""
    base = _NAME.sub("_", column).strip("_") or "column"
    if base[0].isdigit():
        base = f"c_{base}"
    name, i = base, 2
    while name in taken:
        name, i = f"{base}_{i}", i + 1
    taken.add(name)
    return name


def choose_inputs(profiles: Sequence[ColumnProfile], label: str, taken: set,
                  leaks: Optional[Dict[str, str]] = None) -> Tuple[List[Dict[str, Any]], List[Decision], List[str]]:
    """(input feature specs, one decision per column, slice columns). ``leaks``: {column: why}
    for the columns that give the label away (cli/init_leaks.py), left out with what they
    would have been."""
    inputs: List[Dict[str, Any]] = []
    decisions: List[Decision] = []
    slices: List[str] = []
    for p in profiles:
        if p.name == label:
            continue
        out, why = input_for(p)
        leaks = leaks or {}
        if out and p.name in leaks:
            decisions.append(Decision(p.name, "left out", leaks[p.name], kept_as=[_named(s, set(taken)) for s in out]))
            continue
        if not out:
            decisions.append(Decision(p.name, "left out", why))
            continue
        inputs += [_named(spec, taken) for spec in out]
        decisions.append(Decision(p.name, " + ".join(describe(s) for s in out_specs(inputs, p.name)), why))
        if p.kind == cp.STRING and 2 <= p.distinct <= 10 and len(slices) < MAX_SLICES:
            slices.append(p.name)
    if not inputs:
        raise InitError("no column but the label can be an input (each was left out: empty, constant, an ID or "
                        "giving the label away); add feature columns to the CSV")
    return inputs, decisions, slices


def _named(spec: Dict[str, Any], taken: set) -> Dict[str, Any]:
    """``input_for``'s spec as the config writes it: a name Keras takes (reserved in ``taken``),
    ``column:`` where the column's own differs."""
    spec = dict(spec)
    source = spec.pop("column")
    named = {"name": feature_name(spec.pop("name", source), taken), **spec}
    if named["name"] != source:
        named["column"] = source
    return named


ID_REASONS = ("an ID", "nearly unique")  # how input_for's reasons for a row number or an ID start


def identifies_rows(d: Decision) -> bool:
    """The column was left out as a row number or an ID (each row's own value)."""
    return d.what == "left out" and not d.kept_as and d.why.startswith(ID_REASONS)


def out_specs(inputs: Sequence[Dict[str, Any]], column: str) -> List[Dict[str, Any]]:
    return [s for s in inputs if s.get("column", s["name"]) == column]


def code_input(p: ColumnProfile) -> Dict[str, Any]:
    """Small non-negative whole numbers (survey answers, category codes): each its own index, no
    vocabulary to learn (``identity``); one more index past the largest for a missing value or a
    code the data never held."""
    top = int(max(p.values))
    return {"column": p.name, "transform": "identity", "num_buckets": top + 2, "default": top + 1}


def describe(spec: Dict[str, Any]) -> str:
    t = spec["transform"]
    if t == "vocabulary":
        return f"vocabulary (top {spec['top_k']})"
    if t == "identity":
        return f"codes 0-{spec['num_buckets'] - 2} as their index"
    if t == "bucketize":
        return f"{spec['num_buckets']} quantile buckets"
    if t == "datetime":
        return DATE_PARTS[spec["part"]]
    if t == "text":
        return init_text.describe(spec)
    return t


def input_for(p: ColumnProfile) -> Tuple[List[Dict[str, Any]], str]:
    """The feature specs of one column (none: left out) and why."""
    empty = f", {p.missing} empty ({p.missing / p.rows:.1%})" if p.missing else ""
    if p.kind == cp.EMPTY:
        return [], "empty in every row"
    if p.distinct == 1:
        return [], f"one value in every row ({p.top[0][0]!r}{empty})"
    if _ID_NAME.match(p.name) and (p.distinct > MAX_CATEGORY_NUMBERS or p.missing >= MOSTLY_EMPTY * p.rows):
        return [], f"an ID by its name ({p.distinct} values{empty})"
    if p.kind == cp.STRING and p.dated >= DATE_SHARE * p.present:
        return date_inputs(p, empty)
    if p.text is not None:
        return init_text.text_input(p.name, p.text, empty)
    if p.kind == cp.STRING:
        if p.distinct == p.present and p.present >= 20:
            return [], "an ID: unique per row"
        if p.distinct > NEAR_UNIQUE * p.present and p.distinct > 100:
            return [], f"nearly unique per row: {p.distinct} values in {p.present} rows"
        top = min(p.distinct, MAX_VOCABULARY)
        size = "low" if p.distinct <= 20 else "high"
        return ([{"column": p.name, "transform": "vocabulary", "top_k": top, "oov_buckets": 1}],
                f"text, {size} cardinality: {p.distinct} values{empty}")
    if p.consecutive and p.present >= 20:
        return [], "an ID: whole numbers, each once, filling their range"
    if p.whole and p.present >= 20 and p.distinct >= 0.95 * p.present and p.rising >= RISING:
        return [], (f"an ID: whole numbers, {p.distinct} values in {p.present} rows, rising with the row order "
                    f"({p.rising:.1%} of steps): a counter or a time-ordered ID says nothing of rows to come")
    if p.whole and p.distinct <= MAX_CATEGORY_NUMBERS:
        written = " written as floats" if p.kind == cp.FLOAT else ""
        if 0 <= float(min(p.values)) and float(max(p.values)) <= MAX_CODE:
            return [code_input(p)], f"{p.distinct} whole-number values{written}: codes{empty}"
        return ([{"column": p.name, "transform": "vocabulary", "top_k": p.distinct, "oov_buckets": 1}],
                f"{p.distinct} whole-number values{written}: categories{empty}")
    specs: List[Dict[str, Any]] = []
    skew = p.skew
    if float(min(p.values)) >= 0 and skew > cp.SKEWED:
        specs.append({"column": p.name, "transform": "log_zscore"})
        why = f"skewed non-negative numbers (skew {skew:.1f})"
    else:
        specs.append({"column": p.name, "transform": "zscore"})
        why = f"numbers (skew {skew:.1f})"
    if p.distinct >= BUCKETS_FROM:
        buckets = int(min(32, max(8, p.present // 100)))
        specs.append({"column": p.name, "name": f"{p.name}_bucket", "transform": "bucketize", "num_buckets": buckets})
        why += f", {p.distinct} values: also quantile buckets"
    if p.whole and p.kind == cp.FLOAT:
        why += ", whole numbers written as floats"
    return specs, why + empty


def date_inputs(p: ColumnProfile, empty: str) -> Tuple[List[Dict[str, Any]], str]:
    """A date (-time) column's parts (transform datetime): the hour when its times vary, the day of
    week, the month, and the time as days since 1970; a vocabulary of dates would not generalise
    to the days after the training data."""
    parts = (["hour"] if p.hours > 1 else []) + ["weekday", "month", "days"]
    specs = [{"column": p.name, "name": f"{p.name}_{part}", "transform": "datetime", "part": part} for part in parts]
    kind = "date-times" if p.hours else "dates"
    parsed = "all parse" if p.dated == p.present else f"{p.present - p.dated} do not parse: missing"
    first, last = p.date_range or ("?", "?")  # set wherever a value parsed (column_profile.date_stats)
    return specs, (f"ISO {kind} from {first} to {last} ({parsed}): their parts, "
                   f"not a vocabulary of {p.distinct} values{empty}")
