"""Every vocabulary feature's vocabulary in one pass over the data (tft's custom-analyzer API).

``tft.vocabulary`` is one analyzer per feature, and each is its own chain of Beam stages (count,
merge, filter, top-k, order, write: about twenty transforms). A table of 100 category columns was
~2,000 stages, and the FnApiRunner's cost per stage (a bundle descriptor, pickling, side inputs)
was most of the Transform's wall time and memory (docs/scale.md). Here one
``tft.experimental.ptransform_analyzer`` counts every feature's values in one CombinePerKey keyed
by (feature, value), keeps each feature's ``top_k``, and writes each feature's vocabulary file
under the name ``tft.vocabulary`` would give it (``features.vocabulary_name``), so everything
that reads a Transform output (the Trainer's ``vocabulary_size_by_name``, the frozen TFLite
preprocessing's ``vocabulary_by_name``) reads it unchanged.

The file is tft's own: text, one value a line, most frequent first and ties by the larger value
(tft's ``reverse=True`` sort of (count, value), beam/analyzer_impls.py `_BatchAndPreSort`); an
empty or newline-holding text value is never written (tft's
``_EMPTY_STRING_OR_NEWLINE_CHARS_REGEX``, analyzers.py); an empty vocabulary holds tft's dummy
value (``get_empy_vocabulary_dummy_value``), so a table still initialises.
"""
from __future__ import annotations

import functools
import heapq
import os
import uuid
from typing import Dict, Iterable, List, Sequence, Tuple

import numpy as np
import tensorflow as tf

# tft's entry for an empty vocabulary (tensorflow_transform/analyzers.py,
# get_empy_vocabulary_dummy_value): a table must hold one key to initialise
EMPTY_STRING_DUMMY = b"49d0cd50-04bb-48c0-bc6f-5b575dce351a"
EMPTY_INTEGER_DUMMY = b"-1"
# Every feature's vocabulary in one more file, for one table that looks all of them up at once
# (``TftAnalyzers.vocabulary_ids``): feature i's token t is the line b"i:t", its lines in the order
# of the feature's own file after the line b"i:" (no vocabulary holds an empty token), which marks
# where it starts; a last such line ends the file. The table finds each feature's lines from the
# marks: tft 1.16 takes no output but asset paths from a pass that writes one
# (experimental/analyzers.py:266-268 wraps even a None default as an asset).
COMBINED_NAME = "tfxline_all_vocabularies"


def combined_key(index: int, token: bytes = b"") -> bytes:
    return str(index).encode() + b":" + token


def combined_lines(vocabularies: Sequence[List[bytes]]) -> List[bytes]:
    """The combined file's lines: each feature's mark, then its tokens; the closing mark."""
    lines = []
    for index, tokens in enumerate(vocabularies):
        lines.append(combined_key(index))
        lines.extend(combined_key(index, token) for token in tokens)
    return lines + [combined_key(len(vocabularies))]


def count_batch(batch: Sequence[np.ndarray]) -> Iterable[Tuple[Tuple[int, bytes], int]]:
    """((feature index, value as the file writes it), count) of one batch, each value once."""
    for index, values in enumerate(batch):
        values = np.asarray(values).reshape(-1)
        text = values.dtype.kind in "SOU"
        keys, counts = np.unique(values, return_counts=True)
        for key, count in zip(keys.tolist(), counts.tolist()):
            token = key if isinstance(key, bytes) else str(int(key)).encode()
            if text and (not token or b"\n" in token or b"\r" in token):
                continue  # tft writes no empty or multi-line value into a text vocabulary
            yield (index, token), count


def top_values(counts: Iterable[Tuple[int, bytes]], top_k: int) -> List[bytes]:
    """The ``top_k`` values, most frequent first, ties by the larger value (tft's order)."""
    return [token for _, token in heapq.nlargest(top_k, counts)]


def write_vocabularies(found: Iterable[Tuple[int, List[bytes]]], names: Sequence[str], is_text: Sequence[bool],
                       folder: str) -> Tuple[List[str], str]:
    """Every feature's vocabulary file (an empty one holds tft's dummy value), and the combined
    file (``COMBINED_NAME``): (their paths in order, the combined one's)."""
    by_index: Dict[int, List[bytes]] = dict(found)
    tf.io.gfile.makedirs(folder)
    paths, vocabularies = [], []
    for index, name in enumerate(names):
        tokens = by_index.get(index) or [EMPTY_STRING_DUMMY if is_text[index] else EMPTY_INTEGER_DUMMY]
        path = os.path.join(folder, name)
        with tf.io.gfile.GFile(path, "wb") as f:
            f.write(b"".join(token + b"\n" for token in tokens))
        paths.append(path)
        vocabularies.append(tokens)
    combined_path = os.path.join(folder, COMBINED_NAME)
    with tf.io.gfile.GFile(combined_path, "wb") as f:
        f.write(b"".join(line + b"\n" for line in combined_lines(vocabularies)))
    return paths, combined_path


