"""``tfxline init``: a config and a schema for a CSV nobody here has seen, decided from its columns.

    tfxline init --data CSV --label COLUMN [--task binary|multiclass|regression] [--positive VALUE] [--dir DIR]

writes ``DIR/config.yaml`` (commented, like the packaged configs) and ``DIR/schema.pbtxt`` (the
draft ``tfxline schema draft`` writes: it accepts the file it was drafted from), and prints one
line per decision and why. ``tfxline run --config DIR/config.yaml`` then trains, blesses and
pushes on the first try. The rules (docs/your-data.md states them):

- the task from the label's values (pipeline/labels.py), or ``--task``; a two-valued text label
  needs a usual spelling (yes/no, true/false, y/n, 1/0, positive/negative) or ``--positive``;
  a skewed non-negative regression label is learnt in log space (``log: true``);
- each other column: left out when empty, constant, or unique per row (an ID); text is a
  vocabulary; whole numbers with few values are categories; skewed non-negative numbers are
  log-scaled; numbers with many values also get quantile buckets;
- the batch, the validation split and the training length from the row count; slices from
  low-cardinality text columns.
"""
from __future__ import annotations

import dataclasses
import difflib
import math
import os
import re
import shlex
from typing import Any, Dict, List, Optional, Sequence, TextIO, Tuple

from cli import column_profile as cp
from pipeline import data_source, labels
from runs import files
from cli.column_profile import ColumnProfile
from transforms import features as F

CONFIG_FILE, SCHEMA_FILE = "config.yaml", "schema.pbtxt"
MAX_CATEGORY_NUMBERS = 20    # whole numbers with at most this many values are categories
MAX_VOCABULARY = 1000        # a text column's top_k
NEAR_UNIQUE = 0.5            # text with more distinct values than this share of rows: an ID
SKEWED = 1.0                 # skewness above which non-negative numbers are log-scaled
BUCKETS_FROM = 50            # numbers with at least this many distinct values also get quantile buckets
MAX_SLICES = 2
_NAME = re.compile(r"[^A-Za-z0-9_]+")
_ID_NAME = re.compile(r"(?i)^(id|.*[_ .-]id|rownames|row_?names|index|unnamed: ?\d+)$")


class InitError(ValueError):
    """The data or the flags cannot make a config (one line: the problem and the fix)."""


@dataclasses.dataclass
class Decision:
    column: str
    what: str           # e.g. "vocabulary (top 4)", "left out"
    why: str

    def line(self) -> str:
        return f"  {self.column}: {self.what} ({self.why})"


