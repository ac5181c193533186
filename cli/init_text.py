"""``tfxline init``'s look at text: which text columns are free text (several words a value, many
distinct values), and the text feature each becomes, sized from the data.

Words are counted as the Transform tokenises (transforms/text.py: lower case, markup removed,
punctuation a token of its own), so the lengths and vocabulary sizes init writes are the ones the
pipeline meets:

- ``max_tokens``: the 95th percentile of the documents' token counts, rounded up to a multiple of
  16 (at least 16, at most ``MAX_TOKENS``): nearly every document is read whole, the padding stays
  small;
- ``top_k``: the 1- and 2-grams found in at least ``MIN_COUNT`` documents (the vocabulary's floor),
  at most ``MAX_VOCABULARY``; counted on up to ``SAMPLE`` documents;
- the encoder (``model.text_encoder``): ``bag`` of 1-2-grams, order-free and fast on a CPU (the
  match of TF-IDF + logistic regression); ``transformer`` reads word order, at several times the
  cost, and is named on the decision line for the user to choose.
"""
from __future__ import annotations

import collections
import dataclasses
import re
from typing import Any, Dict, List, Sequence, Tuple

import numpy as np

TEXT_WORDS = 3          # a text column whose median value has at least this many words (``words``) is free text
TEXT_DISTINCT = 0.3     # ... and at least this share of its present values distinct (or TEXT_MIN_DISTINCT)
TEXT_MIN_DISTINCT = 200
# A new user's man-page table (2,469 pages, 431 tokens a page on average, 64 % past 512): holdout
# accuracy 0.893 read to 512 tokens, 0.914 to 1,024, TF-IDF + logistic regression on whole pages
# 0.919. The bag's cost is linear in the tokens; a transformer's attention is quadratic: lower
# max_tokens for it.
MAX_TOKENS = 1024
MAX_VOCABULARY = 50_000
MIN_COUNT = 2
SAMPLE = 20_000
_MARKUP = re.compile(r"<[^>]*>")
_PUNCTUATION = re.compile(r"([^\w\s']|_)")  # transforms/text.py's PUNCTUATION, in Python's re


@dataclasses.dataclass
class TextStats:
    """How a text column's values read as the Transform tokenises them."""
    median_words: float
    p95_words: int
    max_words: int
    vocabulary: int      # 1- and 2-grams in at least MIN_COUNT of the sampled documents
    distinct_tokens: int


def tokens(value: str) -> List[str]:
    """``value``'s tokens, as transforms/text.py makes them."""
    return _PUNCTUATION.sub(r" \1 ", _MARKUP.sub(" ", value.lower())).split()


_WORD = re.compile(r"\S*[^\W\d_]\S*")  # a white-space-separated piece with a letter in it


def words(value: str) -> int:
    """The words of ``value``: its white-space-separated pieces with a letter (``9/30/1990 0:00:00``
    has none, ``B-737-300`` is one), markup removed."""
    return len(_WORD.findall(_MARKUP.sub(" ", value)))


def median_words(values: Sequence[str]) -> float:
    """The median word count of (a sample of) ``values``: enough to tell text from a category, a
    code or a date written some other way than ISO."""
    sample = values[:: max(1, len(values) // 2000)]
    return float(np.median([words(v) for v in sample])) if sample else 0.0


def text_stats(values: Sequence[str]) -> TextStats:
    """The lengths and the vocabulary of a column's present values (each document counted once)."""
    sample = values[:: max(1, len(values) // SAMPLE)]
    lengths, frequency, unigrams = [], collections.Counter(), set()
    for value in sample:
        words = tokens(value)
        lengths.append(len(words))
        unigrams.update(words)
        frequency.update(set(words) | {f"{a} {b}" for a, b in zip(words, words[1:])})
    vocabulary = sum(1 for c in frequency.values() if c >= MIN_COUNT)
    return TextStats(float(np.median(lengths)), int(np.percentile(lengths, 95)), max(lengths), vocabulary,
                     len(unigrams))


def is_text(kind: str, distinct: int, present: int, words: float) -> bool:
    """Free text: several words a value and many distinct values (a category of a few phrases is not)."""
    return kind == "string" and words >= TEXT_WORDS and (distinct >= TEXT_DISTINCT * present
                                                         or distinct >= TEXT_MIN_DISTINCT)


def text_input(name: str, stats: TextStats, empty: str) -> Tuple[List[Dict[str, Any]], str]:
    """The text feature of a free-text column, and why."""
    max_tokens = int(min(MAX_TOKENS, max(16, -(-stats.p95_words // 16) * 16)))
    top_k = int(min(MAX_VOCABULARY, max(stats.vocabulary, 100)))
    spec = {"column": name, "transform": "text", "top_k": top_k, "ngrams": 2, "max_tokens": max_tokens,
            "min_count": MIN_COUNT, "oov_buckets": 1}
    cut = f", {stats.max_words} at most: the first {max_tokens} read" if stats.max_words > max_tokens else ""
    why = (f"free text: {stats.median_words:g} words a value (95% within {stats.p95_words}{cut}), "
           f"{stats.distinct_tokens} distinct words; a bag of 1-2-grams, {top_k} seen in {MIN_COUNT}+ rows "
           f"(model.text_encoder: transformer reads word order, at several times the cost; pretrained reads "
           f"an encoder's SavedModel folder: docs/text.md){empty}")
    return [spec], why


def describe(spec: Dict[str, Any]) -> str:
    return f"text ({spec['top_k']} n-grams, {spec['max_tokens']} tokens)"

