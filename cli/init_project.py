"""``tfxline init``: a config and a schema for a CSV nobody here has seen, decided from its columns.

    tfxline init --data CSV --label COLUMN [--task binary|multiclass|regression] [--positive VALUE] [--dir DIR]

writes ``DIR/config.yaml`` (commented, like the packaged configs) and ``DIR/schema.pbtxt`` (the
draft ``tfxline schema draft`` writes: it accepts the file it was drafted from), and prints one
line per decision and why. ``tfxline run --config DIR/config.yaml`` then trains, blesses and
pushes on the first try. The rules (docs/your-data.md states them):

- the label (cli/init_label.py): the task from its values (pipeline/data/labels.py), or ``--task``; a
  two-valued text label needs a usual spelling (yes/no, true/false, y/n, 1/0, positive/negative)
  or ``--positive``; a skewed non-negative regression label is learnt in log space (``log: true``);
- each other column (cli/init_inputs.py): left out when empty, constant, or unique per row (an
  ID), or when it gives the label away (cli/init_leaks.py: left out, with the spec that keeps it);
  ISO dates and date-times become their parts; other text is a vocabulary; whole numbers with few
  values are categories; skewed non-negative numbers are log-scaled; numbers with many values also
  get quantile buckets;
- how the rows are spread (cli/init_balance.py): repeated rows, a rare class (a binary label's
  threshold for F1; a multi-class label's balanced class weights), classes too small for a split;
- the batch, the validation split and the training length from the row count; slices from
  low-cardinality text columns;
- with ``--tune``, a ``tuning`` section whose trials and wall budget fit the row count.
"""
from __future__ import annotations

import dataclasses
import os
import re
from typing import Any, Dict, List, Optional, TextIO, Tuple

from tfxline.cli import column_profile as cp
from tfxline.cli import init_balance, init_images, init_text_folder
from tfxline.cli.init_inputs import Decision, choose_inputs, feature_name, identifies_rows, out_specs
from tfxline.cli.init_label import InitError, choose_label
from tfxline.cli.init_leaks import find_leaks
from tfxline.cli.init_sizing import sizing
from tfxline.kubeflow import names
from tfxline.pipeline.data import source as data_source
from tfxline.runs import files
from tfxline.trainer import budget as budget_lib
from tfxline.typed_config.close_names import closest

CONFIG_FILE, SCHEMA_FILE = "config.yaml", "schema.pbtxt"


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
    time_budget_minutes: int = 0  # the Trainer's time budget (a text model's first run; trainer/budget.py)
    balance: init_balance.Balance = dataclasses.field(default_factory=lambda: init_balance.Balance([]))
    suspects: Dict[str, str] = dataclasses.field(default_factory=dict)  # column: why it gives the label away
    tuning: Optional[Dict[str, Any]] = None  # --tune: tuning_budget's

    @property
    def family(self) -> Tuple[str, str]:
        """model.family as init writes it, and why (trees/settings.py families)."""
        if any(s["transform"] == "text" for s in self.inputs):
            return "network", "a text input: the network reads its n-grams (trees have no text encoding here)"
        return "auto", ("the network and gradient-boosted trees both train on the same split; the better on "
                        "validation (or their average) is kept")


def tuning_budget(labelled: int) -> Dict[str, Any]:
    """--tune: trials and a wall budget for ``labelled`` rows. A trial is about one training of the
    model (early stopping ends most sooner): on a 2-core machine seconds on a few thousand rows, about
    a minute on 50,000 (bench/tables.py); the budget ends the search whichever comes first."""
    trials, minutes = (20, 5) if labelled < 100_000 else (12, 15) if labelled < 1_000_000 else (8, 30)
    why = (f"{labelled} labelled rows: up to {trials} trials within {minutes} minutes (on 2 cores; raise "
           "max_minutes on a larger machine or for more trials)")
    return {"algorithm": "bayesian", "max_trials": trials, "max_minutes": minutes, "why": why}