@dataclasses.dataclass
class Plan:
    name: str
    data_path: str
    rows: int
    labelled: int
    label: Dict[str, Any]
    task: str
    task_why: str
    inputs: List[Dict[str, Any]]
    decisions: List[Decision]
    slices: List[str]
    buckets: Tuple[int, int, int]
    batch_size: int
    epochs: int
    patience: int
    eval_steps: int
    sizing_why: str


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
    if positive is not None and task != F.TASK_BINARY:
        raise InitError(f"--positive applies to a binary label, and {column.name!r} is {task} ({why}); "
                        "drop --positive, or pass --task binary")
    spec: Dict[str, Any] = {"name": column.name}
    if task == F.TASK_BINARY:
        spec["transform"] = "binary"
        chosen = positive if positive is not None else labels.usual_positive(values.distinct)
        numeric01 = values.numeric and {float(v) for v in values.counts} == {0.0, 1.0}
        if chosen is None and not numeric01:
            shown = " and ".join(repr(v) for v in values.distinct[:2]) if len(values.counts) == 2 else values.shown()
            raise InitError(f"label column {column.name!r} holds {shown}: which is the positive class? pass "
                            f"--positive VALUE (e.g. --positive {shlex.quote(values.distinct[-1])})")
        if positive is not None and labels.binary_positive(
                F.Label(name=column.name, transform="binary", positive=positive), values) not in values.counts:
            raise InitError(f"--positive {shlex.quote(positive)} is not a value of column {column.name!r}, which holds "
                            f"{values.shown()}; pass one of them as the data writes it")
        if chosen is not None and not numeric01:
            spec["positive"] = labels.binary_positive(F.Label(name=column.name, transform="binary", positive=chosen), values)
            why += f"; positive {spec['positive']!r}" + (" (--positive)" if positive is not None else " (its usual spelling)")
        elif chosen is not None and positive is not None:
            spec["positive"] = float(chosen) if "." in str(chosen) else int(float(chosen))
    elif task == F.TASK_MULTICLASS:
        spec["transform"] = "class_vocabulary"
    else:
        spec["transform"] = "regression"
        if column.numeric and len(column.numbers) and float(min(column.numbers)) >= 0 and column.skew > SKEWED:
            # measured with bench/tables.py (docs/performance.md), seeds 42 and 7: in log space SLID's
            # wages (skew 1.05) RMSE -0.5 / -1.5 %, diamonds' price (1.6) +-0.9 % (a tie), MAE 3-7 %
            # lower on all four; sklearn's diabetes target (skew 0.4, below SKEWED) RMSE +7 %
            spec["log"] = True
            why += f"; learnt as log(1 + {column.name}) (non-negative, skew {column.skew:.2f}), served in its unit"
    label = F.Label(**{k: v for k, v in spec.items()})
    try:
        labels.check(label, values, "drop")
    except labels.LabelError as e:
        raise InitError(str(e)) from None
    if values.missing:
        why += f"; {values.missing} rows without a label are left out (data.missing_labels: drop)"
    return spec, task, why


def check_task_flag(column: str, values: labels.LabelValues, task: str, inferred: str) -> None:
    """--task against the label's values, refused in init's own terms (its flags)."""
    n = "many" if values.many else len(values.counts)
    fix = f"drop --task (the values make it {inferred}), or pick another --label"
    if task == F.TASK_BINARY and (values.many or len(values.counts) > 2):
        raise InitError(f"--task binary: column {column!r} holds {n} values ({values.shown()}), a binary label two; {fix}")
    if task == F.TASK_REGRESSION and not values.numeric:
        raise InitError(f"--task regression: column {column!r} holds text ({values.first_text!r}); {fix}")
    if task == F.TASK_MULTICLASS and values.numeric and not values.integral:
        raise InitError(f"--task multiclass: column {column!r} holds fractional numbers ({values.shown(2)}); {fix}")


def choose_inputs(profiles: Sequence[ColumnProfile], label: str,
                  taken: set) -> Tuple[List[Dict[str, Any]], List[Decision], List[str]]:
    """(input feature specs, one decision per column, slice columns)."""
    inputs: List[Dict[str, Any]] = []
    decisions: List[Decision] = []
    slices: List[str] = []
    for p in profiles:
        if p.name == label:
            continue
        out, why = input_for(p)
        if not out:
            decisions.append(Decision(p.name, "left out", why))
            continue
        for spec in out:
            source = spec.pop("column")
            spec = {"name": feature_name(spec.pop("name", source), taken), **spec}
            if spec["name"] != source:
                spec["column"] = source
            inputs.append(spec)
        decisions.append(Decision(p.name, " + ".join(describe(s) for s in out_specs(inputs, p.name)), why))
        if p.kind == cp.STRING and 2 <= p.distinct <= 10 and len(slices) < MAX_SLICES:
            slices.append(p.name)
    if not inputs:
        raise InitError("no column but the label can be an input (each was left out: empty, constant or an ID); "
                        "add feature columns to the CSV")
    return inputs, decisions, slices


LEAK_CORRELATION = 0.95   # |r| with a numeric label (or a binary one as 0/1) at or above: suspect
LEAK_PURITY = 0.99        # share of a text column's rows whose value alone names their class


