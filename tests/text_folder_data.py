"""Folders of ``.txt`` files made offline for the text-folder tests: one sub-folder per class, each
document a few sentences of the tfx wheel's IMDB sample (tfx/examples/imdb/data/
imdb_small_with_labels.txt, 100 reviews) with its class in a phrase of its own words, as a real
folder's documents carry their topic; beside them the files such a folder has that are no
documents (a README.md, a .DS_Store) and copies of a document under other names.

    python -m tests.text_folder_data OUT_DIR [--per-class N]
"""
from __future__ import annotations

import argparse
import csv
import importlib.util
import os
import random
import re
from typing import Dict, Sequence

# each class's own phrases (their words are the signal), the rest of a document is shared noise
PHRASES = {
    "praise": ("a wonderful film", "truly brilliant acting", "I loved every minute", "a delight to watch"),
    "complaint": ("a dreadful waste of time", "terrible acting throughout", "I want my money back",
                  "painfully dull"),
    "question": ("does anyone know where it was filmed", "who played the lead", "is there a sequel",
                 "what year was it released"),
}


def imdb_reviews():
    """The sample's reviews, as text (markup kept)."""
    path = os.path.join(os.path.dirname(importlib.util.find_spec("tfx").origin),
                        "examples", "imdb", "data", "imdb_small_with_labels.txt")
    with open(path, newline="", encoding="utf-8") as f:
        return [row["text"] for row in csv.DictReader(f)]


def sentences():
    found = [s.strip() for r in imdb_reviews() for s in re.split(r"(?<=[.!?])\s+", r) if 4 <= len(s.split()) <= 30]
    return sorted(set(found))


def text_folder(root: str, per_class: int = 100, classes: Sequence[str] = tuple(PHRASES), seed: int = 0,
                strays: bool = True, copies: int = 0) -> Dict[str, int]:
    """Write ``root/<class>/<n>.txt``: ``per_class`` documents a class, each 1-3 sample sentences and
    one of its class's phrases; with ``strays``, a README.md and a .DS_Store in the first class's
    folder; ``copies`` of the first class's documents under other names. Returns the documents per
    class (copies included)."""
    rng = random.Random(seed)
    pool = sentences()
    counts: Dict[str, int] = {}
    for c in classes:
        os.makedirs(os.path.join(root, c), exist_ok=True)
        for i in range(per_class):
            parts = rng.sample(pool, rng.randint(1, 3))
            parts.insert(rng.randint(0, len(parts)), rng.choice(PHRASES[c]).capitalize() + ".")
            with open(os.path.join(root, c, f"{i:04d}.txt"), "w", encoding="utf-8") as f:
                f.write(" ".join(parts) + "\n")
        counts[c] = per_class
    first = os.path.join(root, classes[0])
    for i in range(copies):
        with open(os.path.join(first, f"{i:04d}.txt"), "rb") as f:
            data = f.read()
        with open(os.path.join(first, f"copy_{i:04d}.txt"), "wb") as f:
            f.write(data)
        counts[classes[0]] += 1
    if strays:
        with open(os.path.join(first, "README.md"), "w") as f:
            f.write("# not a document\n")
        with open(os.path.join(first, ".DS_Store"), "wb") as f:
            f.write(b"\x00\x00\x00\x01Bud1")
    return counts


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--per-class", type=int, default=100)
    args = parser.parse_args()
    print(text_folder(args.out, per_class=args.per_class))
