"""``tfxline init --data FOLDER`` for a folder of ``.txt`` files, one sub-folder per class (Keras's
``text_dataset_from_directory`` layout): a config and a schema decided from what the folder holds,
one line per decision (docs/text.md, "A folder of text files", states the rules):

- the classes and their counts (the sub-folders' names); files that are not ``.txt``, counted;
- the label: two classes are binary, the positive class the usual spelling of a pair (pos/neg,
  yes/no, 1/0 ...), ``--positive``, or else the rarer class; more classes are ``class_vocabulary``;
- the text input sized from the documents as a CSV's free-text column is (cli/init_text.py:
  length from the 95th percentile, a vocabulary of the 1-2-grams in 2+ documents);
- the split, batch and training length from the document count (cli/init_sizing.py), and how the
  classes are spread (cli/init_balance.py); copies of a document, which share a split;
- the schema: the text BYTES with TFDV's natural_language_domain, the class BYTES
  (cli/schema_draft.csv_schema on the two columns TextExampleGen writes).
"""
from __future__ import annotations

import dataclasses
import glob
import json
import os
from typing import Any, Dict, List, Optional, Sequence, TextIO, Tuple

from tfxline.cli import init_balance, init_text
from tfxline.cli.init_files import write_project
from tfxline.cli.init_label import InitError
from tfxline.cli.init_sizing import sizing
from tfxline.components.text_files import is_text_name
from tfxline.kubeflow import names
from tfxline.pipeline.data import labels, texts
from tfxline.pipeline.data import source as data_source
from tfxline.trainer import budget as budget_lib
from tfxline.transforms.image_files import is_image_name

TEXT_COLUMN, LABEL_COLUMN = "text", "label"


@dataclasses.dataclass
class TextFolderPlan:
    name: str
    data_path: str
    folder: texts.TextFolder
    text: Dict[str, Any]     # the text input's spec
    text_why: str
    label: Dict[str, Any]    # the label's spec
    label_why: str
    size: Dict[str, Any]     # init_sizing.sizing's
    balance: init_balance.Balance


def is_text_folder(path: str) -> bool:
    """A directory whose files one folder down (``<class>/<file>``) are more often .txt files than
    images (an image folder's stray notes.txt leaves it an image folder)."""
    if not os.path.isdir(path):
        return False
    found = glob.glob(os.path.join(path, "*", "*"))
    documents = sum(map(is_text_name, found))
    return documents > 0 and documents >= sum(map(is_image_name, found))


def refuse_flat_folder(path: str) -> None:
    """InitError for a folder of .txt files with no class folders."""
    if not os.path.isdir(path) or is_text_folder(path):
        return
    loose = [f for f in os.listdir(path) if is_text_name(f)]
    if loose and len(loose) >= sum(map(is_image_name, os.listdir(path))):
        raise InitError(f"{path} holds {len(loose)} .txt files but no class folders; put each class's .txt files in "
                        "a sub-folder named for the class (e.g. pos/1.txt, neg/2.txt)")


def choose_label(counts: Dict[str, int], positive: Optional[str]) -> Tuple[Dict[str, Any], str]:
    """(the label's spec, why): binary for two classes (its positive class named), else class_vocabulary."""
    if positive is not None and positive not in counts:
        raise InitError(f"--positive {positive!r} is not a class folder ({', '.join(counts)}); pass one of them")
    if len(counts) != 2:
        if positive is not None:
            raise InitError(f"--positive applies to two classes, and the folder has {len(counts)}; drop --positive")
        return ({"name": LABEL_COLUMN, "transform": "class_vocabulary"},
                f"{len(counts)} classes (the sub-folders): multi-class")
    usual = labels.usual_positive(list(counts))
    chosen = positive or usual or min(counts, key=lambda c: (counts[c], c))
    how = ("--positive" if positive else "its usual spelling" if usual else
           "the rarer class; --positive CLASS names the other")
    return ({"name": LABEL_COLUMN, "transform": "binary", "positive": chosen},
            f"two classes (the sub-folders): binary, positive {chosen!r} ({how})")


def plan(data_path: str, positive: Optional[str] = None) -> TextFolderPlan:
    found = data_source.locate(data_path, "text")
    folder = texts.check(found.files, data_path)
    label, label_why = choose_label(folder.counts, positive)
    present = [t for t in folder.texts if t.strip()]
    if not present:
        raise InitError(f"every .txt file in {data_path} is empty; put each document's text in its file")
    count = len(folder.documents)
    empty = f", {folder.empty} empty ({folder.empty / count:.1%})" if folder.empty else ""
    specs, text_why = init_text.text_input(TEXT_COLUMN, init_text.text_stats(present), empty)
    text = {"name": TEXT_COLUMN, **{k: v for k, v in specs[0].items() if k != "column"}}
    size = sizing(count, text=True)
    size["why"] = size["why"].replace("labelled rows", "documents", 1)
    balance = init_balance.balance(folder.classes, "binary" if label["transform"] == "binary" else "multiclass",
                                   label.get("positive"), size["buckets"], count, 0)
    if folder.duplicates:
        balance.lines.insert(0, f"duplicates: {folder.duplicates} .txt file(s) repeat an earlier file's text; a "
                                "document's split follows its text, so each copy lands in its original's split (no "
                                "eval document is a training document's copy)")
    return TextFolderPlan(
        name=names.portable(os.path.basename(os.path.normpath(data_path)).split(".")[0] + "-text"),
        data_path=os.path.abspath(data_path), folder=folder, text=text, text_why=text_why, label=label,
        label_why=label_why, size=size, balance=balance)