def plan(data_path: str, label: str, task: Optional[str] = None, positive: Optional[str] = None,
         tune: bool = False) -> Tuple[Plan, List[str], List[List[str]]]:
    """Decide everything from the data (raises InitError / DataError); also returns the columns
    read, for the schema."""
    files = data_source.locate(data_path, "csv").files
    header, columns = data_source.read_columns(files)
    if label not in header:
        close = closest(label, header, cutoff=0.6)  # difflib's default: a label has few candidates
        hint = f"did you mean {close!r}? " if close else ""
        raise InitError(f"--label {label!r} is not a column of {data_path}; {hint}pass one of: {', '.join(header)}")
    profiles = cp.profile_table(header, columns)
    by_name = dict(zip(header, profiles))
    label_cells = columns[header.index(label)]
    label_spec, chosen_task, task_why = choose_label(by_name[label], label_cells, task, positive)
    taken: set = set()
    label_name = feature_name(label, taken)
    if label_name != label:  # a name Keras takes; the column keeps its own
        label_spec = {"name": label_name, "column": label, **{k: v for k, v in label_spec.items() if k != "name"}}
    found = find_leaks(header, columns, label, chosen_task, label_spec.get("positive"))
    inputs, decisions, slices = choose_inputs(profiles, label, taken,
                                              {c: leak.why for c, leak in found.items() if leak.leave_out})
    for d in decisions:
        if d.kept_as:
            d.why = (f"gives the label away: {d.why}; if it is known when a prediction is asked for, keep it: add "
                     f"{' and '.join(_flow(s) for s in d.kept_as)} to features.inputs")
        elif d.column in found and d.what != "left out":
            d.why += f"; WARNING: {found[d.column].why}"
    labelled = sum(1 for c in label_cells if c)
    size = sizing(labelled, text=any(s["transform"] == "text" for s in inputs))
    # repeats as the model sees rows: a row number or an ID (left out) would make every row unique
    ids = {d.column for d in decisions if identifies_rows(d)}
    compared = [c for name, c in zip(header, columns) if name not in ids]
    spread = init_balance.balance(label_cells, chosen_task, label_spec.get("positive"), size["buckets"],
                                  len(label_cells), init_balance.duplicate_rows(compared))
    # one pipeline per table and label: two projects on one CSV never share runs or a serving model
    stem = (os.path.basename(files[0]).split(".")[0] if os.path.isfile(data_path)
            else os.path.basename(os.path.normpath(data_path)))
    name = names.portable(f"{stem}-{label}")  # one that compile takes too (kubeflow/names.py)
    return Plan(name=name, data_path=os.path.abspath(data_path), rows=len(label_cells), labelled=labelled,
                label=label_spec, task=chosen_task, task_why=task_why, inputs=inputs, decisions=decisions,
                slices=slices, buckets=size["buckets"], batch_size=size["batch_size"], epochs=size["epochs"],
                patience=size["patience"], eval_steps=size["eval_steps"], sizing_why=size["why"],
                time_budget_minutes=size.get("time_budget_minutes", 0), balance=spread,
                suspects={c: leak.why for c, leak in found.items()},
                tuning=tuning_budget(labelled) if tune else None), header, columns


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
        "# omitted keys take their defaults (docs/configuration.md lists them).",
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
        *([f"  time_budget_minutes: {p.time_budget_minutes}   # {budget_lib.INIT_COMMENT}"]
          if p.time_budget_minutes else []),
        *[f"  {key}: {value}   # {why}" for key, (value, why) in p.balance.training.items()],
        "",
        "model:",
        f"  family: {p.family[0]}   # {p.family[1]}",
        "",
        "evaluation:",
        "  # the defaults gate the task: the model must beat the trivial one (docs/your-data.md, \"Gates\")",
        f"  slices: [{', '.join(_quote(s) for s in p.slices)}]   # reported per value (low-cardinality text columns)",
        *[f"  {key}: {value}   # {why}" for key, (value, why) in p.balance.evaluation.items()],
        *_suspects(p.suspects),
        *_tuning(p.tuning),
        "",
    ]
    return "\n".join(lines)


def _tuning(tuning: Optional[Dict[str, Any]]) -> List[str]:
    """The tuning section --tune writes (the search space: the task's default, docs/configuration.md)."""
    if not tuning:
        return []
    return ["", "tuning:", "  enabled: true   # TFX's Tuner before the Trainer; the Trainer trains on the best values",
            f"  # {tuning['why']}",
            f"  algorithm: {tuning['algorithm']}", f"  max_trials: {tuning['max_trials']}",
            f"  max_minutes: {tuning['max_minutes']}",
            "  objective: auto   # the task's main metric on the validation split",
            "  # space: the task's default search space; set a key to narrow it (e.g. batch_size: [128, 256])"]


