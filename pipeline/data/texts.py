"""A folder of ``.txt`` files, one sub-folder per class (Keras's ``text_dataset_from_directory``
layout), looked at before a run and by ``tfxline init``: its classes (the sub-folders' names), the
files that are not ``.txt`` (ignored and counted, as TextExampleGen ignores them) and each
document's text.

The pre-flight check (``check``) refuses, in one line with the fix, a folder the ExampleGen could
not learn from: sub-folders without ``.txt`` files, one class, a file that is not UTF-8 (named by
its line and byte, as a CSV's bad byte is: components/text_files.py), or classes the config's
label cannot take (a binary label on three classes, a positive class that is no sub-folder).
A folder without class sub-folders is refused where the data is located (source.locate).
"""
from __future__ import annotations

import collections
import dataclasses
import os
from typing import Dict, List, Sequence

from tfxline.components.class_folders import class_of
from tfxline.components.text_files import TEXT_EXTENSION, NotUtf8Error, decode, is_text_name
from tfxline.pipeline.data import labels
from tfxline.pipeline.data.check import DataError

NAMED = 3  # files named in a line


@dataclasses.dataclass
class TextFolder:
    """What a folder of ``.txt`` files holds."""
    documents: List[str]        # the .txt files, sorted
    texts: List[str]            # each one's text
    classes: List[str]          # each one's class (its folder's name)
    ignored: List[str]          # files whose names do not end in .txt

    @property
    def counts(self) -> Dict[str, int]:
        """class -> documents, by class name."""
        return dict(sorted(collections.Counter(self.classes).items()))

    @property
    def duplicates(self) -> int:
        """Documents whose text an earlier document already holds (their copies share a split)."""
        return len(self.texts) - len(set(self.texts))

    @property
    def empty(self) -> int:
        return sum(1 for t in self.texts if not t.strip())

    def ignored_names(self) -> str:
        shown = ", ".join(os.path.basename(p) for p in self.ignored[:NAMED])
        return shown + (" ..." if len(self.ignored) > NAMED else "")


def scan(files: Sequence[str]) -> TextFolder:
    """The folder's files (a pattern's matches, ``<class>/<file>``) sorted into documents and
    others, each document read as UTF-8 (DataError naming the first byte that is not)."""
    documents = sorted(f for f in files if is_text_name(f))
    texts = []
    for path in documents:
        with open(path, "rb") as f:
            try:
                texts.append(decode(path, f.read()))
            except NotUtf8Error as e:
                raise DataError(str(e)) from None
    ignored = sorted(f for f in files if not is_text_name(f))
    return TextFolder(documents, texts, [class_of(p) for p in documents], ignored)


def class_folders(root: str) -> List[str]:
    """The sub-folders of a local folder (hidden ones left out); [] for an object store's path."""
    if "://" in root or not os.path.isdir(root):
        return []
    return sorted(d for d in os.listdir(root) if not d.startswith(".") and os.path.isdir(os.path.join(root, d)))


def check(files: Sequence[str], root: str, label=None) -> TextFolder:
    """The pre-flight check of a text folder (raises DataError, one line with the fix); ``label``,
    the config's (features.label), checked against the classes as a CSV's label column is."""
    folder = scan(files)
    if not folder.documents:
        others = f" ({len(folder.ignored)} other file(s): {folder.ignored_names()})" if folder.ignored else ""
        raise DataError(f"{root}'s sub-folders hold no {TEXT_EXTENSION} files{others}; put each class's documents "
                        f"in a sub-folder named for the class as {TEXT_EXTENSION} files (e.g. pos/1.txt, neg/2.txt)")
    counts = folder.counts
    empty = [d for d in class_folders(root) if d not in counts]
    if empty:  # would be no class at all: its examples, its recall and its name would all be missing
        raise DataError(f"{root}: class folder(s) {', '.join(empty[:NAMED])} hold no {TEXT_EXTENSION} files; add the "
                        f"class's documents as {TEXT_EXTENSION} files, or move the folder out of {root}")
    if len(counts) < 2:
        raise DataError(f"{root} holds one class folder ({next(iter(counts))}); a classifier needs two or more: add a "
                        f"sub-folder of {TEXT_EXTENSION} files for each other class")
    if label is not None:
        check_label(label, folder.classes, root)
    return folder


def check_label(label, classes: Sequence[str], root: str) -> None:
    """The config's label against the folder's classes (pipeline/data/labels.py's rules, in the folder's terms)."""
    values = labels.LabelValues(label.source)
    for name in classes:
        values.add(name)
    try:
        labels.check(label, values)
    except labels.LabelError as e:
        problem, _, fix = str(e).partition("; ")
        raise DataError(f"{root}: its class folders are the label's values: {problem}; {fix} (each sub-folder "
                        "is a class)") from None