def _flow(spec: Dict[str, Any]) -> str:
    """A spec as one YAML flow mapping, its strings quoted (a class named yes stays text)."""
    return "{" + ", ".join(f"{k}: {json.dumps(v) if isinstance(v, str) else v}" for k, v in spec.items()) + "}"


def render_config(p: TextFolderPlan, schema_path: str) -> str:
    classes = ", ".join(f"{c} {n}" for c, n in p.folder.counts.items())
    size = p.size
    return "\n".join([
        f"# {p.name}: {len(p.folder.counts)} classes of .txt files in {p.data_path}, written by `tfxline init`.",
        "# Review it, then: tfxline run --config THIS_FILE (docs/text.md).",
        f"name: {p.name}",
        f"output_root: {json.dumps(os.path.join(os.path.dirname(schema_path), 'output'))}",
        "",
        "data:",
        f"  path: {json.dumps(p.data_path)}",
        "  format: text        # one sub-folder of .txt files per class; other files are ignored and counted",
        f"  schema: {json.dumps(schema_path)}",
        f"  # {size['why'].split(';')[0]}; by each document's text: copies of a file stay in one split",
        f"  train_buckets: {size['buckets'][0]}",
        f"  validation_buckets: {size['buckets'][1]}",
        f"  eval_buckets: {size['buckets'][2]}",
        "",
        "features:",
        f"  # {p.label_why}; classes: {classes}",
        f"  label: {_flow(p.label)}",
        "  inputs:",
        f"    - {_flow(p.text)}   # {p.text_why}",
        "",
        "training:",
        "  mode: epochs        # passes over the train split; early stopping ends it",
        f"  # {';'.join(size['why'].split(';')[1:]).strip()}",
        f"  epochs: {size['epochs']}",
        f"  batch_size: {size['batch_size']}",
        f"  early_stopping_patience: {size['patience']}",
        f"  eval_steps: {size['eval_steps']}",
        "  seed: 42",
        *([f"  time_budget_minutes: {size['time_budget_minutes']}   # {budget_lib.INIT_COMMENT}"]
          if "time_budget_minutes" in size else []),
        *[f"  {key}: {value}   # {why}" for key, (value, why) in p.balance.training.items()],
        "",
        "evaluation:",
        "  slices: []          # each class's recall is in every run's metrics",
        *[f"  {key}: {value}   # {why}" for key, (value, why) in p.balance.evaluation.items()],
        "",
        "serving:",
        "  tflite: \"off\"       # text is tokenised with string ops TFLite has no builtins for",
        "",
    ])


def schema_text(p: TextFolderPlan) -> str:
    """TFDV's draft of the two columns TextExampleGen writes (schema_draft.csv_schema): the text with
    TFDV's natural_language_domain, the class; both BYTES, whatever the values look like (classes
    named 0 and 1 are text in the examples)."""
    from google.protobuf import text_format
    from tensorflow_metadata.proto.v0 import schema_pb2

    from tfxline.cli.schema_draft import csv_schema

    schema = csv_schema([TEXT_COLUMN, LABEL_COLUMN], [p.folder.texts, p.folder.classes], [TEXT_COLUMN])
    for feature in schema.feature:
        if feature.type != schema_pb2.BYTES:
            feature.type = schema_pb2.BYTES
            if feature.WhichOneof("domain_info") in ("int_domain", "float_domain"):
                feature.ClearField("domain_info")
    return f"# Drafted by `tfxline init` from {p.data_path}; review it.\n" + text_format.MessageToString(schema)


def lines(p: TextFolderPlan) -> List[str]:
    f = p.folder
    return [f"{len(f.documents)} .txt files in {len(f.counts)} classes in {p.data_path}"
            + (f"; {len(f.ignored)} other file(s) ignored ({f.ignored_names()})" if f.ignored else ""),
            "classes: " + ", ".join(f"{c} {n}" for c, n in f.counts.items()),
            f"label: {p.label_why}",
            f"{TEXT_COLUMN}: {init_text.describe(p.text)} ({p.text_why})",
            f"sizing: {p.size['why']}",
            *p.balance.lines]


def init(data_path: str, directory: str, config_path: str, schema_path: str, stream: TextIO, write_text,
         positive: Optional[str] = None, flags: Sequence[str] = ()) -> int:
    """Decide, check the config loads, print the decisions, write both files. ``flags``: the CSV-only
    flags given (refused: the classes are the sub-folders)."""
    if flags:
        raise InitError(f"{', '.join(flags)} apply to a CSV; a text folder's classes are its sub-folders: run "
                        f"tfxline init --data {data_path} without them (--positive names a binary one's positive)")
    p = plan(data_path, positive)
    write_project(render_config(p, os.path.abspath(schema_path)), schema_text(p), lines(p), config_path,
                  schema_path, stream, write_text)
    return 0