def leaks(header: Sequence[str], columns: Sequence[Sequence[str]], label: str, task: str,
          positive: Any = None) -> Dict[str, str]:
    """Columns that give the label away (computed from it, or recorded after it), for a warning
    beside their decision: numbers that follow a numeric or binary label almost exactly, and
    text whose value alone names the class. Not left out: the user knows which are real."""
    import numpy as np

    cells = columns[header.index(label)]
    rows = [i for i, c in enumerate(cells) if c]
    if len(rows) < 50:
        return {}
    if task == F.TASK_REGRESSION:
        y = np.array([float(cells[i]) for i in rows])
    elif task == F.TASK_BINARY:
        wanted = str(positive) if positive is not None else "1"
        y = np.array([1.0 if cells[i] == wanted or _same_number(cells[i], wanted) else 0.0 for i in rows])
    else:
        y = None
    found: Dict[str, str] = {}
    for name, column in zip(header, columns):
        if name == label:
            continue
        kind = cp.kind_of(column)
        if kind in (cp.INT, cp.FLOAT) and y is not None:
            both = [(k, float(column[i])) for k, i in enumerate(rows) if column[i]]
            if len(both) >= 50:
                x = np.array([v for _, v in both])
                t = y[[k for k, _ in both]]
                if np.std(x) > 0 and np.std(t) > 0:
                    r = float(np.corrcoef(x, t)[0, 1])
                    if abs(r) >= LEAK_CORRELATION:
                        found[name] = (f"it follows the label almost exactly (r = {r:.2f}); if it is computed from "
                                       "the label or known only after it, remove it from the inputs")
        elif kind == cp.STRING and task != F.TASK_REGRESSION:
            groups: Dict[str, Dict[str, int]] = {}
            for i in rows:
                if column[i]:
                    groups.setdefault(column[i], {}).setdefault(cells[i], 0)
                    groups[column[i]][cells[i]] += 1
            total = sum(sum(g.values()) for g in groups.values())
            pure = sum(max(g.values()) for g in groups.values())
            classes = len({c for g in groups.values() for c in g})
            if total >= 50 and 1 < len(groups) <= total / 5 and classes > 1 and pure >= LEAK_PURITY * total:
                found[name] = (f"its value alone names the class in {pure / total:.1%} of rows; if it is "
                               "recorded from the label or after it, remove it from the inputs")
    return found


def _same_number(a: str, b: str) -> bool:
    try:
        return float(a) == float(b)
    except ValueError:
        return False


def out_specs(inputs: Sequence[Dict[str, Any]], column: str) -> List[Dict[str, Any]]:
    return [s for s in inputs if s.get("column", s["name"]) == column]


def describe(spec: Dict[str, Any]) -> str:
    t = spec["transform"]
    if t == "vocabulary":
        return f"vocabulary (top {spec['top_k']})"
    if t == "bucketize":
        return f"{spec['num_buckets']} quantile buckets"
    return t


def input_for(p: ColumnProfile) -> Tuple[List[Dict[str, Any]], str]:
    """The feature specs of one column (none: left out) and why."""
    empty = f", {p.missing} empty ({p.missing / p.rows:.1%})" if p.missing else ""
    if p.kind == cp.EMPTY:
        return [], "empty in every row"
    if p.distinct == 1:
        return [], f"one value in every row ({p.top[0][0]!r}{empty})"
    if _ID_NAME.match(p.name) and p.distinct > MAX_CATEGORY_NUMBERS:
        return [], f"an ID by its name ({p.distinct} values)"
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
    if p.whole and p.distinct <= MAX_CATEGORY_NUMBERS:
        written = " written as floats" if p.kind == cp.FLOAT else ""
        return ([{"column": p.name, "transform": "vocabulary", "top_k": p.distinct, "oov_buckets": 1}],
                f"{p.distinct} whole-number values{written}: categories{empty}")
    specs: List[Dict[str, Any]] = []
    skew = p.skew
    if float(min(p.numbers)) >= 0 and skew > SKEWED:
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