def _suspects(suspects: Dict[str, str]) -> List[str]:
    """evaluation.suspect_columns: each run warns while an input reads one of them."""
    if not suspects:
        return []
    return ["  # columns that give the label away (left out, or kept with a WARNING above): each run's summary",
            "  # and report warn while an input reads one",
            "  suspect_columns:"] + [f"    {_quote(c)}: {_quote(why)}" for c, why in suspects.items()]


def _quote(text: str) -> str:
    import json

    return json.dumps(text) if not re.fullmatch(r"[A-Za-z0-9_./-]+", text) else text


def init(data_path: str, label: Optional[str], task: Optional[str], positive: Optional[str], directory: str,
         force: bool, stream: TextIO, tune: bool = False) -> int:
    from tfxline.cli import schema_draft as schema_tools

    config_path, schema_path = os.path.join(directory, CONFIG_FILE), os.path.join(directory, SCHEMA_FILE)
    existing = [p for p in (config_path, schema_path) if os.path.exists(p)]
    if existing and not force:
        raise InitError(f"{existing[0]} exists; pass --force to replace it, or another --dir")
    if not os.path.exists(data_path):
        raise InitError(f"data path {data_path} does not exist; pass a CSV file (or a directory of them) with "
                        "--label, or a folder with one sub-folder of images or .txt files per class")
    if not label and init_text_folder.is_text_folder(data_path):  # .txt files, a sub-folder per class
        flags = [f for f, given in (("--task", task), ("--tune", tune)) if given]
        return init_text_folder.init(data_path, directory, config_path, schema_path, stream, files.write_text_atomic,
                                     positive, flags)
    if not label:  # .txt files or images without class folders: one line that says so
        init_text_folder.refuse_flat_folder(data_path)
        init_images.refuse_flat_folder(data_path)
    if init_images.is_image_folder(data_path):  # a folder of photos, a sub-folder per class
        if label or task or positive or tune:
            raise InitError("--label, --task, --positive and --tune apply to a CSV; an image folder's classes are its "
                            f"sub-folders: run tfxline init --data {data_path} without them")
        init_images.init(data_path, directory, config_path, schema_path, stream, files.write_text_atomic)
        return 0
    if label and init_images.image_column_of(data_path):  # a CSV of image paths and their classes
        init_images.init(data_path, directory, config_path, schema_path, stream, files.write_text_atomic, label)
        return 0
    if not label:
        raise InitError(f"--label is needed for a CSV: name the column to predict (or pass a folder with one "
                        f"sub-folder of images or .txt files per class); {data_path} is not such a folder")
    p, header, columns = plan(data_path, label, task, positive, tune)
    import yaml
    from google.protobuf import text_format

    from tfxline.pipeline.config.load import config_from_dict

    texts = [s.get("column", s["name"]) for s in p.inputs if s["transform"] == "text"]
    schema_text = text_format.MessageToString(schema_tools.csv_schema(header, columns, texts))
    config_text = render_config(p, os.path.abspath(schema_path))
    config_from_dict(yaml.safe_load(config_text))  # the config loads as written, before anything is
    print(f"{p.rows} rows, {len(header)} columns in {data_path}", file=stream)
    print(f"label {label}: {p.task} ({p.task_why})", file=stream)
    for d in p.decisions:
        print(d.line(), file=stream)
    print(f"sizing: {p.sizing_why}", file=stream)
    print(f"model: {p.family[0]} ({p.family[1]})", file=stream)
    for line in p.balance.lines:
        print(line, file=stream)
    print(f"slices: {', '.join(p.slices) or 'none (no text column with 2-10 values)'}", file=stream)
    if p.tuning:
        print(f"tuning: {p.tuning['why']}", file=stream)
    files.write_text_atomic(schema_path, f"# Drafted by `tfxline init` from {p.data_path}; review it.\n" + schema_text)
    files.write_text_atomic(config_path, config_text)
    print(f"wrote {config_path} and {schema_path}; next: tfxline run --config {config_path}", file=stream, flush=True)
    return 0