def pass_outputs(found, names, is_text, folder) -> Iterable:
    """The Beam pass's tagged outputs: each feature's file path, then the combined file's."""
    from apache_beam.pvalue import TaggedOutput

    paths, combined_path = write_vocabularies(found, names, is_text, folder)
    for index, path in enumerate(paths):
        yield TaggedOutput(f"vocabulary_{index}", path.encode())
    yield TaggedOutput("combined", combined_path.encode())


@functools.lru_cache(maxsize=None)
def _pass_class():
    """The PTransform (built once, on first use: it subclasses tft_beam's, which imports Beam)."""
    import apache_beam as beam
    from tensorflow_transform.beam.experimental import analyzer_impls

    class VocabularyPass(analyzer_impls.PTransformAnalyzer):
        """Batches of every vocabulary feature's dense keys in; one file path per feature and the
        combined file's path out."""

        def __init__(self, names: Sequence[str], top_ks: Sequence[int], is_text: Sequence[bool]):
            super().__init__()
            self.names, self.top_ks, self.is_text = list(names), list(top_ks), list(is_text)

        def expand(self, batches):
            top_ks, names, is_text = self.top_ks, self.names, self.is_text
            if self.base_temp_dir is None:  # tf.Transform sets it before it expands an analyzer
                raise RuntimeError("the vocabulary pass was expanded outside tf.Transform's analysis")
            folder = os.path.join(self.base_temp_dir, f"vocabularies-{uuid.uuid4().hex}")
            tags = [f"vocabulary_{i}" for i in range(len(names))] + ["combined"]
            paths = (batches
                     | "CountEachBatch" >> beam.FlatMap(count_batch)
                     | "SumCounts" >> beam.CombinePerKey(sum)  # pyright: ignore[reportArgumentType] - Beam takes a callable
                     | "ByFeature" >> beam.MapTuple(lambda key, count: (key[0], (count, key[1])))
                     | "GroupByFeature" >> beam.GroupByKey()
                     | "TopK" >> beam.MapTuple(lambda index, counts: (index, top_values(counts, top_ks[index])))
                     | "AllFeatures" >> beam.combiners.ToList()
                     | "Write" >> beam.FlatMap(pass_outputs, names, is_text, folder).with_outputs(*tags))
            return tuple(paths[tag] for tag in tags)

    return VocabularyPass


def vocabulary_paths(names: Sequence[str], keys: Sequence[tf.Tensor],
                     top_ks: Sequence[int]) -> Tuple[List[tf.Tensor], tf.Tensor]:
    """One analyzer for all ``keys`` (rank-1 dense tensors, text or int64): (each one's vocabulary
    file path, an asset of the Transform output named ``names[i]``; the combined file's path)."""
    from tensorflow_transform.experimental.analyzers import ptransform_analyzer

    is_text = [k.dtype == tf.string for k in keys]
    # what a vocabulary holds while the graph is traced before the pass has run (tft's own
    # vocabulary starts from its dummy value too)
    defaults = [EMPTY_STRING_DUMMY if text else EMPTY_INTEGER_DUMMY for text in is_text]
    outputs = ptransform_analyzer(
        inputs=list(keys), ptransform=_pass_class()(names, top_ks, is_text),
        output_dtypes=[tf.string] * (len(keys) + 1), output_shapes=[[]] * (len(keys) + 1),
        output_asset_default_values=defaults + [b"\n".join(combined_lines([[d] for d in defaults]))],
        name="vocabulary_pass")
    return list(outputs[:len(keys)]), outputs[len(keys)]


def block_ids(found: tf.Tensor, offsets: tf.Tensor, sizes: tf.Tensor, oov_buckets: Sequence[int],
              keys: tf.Tensor) -> tf.Tensor:
    """[rows, c] ids in each column's own vocabulary from ``found``, the line of "i:key" in the
    combined file (-1: not in it), as tft.apply_vocabulary gives them: the line in the feature's
    file; an unseen key (an empty text too, whose line is the mark) -1 without out-of-vocabulary
    buckets, else the vocabulary's size plus the fingerprint hash of the key's text into its
    buckets (tf.lookup.StaticVocabularyTable's rule). ``offsets``, ``sizes``: each column's first
    line and number of lines; ``keys``: its keys as text."""
    buckets = np.asarray(oov_buckets, np.int64)
    unseen = tf.where(tf.constant(buckets > 0), sizes, tf.constant(-1, tf.int64))[tf.newaxis, :]
    for count in sorted(set(buckets[buckets > 1].tolist())):
        hashed = tf.strings.to_hash_bucket_fast(keys, count) + sizes[tf.newaxis, :]
        unseen = tf.where(tf.constant(buckets == count)[tf.newaxis, :], hashed, unseen)
    return tf.where(found >= offsets[tf.newaxis, :], found - offsets[tf.newaxis, :], unseen)