def sizing(labelled: int) -> Dict[str, Any]:
    """The split, batch and training length for ``labelled`` rows: enough optimizer steps on
    small data (about 2,000, at least 20 a pass), a validation split large enough to stop on."""
    buckets = (6, 2, 2) if labelled < 5000 else (7, 1, 2)
    total = sum(buckets)
    train = max(1, labelled * buckets[0] // total)
    validation = max(1, labelled * buckets[1] // total)
    batch = 32
    while batch < 512 and train / (batch * 2) >= 50:
        batch *= 2
    steps = max(1, math.ceil(train / batch))
    epochs = int(min(200, max(10, math.ceil(2000 / steps))))
    patience = 5 if labelled < 20_000 else 3
    eval_steps = int(min(500, max(1, math.ceil(validation / batch))))
    why = (f"{labelled} labelled rows: split {buckets[0]}:{buckets[1]}:{buckets[2]} (~{validation} validation rows); "
           f"batch {batch} gives {steps} steps a pass, up to {epochs} passes (early stopping after {patience} "
           f"without improvement); validation reads all of it ({eval_steps} batches)")
    return {"buckets": buckets, "batch_size": batch, "epochs": epochs, "patience": patience,
            "eval_steps": eval_steps, "why": why}


def plan(data_path: str, label: str, task: Optional[str] = None, positive: Optional[str] = None) -> Tuple[Plan, List[str], List[List[str]]]:
    """Decide everything from the data (raises InitError / DataError); also returns the columns
    read, for the schema."""
    files = data_source.locate(data_path, "csv").files
    header, columns = data_source.read_columns(files)
    if label not in header:
        close = [h for h in header if h.lower() == label.lower()] or difflib.get_close_matches(label, header, 1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise InitError(f"--label {label!r} is not a column of {data_path}; {hint}pass one of: {', '.join(header)}")
    profiles = cp.profile_table(header, columns)
    by_name = dict(zip(header, profiles))
    label_cells = columns[header.index(label)]
    label_spec, chosen_task, task_why = choose_label(by_name[label], label_cells, task, positive)
    taken: set = set()
    label_name = feature_name(label, taken)
    if label_name != label:  # a name Keras takes; the column keeps its own
        label_spec = {"name": label_name, "column": label, **{k: v for k, v in label_spec.items() if k != "name"}}
    inputs, decisions, slices = choose_inputs(profiles, label, taken)
    suspects = leaks(header, columns, label, chosen_task, label_spec.get("positive"))
    for d in decisions:
        if d.column in suspects and d.what != "left out":
            d.why += f"; WARNING: {suspects[d.column]}"
    labelled = sum(1 for c in label_cells if c)
    size = sizing(labelled)
    # one pipeline per table and label: two projects on one CSV never share runs or a serving model
    stem = os.path.basename(files[0]).split(".")[0] if os.path.isfile(data_path) else os.path.basename(os.path.normpath(data_path))
    name = feature_name(f"{stem}_{label}", set()).lower()
    return Plan(name=name, data_path=os.path.abspath(data_path), rows=len(label_cells), labelled=labelled,
                label=label_spec, task=chosen_task, task_why=task_why, inputs=inputs, decisions=decisions,
                slices=slices, buckets=size["buckets"], batch_size=size["batch_size"], epochs=size["epochs"],
                patience=size["patience"], eval_steps=size["eval_steps"], sizing_why=size["why"]), header, columns


def _flow(spec: Dict[str, Any]) -> str:
    """A feature spec as one YAML flow mapping (strings quoted where YAML would retype them)."""
    import yaml

    parts = []
    for k, v in spec.items():
        text = yaml.safe_dump(v, default_flow_style=True, width=1000).strip()
        if text.endswith("\n..."):
            text = text[:-4].strip()
        text = text.removesuffix("...").strip()
        parts.append(f"{k}: {text}")
    return "{" + ", ".join(parts) + "}"


def render_config(p: Plan, schema_path: str) -> str:
    """The config file: every decision beside its key, as the packaged configs are commented."""
    why = {d.column: d for d in p.decisions}
    lines = [
        f"# {p.name}: {p.task} on {os.path.basename(p.data_path)}, written by `tfxline init` from the data's columns.",
        "# Review it, then: tfxline run --config THIS_FILE. Every key is optional except `features`;",
        "# omitted keys take the defaults in pipeline/config.py (docs/configuration.md lists them).",
        f"name: {p.name}",
        f"output_root: {_quote(os.path.join(os.path.dirname(schema_path), 'output'))}   # beside this file: runs, "
        "metadata, serving (--output overrides)",
        "",
        "data:",
        f"  path: {_quote(p.data_path)}",
        f"  schema: {_quote(schema_path)}   # drafted from the data; it accepts the file it was drafted from",
        f"  # {p.sizing_why.split(';')[0]}",
        f"  train_buckets: {p.buckets[0]}",
        f"  validation_buckets: {p.buckets[1]}",
        f"  eval_buckets: {p.buckets[2]}",
        "  missing_labels: drop   # rows with an empty label are left out and counted (fail: refuse the file)",
        "",
        "features:",
        f"  # {p.task}: {p.task_why}",
        f"  label: {_flow(p.label)}",
        "  inputs:",
    ]
    for spec in p.inputs:
        column = spec.get("column", spec["name"])
        decision = why[column]
        lines.append(f"    - {_flow(spec)}")
        if spec is out_specs(p.inputs, column)[0]:
            lines[-1] += f"   # {decision.why}"
    left = [d for d in p.decisions if d.what == "left out"]
    if left:
        lines.append("  # left out: " + "; ".join(f"{d.column} ({d.why})" for d in left))
    lines += [
        "",
        "training:",
        "  mode: epochs        # passes over the train split; early stopping ends it",
        f"  # {';'.join(p.sizing_why.split(';')[1:]).strip()}",
        f"  epochs: {p.epochs}",
        f"  batch_size: {p.batch_size}",
        f"  early_stopping_patience: {p.patience}",
        f"  eval_steps: {p.eval_steps}",
        "  seed: 42",
        "",
        "evaluation:",
        "  # the defaults gate the task: the model must beat the trivial one (docs/your-data.md, \"Gates\")",
        f"  slices: [{', '.join(_quote(s) for s in p.slices)}]   # reported per value (low-cardinality text columns)",
        "",
    ]
    return "\n".join(lines)


def _quote(text: str) -> str:
    import json

    return json.dumps(text) if not re.fullmatch(r"[A-Za-z0-9_./-]+", text) else text


def init(data_path: str, label: str, task: Optional[str], positive: Optional[str], directory: str,
         force: bool, stream: TextIO) -> int:
    from cli import schema_draft as schema_tools

    config_path, schema_path = os.path.join(directory, CONFIG_FILE), os.path.join(directory, SCHEMA_FILE)
    existing = [p for p in (config_path, schema_path) if os.path.exists(p)]
    if existing and not force:
        raise InitError(f"{existing[0]} exists; pass --force to replace it, or another --dir")
    p, header, columns = plan(data_path, label, task, positive)
    import yaml
    from google.protobuf import text_format

    from pipeline.config_loader import config_from_dict

    schema_text = text_format.MessageToString(schema_tools.csv_schema(header, columns))
    config_text = render_config(p, os.path.abspath(schema_path))
    config_from_dict(yaml.safe_load(config_text))  # the config loads as written, before anything is
    print(f"{p.rows} rows, {len(header)} columns in {data_path}", file=stream)
    print(f"label {label}: {p.task} ({p.task_why})", file=stream)
    for d in p.decisions:
        print(d.line(), file=stream)
    print(f"sizing: {p.sizing_why}", file=stream)
    print(f"slices: {', '.join(p.slices) or 'none (no text column with 2-10 values)'}", file=stream)
    files.write_text_atomic(schema_path, f"# Drafted by `tfxline init` from {p.data_path}; review it.\n" + schema_text)
    files.write_text_atomic(config_path, config_text)
    print(f"wrote {config_path} and {schema_path}; next: tfxline run --config {config_path}", file=stream, flush=True)
    return 0
