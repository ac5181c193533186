"""Free text to the n-gram ids a text encoder reads, in the Transform graph (so serving computes
exactly what training saw).

A text input (``transform: text``) is, in order:

1. **normalised**: lower case (UTF-8 aware), markup such as ``<br />`` removed, punctuation split
   off as tokens of its own (``great!`` is ``great`` and ``!``), apostrophes kept inside words;
2. **tokenised** on white space, the first ``max_tokens`` tokens kept (a length init chooses from
   the data's length quantiles: cli/init_text.py);
3. **n-grams** of 1 to ``ngrams`` tokens (``not good`` is a feature of its own where ngrams >= 2);
4. looked up in a **vocabulary learnt on the training split** (tft.vocabulary: its ``top_k`` most
   frequent n-grams seen at least ``min_count`` times; every other n-gram, unseen at serving too,
   hashed into one of ``oov_buckets`` out-of-vocabulary ids). Its memory is the vocabulary's
   counts, flat in the number of documents.

The output is a dense [rows, ``length``] int64 block of ids: one segment of ``max_tokens`` ids
for each n-gram width, each padded with ``PAD`` (-1) after its last n-gram: the 1-grams in
document order first (what a sequence encoder reads: the first ``max_tokens`` ids are always the
document's tokens, however short it is), then the 2-grams, and so on. ``length`` is
``max_tokens`` times ``ngrams``.

TFLite has no builtin for any string op used here (StringSplitV2, RegexReplace, StringLower and
the hash-table lookup are Flex-only: tensorflow/lite/delegates/flex/allowlisted_flex_ops.cc), so
a text model ships no phone model: ``serving.tflite`` is refused at config load
(pipeline/config/__init__.py).
"""
from __future__ import annotations

from typing import Any

import tensorflow as tf

PAD = -1  # an id past the document's end
MARKUP = r"<[^>]*>"
# anything but letters, digits, white space and the apostrophe: split off as a token of its own
PUNCTUATION = r"([^\p{L}\p{N}\s'])"
NGRAM_SEPARATOR = " "
# a text feature's settings where its spec leaves them out (features.InputFeature)
DEFAULTS = {"ngrams": 2, "max_tokens": 256, "min_count": 2}
MAX_NGRAMS = 3


def setting(feature: Any, name: str) -> int:
    """A text feature's ``ngrams``, ``max_tokens`` or ``min_count``: its own, or ``DEFAULTS``'."""
    value = getattr(feature, name)
    return int(DEFAULTS[name] if value is None else value)


def length(feature: Any) -> int:
    """The ids' block width of a text feature: ``max_tokens`` ids per n-gram width."""
    return setting(feature, "max_tokens") * setting(feature, "ngrams")


def cardinality(feature: Any, vocabulary_size: int) -> int:
    """The ids a text feature's n-grams take: its vocabulary's and the out-of-vocabulary buckets."""
    return vocabulary_size + int(feature.oov_buckets)


def normalized(text: tf.Tensor) -> tf.Tensor:
    """Rank-1 text, lower-cased, markup removed, punctuation set apart by spaces."""
    text = tf.strings.lower(text, encoding="utf-8")
    text = tf.strings.regex_replace(text, MARKUP, " ")
    return tf.strings.regex_replace(text, PUNCTUATION, r" \1 ")


def tokens(text: tf.Tensor, max_tokens: int) -> tf.RaggedTensor:
    """[rows, (tokens)] of rank-1 text: normalised, split on white space, at most ``max_tokens`` each."""
    return tf.strings.split(normalized(text))[:, :max_tokens]


def ngram_widths(tokens_: tf.RaggedTensor, width: int) -> list:
    """[[rows, (n-grams of n tokens)] for n in 1..``width``], each in document order."""
    return [tokens_] + [tf.strings.ngrams(tokens_, n, separator=NGRAM_SEPARATOR) for n in range(2, width + 1)]


def ngrams(tokens_: tf.RaggedTensor, width: int) -> Any:
    """[rows, (n-grams)] (ragged): every 1-gram in order, then every 2-gram, ... up to ``width``."""
    grams = ngram_widths(tokens_, width)
    return tf.concat(grams, axis=1) if len(grams) > 1 else grams[0]


def document_ngrams(feature: Any, text: tf.Tensor) -> tf.RaggedTensor:
    """The n-grams of a text feature's rank-1 raw text (a missing value is an empty document)."""
    return ngrams(tokens(text, setting(feature, "max_tokens")), setting(feature, "ngrams"))


def raw_text(feature: Any, x: Any) -> tf.Tensor:
    """A text feature's raw column as rank-1 text, a missing value the empty document."""
    from tfxline.transforms.columns import to_dense

    if x.dtype != tf.string:
        raise ValueError(f"feature {feature.name!r}: transform text reads text, and column {feature.source!r} "
                         f"holds {x.dtype.name}; fix: declare the column as text (BYTES) in the schema")
    return to_dense(x, "")


def text_ids(feature: Any, text: tf.Tensor, vocabulary_file: str) -> tf.Tensor:
    """[rows, ``length``] int64: the document's n-gram ids in ``vocabulary_file`` (a tft
    vocabulary), out-of-vocabulary ones in its ``oov_buckets``, padded with ``PAD``."""
    import tensorflow_transform as tft

    max_tokens = setting(feature, "max_tokens")
    widths = ngram_widths(tokens(text, max_tokens), setting(feature, "ngrams"))
    segments = [tf.cast(tft.apply_vocabulary(grams, vocabulary_file, num_oov_buckets=int(feature.oov_buckets)),
                        tf.int64).to_tensor(default_value=PAD, shape=[None, max_tokens]) for grams in widths]
    return tf.concat(segments, axis=1) if len(segments) > 1 else segments[0]


def learn_vocabulary(feature: Any, text: tf.Tensor, vocabulary_filename: str):
    """tft's vocabulary of a text feature's n-grams over the training split: the ``top_k`` most
    frequent seen at least ``min_count`` times (its file's path, a deferred tensor)."""
    import tensorflow_transform as tft

    return tft.vocabulary(document_ngrams(feature, text), top_k=int(feature.top_k),
                          frequency_threshold=setting(feature, "min_count"), vocab_filename=vocabulary_filename)
