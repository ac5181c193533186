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
                       folder: str) -> List[str]:
    """Every feature's vocabulary file (an empty one holds tft's dummy value); their paths, in order."""
    by_index: Dict[int, List[bytes]] = dict(found)
    tf.io.gfile.makedirs(folder)
    paths = []
    for index, name in enumerate(names):
        tokens = by_index.get(index) or [EMPTY_STRING_DUMMY if is_text[index] else EMPTY_INTEGER_DUMMY]
        path = os.path.join(folder, name)
        with tf.io.gfile.GFile(path, "wb") as f:
            f.write(b"".join(token + b"\n" for token in tokens))
        paths.append(path)
    return paths


@functools.lru_cache(maxsize=None)
def _pass_class():
    """The PTransform (built once, on first use: it subclasses tft_beam's, which imports Beam)."""
    import apache_beam as beam
    from tensorflow_transform.beam.experimental import analyzer_impls

    class VocabularyPass(analyzer_impls.PTransformAnalyzer):
        """Batches of every vocabulary feature's dense keys in; one file path per feature out."""

        def __init__(self, names: Sequence[str], top_ks: Sequence[int], is_text: Sequence[bool]):
            super().__init__()
            self.names, self.top_ks, self.is_text = list(names), list(top_ks), list(is_text)

        def expand(self, batches):
            top_ks, names, is_text = self.top_ks, self.names, self.is_text
            folder = os.path.join(self.base_temp_dir, f"vocabularies-{uuid.uuid4().hex}")
            tags = [f"vocabulary_{i}" for i in range(len(names))]
            paths = (batches
                     | "CountEachBatch" >> beam.FlatMap(count_batch)
                     | "SumCounts" >> beam.CombinePerKey(sum)
                     | "ByFeature" >> beam.MapTuple(lambda key, count: (key[0], (count, key[1])))
                     | "GroupByFeature" >> beam.GroupByKey()
                     | "TopK" >> beam.MapTuple(lambda index, counts: (index, top_values(counts, top_ks[index])))
                     | "AllFeatures" >> beam.combiners.ToList()
                     | "Write" >> beam.FlatMap(lambda found: [
                         beam.pvalue.TaggedOutput(tag, path.encode())
                         for tag, path in zip(tags, write_vocabularies(found, names, is_text, folder))])
                     .with_outputs(*tags))
            return tuple(paths[tag] for tag in tags)

    return VocabularyPass


def vocabulary_paths(names: Sequence[str], keys: Sequence[tf.Tensor], top_ks: Sequence[int]) -> List[tf.Tensor]:
    """One analyzer for all ``keys`` (rank-1 dense tensors, text or int64): each one's
    vocabulary file path (an asset of the Transform output, named ``names[i]``)."""
    import tensorflow_transform as tft

    is_text = [k.dtype == tf.string for k in keys]
    return tft.experimental.ptransform_analyzer(
        inputs=list(keys), ptransform=_pass_class()(names, top_ks, is_text),
        output_dtypes=[tf.string] * len(keys), output_shapes=[[]] * len(keys),
        # what a vocabulary holds while the graph is traced before the pass has run (tft's own
        # vocabulary starts from its dummy value too)
        output_asset_default_values=[EMPTY_STRING_DUMMY if text else EMPTY_INTEGER_DUMMY for text in is_text],
        name="vocabulary_pass")
