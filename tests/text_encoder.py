"""A pretrained text encoder a test saves itself (nothing downloads): a TF2 SavedModel whose
``__call__`` maps a [batch] string tensor to [batch, dim] vectors, as TF Hub's text-embedding models
do. Inside: its own tokenizer (lower case, white space, 1- and 2-grams), a vocabulary file (an
asset, as a real encoder's tokens.txt is, so a model that holds it must carry the file) and an
embedding table whose mean over a document's n-grams is the vector."""
from __future__ import annotations

import collections
import csv
import os

import tensorflow as tf


def ngrams_of(texts):
    tokens = tf.strings.split(tf.strings.lower(texts))
    return tf.concat([tokens, tf.strings.ngrams(tokens, 2, separator=" ")], axis=1)


class Encoder(tf.Module):
    def __init__(self, vocabulary_file: str, size: int, dim: int):
        super().__init__()
        initializer = tf.lookup.TextFileInitializer(vocabulary_file, tf.string, tf.lookup.TextFileIndex.WHOLE_LINE,
                                                    tf.int64, tf.lookup.TextFileIndex.LINE_NUMBER)
        self.table = tf.lookup.StaticHashTable(initializer, default_value=size)  # size: out of vocabulary
        self.embeddings = tf.Variable(tf.random.stateless_normal([size + 1, dim], seed=[1, 2], stddev=0.3),
                                      name="embeddings")

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def __call__(self, texts):
        grams = ngrams_of(texts)
        vectors = tf.gather(self.embeddings, tf.ragged.map_flat_values(self.table.lookup, grams))
        count = tf.cast(tf.maximum(grams.row_lengths(), 1), tf.float32)[:, None]
        return tf.reduce_sum(vectors, axis=1) / count


def save_encoder(folder: str, csv_path: str, column: str, dim: int = 16, min_count: int = 3) -> str:
    """An encoder over the n-grams seen ``min_count`` times in ``csv_path``'s ``column``, saved to
    ``folder`` (its vocabulary file written beside it first, then copied in as an asset)."""
    with open(csv_path, newline="", encoding="utf-8") as f:
        texts = [row[column] for row in csv.DictReader(f)]
    counts = collections.Counter(g.decode() for row in ngrams_of(tf.constant(texts)).to_list() for g in row)
    words = sorted(w for w, c in counts.items() if c >= min_count and "\n" not in w)
    vocabulary = folder + ".vocabulary.txt"
    with open(vocabulary, "w", encoding="utf-8") as f:
        f.write("\n".join(words) + "\n")
    tf.saved_model.save(Encoder(vocabulary, len(words), dim), folder)
    os.remove(vocabulary)  # the SavedModel's assets/ holds its copy
    return folder
