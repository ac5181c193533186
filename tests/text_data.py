"""Offline text tables for the tests: reviews made of the tfx wheel's IMDB sample sentences
(tfx/examples/imdb/data/imdb_small_with_labels.txt, 100 reviews), each with a phrase whose
meaning is in its word order: "not good" and "not bad" share their words with "good" and "bad",
so a model that reads single words alone cannot tell them apart, and one that reads 2-grams can.
Beside the text, a number and a category with a weak signal of their own, markup, mixed case,
quoted new lines and empty cells, as real review tables have."""
import csv
import random

from bench.text import NEGATIVE, POSITIVE, imdb_sentences  # the bench's phrases and sentences, not a copy


def write_reviews(path, rows=1500, seed=0, with_label=True):
    """A CSV of ``rows`` reviews: review (text), helpful (a count), platform (a category), label
    (pos/neg, 10% flipped). Returns the labels written."""
    rng = random.Random(seed)
    sentences = imdb_sentences()
    labels = []
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["review", "helpful", "platform"] + (["label"] if with_label else []))
        for _ in range(rows):
            positive = rng.random() < 0.4
            phrase = rng.choice(POSITIVE if positive else NEGATIVE)
            if rng.random() < 0.5:
                phrase = phrase.upper()
            parts = rng.sample(sentences, rng.randint(1, 3))
            for said in range(rng.randint(1, 2)):
                parts.insert(rng.randint(0, len(parts)), f"Honestly, {phrase}." if not said else f"So: {phrase}!")
            text = " ".join(parts) if rng.random() < 0.9 else "\n".join(parts)  # some quoted new lines
            if rng.random() < 0.03:
                text = ""  # an empty review
            helpful = "" if rng.random() < 0.1 else str(rng.randint(0, 20) + (5 if positive else 0))
            platform = rng.choice(["web", "app", "email"])
            label = ("pos" if positive else "neg") if rng.random() >= 0.1 else ("neg" if positive else "pos")
            labels.append(label)
            writer.writerow([text, helpful, platform] + ([label] if with_label else []))
    return labels
