"""The full-pass values the preprocessing needs (means, variances, quantile boundaries,
vocabularies): computed by tft in the Transform, or read back from a Transform output.

``TftAnalyzers`` learns every numeric statistic as one vector per kind (transforms/number_pass.py,
each saved under a group name by an identity op, so the Transform's saved graph holds it as a
constant) and every vocabulary in one pass (transforms/vocabulary_pass.py, each an asset file
named as tft names it). ``FrozenAnalyzers.load`` reads them back per feature (``feature_values``:
the vectors, or the per-feature names ``analyzer_name`` of a Transform written before them), for
a model that runs the same preprocessing without tft (TFLite, serving/tflite.py); a value it
cannot find names the Transform to re-run, except a numeric input's range (``value_range``): a
Transform written before ranges were learnt clips nothing, and neither does its frozen copy.
"""
from __future__ import annotations

import os
import re
from typing import Any, Dict, List, Mapping, Optional, Protocol, Sequence

import numpy as np
import tensorflow as tf

from tfxline.transforms import features as F
from tfxline.transforms import number_pass
from tfxline.transforms.analyzer_names import NAME_PREFIX, AnalyzerValuesError, analyzer_name  # noqa: F401 - callers import them here
from tfxline.transforms.columns import MISSING_STRING, is_present


class Analyzers(Protocol):
    """What the preprocessing reads: first every numeric input's statistics and every vocabulary
    (``learn_*``, each one pass for all features), then the statistics as vectors over the
    numeric features (in the order they were learnt) and the vocabulary features' ids (of their
    ``keys``; ``raw``: their raw columns)."""
    def learn_numbers(self, features: Sequence[F.InputFeature], values: tf.Tensor, present: tf.Tensor) -> None: ...
    def learn_vocabularies(self, features: Sequence[F.InputFeature], keys: Sequence[tf.Tensor]) -> None: ...
    def statistic(self, kind: str) -> tf.Tensor: ...
    def boundaries(self, num_buckets: int) -> tf.Tensor: ...
    def vocabulary_ids(self, features: Sequence[F.InputFeature], raw: Sequence[Any],
                       keys: Sequence[tf.Tensor]) -> List[tf.Tensor]: ...
    def text_ids(self, feature: F.InputFeature, text: tf.Tensor) -> tf.Tensor: ...


class TftAnalyzers:
    """tft's analyzers over the whole dataset (the Transform): the numeric statistics
    (transforms/number_pass.py) and the vocabularies (transforms/vocabulary_pass.py), each learnt
    for all features at once, before the features that read them are built."""

    def __init__(self):
        # the current trace's learnt tensors
        self._numbers: Dict[str, tf.Tensor] = {}
        self._boundaries: Dict[int, tf.Tensor] = {}
        self._vocabularies: Dict[str, tf.Tensor] = {}
        self._learnt: List[F.InputFeature] = []

    def __getstate__(self):
        """Beam pickles the preprocessing_fn, and this with it: never the last trace's tensors."""
        return {"_numbers": {}, "_boundaries": {}, "_vocabularies": {}, "_learnt": []}

    def learn_numbers(self, features, values, present):
        """``values``, ``present``: the features' [rows, k] block (transforms/columns.dense_block)."""
        self._numbers, self._boundaries = number_pass.learn(features, values, present)

    def statistic(self, kind):
        """The [k] vector of a statistic (number_pass.KINDS): the min as ``negated_min``; NaN where
        a column had no value."""
        return self._numbers[kind]

    def boundaries(self, num_buckets):
        """[c, num_buckets - 1]: the quantile boundaries of the c features bucketized so, in order."""
        return self._boundaries[num_buckets]

    def learn_vocabularies(self, features, keys):
        from tfxline.transforms import vocabulary_pass

        self._learnt = list(features)
        if not features:
            return
        names = [F.vocabulary_name(f.name) for f in features]
        paths, self._combined = vocabulary_pass.vocabulary_paths(names, keys, [f.top_k for f in features])
        self._vocabularies = {f.name: path for f, path in zip(features, paths)}

    def vocabulary_ids(self, features, raw, keys):
        """Each feature's ids of its ``keys``, tft.apply_vocabulary's, from one table of every
        vocabulary (vocabulary_pass.COMBINED_NAME) looked up once for each kind of key (text,
        numbers): a table and its lookup per feature were most of a wide table's traced graph."""
        import tensorflow_transform as tft

        from tfxline.transforms import vocabulary_pass

        assert list(features) == self._learnt, "vocabulary_ids reads the features learn_vocabularies learnt"
        if not features:
            return []
        # each feature's mark line, and the closing one: its lines are between its mark and the next
        marks = tft.apply_vocabulary(tf.constant([vocabulary_pass.combined_key(i) for i in range(len(features) + 1)]),
                                     self._combined)
        starts, sizes = marks[:-1] + 1, marks[1:] - marks[:-1] - 1
        ids: List[Any] = [None] * len(features)
        for text in (True, False):
            at = [i for i, k in enumerate(keys) if (k.dtype == tf.string) == text]
            if not at:
                continue
            block = tf.stack([keys[i] for i in at], axis=1)
            block = block if text else tf.strings.as_string(block)
            lines = tf.strings.join([tf.broadcast_to(tf.constant([[f"{i}:" for i in at]]), tf.shape(block)), block])
            found = tft.apply_vocabulary(lines, self._combined)   # its line in the combined file, or -1
            local = vocabulary_pass.block_ids(found, tf.gather(starts, at), tf.gather(sizes, at),
                                              [features[i].oov_buckets for i in at], block)
            for i, column in zip(at, tf.unstack(local, num=len(at), axis=1)):
                ids[i] = column
        return ids

    def text_ids(self, feature, text):
        """A text feature's [rows, length] n-gram ids in its vocabulary, learnt here (transforms/text.py)."""
        from tfxline.transforms import text as text_lib

        vocabulary = text_lib.learn_vocabulary(feature, text, F.vocabulary_name(feature.name))
        return text_lib.text_ids(feature, text, vocabulary)


def needed(spec: F.FeatureSpec) -> List[str]:
    """The per-feature values the spec's frozen preprocessing reads."""
    kinds = {"bucketize": ("boundaries", "mean")}
    return [analyzer_name(f, k) for f in number_pass.numeric_features(spec.inputs)
            for k in kinds.get(f.transform, ("mean", "var"))]


def optional(spec: F.FeatureSpec) -> List[str]:
    """The per-feature values it reads where present: the z-scored inputs' ranges (a Transform
    written before they were learnt clips nothing)."""
    return [analyzer_name(f, k) for f in number_pass.numeric_features(spec.inputs)
            if f.transform != "bucketize" for k in ("negated_min", "max")]


def feature_values(transform_fn_dir: str, spec: F.FeatureSpec, names: Sequence[str],
                   optional_names: Sequence[str] = ()) -> Dict[str, np.ndarray]:
    """{per-feature analyzer name: value} of ``names`` (each required) and ``optional_names``,
    from the statistics' vectors of a Transform output (transforms/number_pass.py), or from the
    per-feature names of one written before them."""
    numeric = number_pass.numeric_features(spec.inputs)
    vectors = read_values(transform_fn_dir, [], number_pass.group_names(numeric))
    found = number_pass.per_feature(numeric, vectors)
    missing = [n for n in list(names) + list(optional_names) if n not in found]
    if missing:  # an older Transform output: its values under their own names
        required = [n for n in names if n not in found]
        found.update(read_values(transform_fn_dir, required, [n for n in optional_names if n not in found]))
    return {n: found[n] for n in list(names) + list(optional_names) if n in found}


class FrozenAnalyzers:
    """The values a Transform computed, as constants; vocabularies as in-graph tables.

    Every op here has a TFLite builtin (comparisons, sums, hash tables of string keys)
    except the hash of a vocabulary with more than one out-of-vocabulary bucket, which must be
    tft's: StringToHashBucketFast (and AsString for integer keys), Select TF ops."""

    def __init__(self, values: Mapping[str, np.ndarray], vocabularies: Mapping[str, List[bytes]]):
        self.values = dict(values)
        self.vocabularies = dict(vocabularies)
        self._tables: Dict[str, Any] = {}
        self._numeric: List[F.InputFeature] = []

    @classmethod
    def load(cls, transform_output_dir: str, spec: F.FeatureSpec) -> "FrozenAnalyzers":
        from tensorflow_transform.output_wrapper import TFTransformOutput
        output = TFTransformOutput(transform_output_dir)
        values = feature_values(os.path.join(transform_output_dir, "transform_fn"), spec, needed(spec), optional(spec))
        vocabularies = {f.name: output.vocabulary_by_name(F.vocabulary_name(f.name))
                        for f in spec.inputs if f.transform == "vocabulary"}
        return cls(values, vocabularies)

    def learn_numbers(self, features, values, present):
        """Nothing to learn: the statistics were read from the Transform output; which features
        the vectors cover, in order."""
        self._numeric = list(features)

    def statistic(self, kind):
        # NaN: a range a Transform written before ranges were learnt lacks (its graph clips nothing)
        return tf.constant([self.values.get(analyzer_name(f, kind), np.nan) for f in self._numeric], tf.float32)

    def boundaries(self, num_buckets):
        indices = number_pass.bucket_groups(self._numeric)[num_buckets]
        rows = [np.asarray(self.values[analyzer_name(self._numeric[i], number_pass.BOUNDARIES)], np.float32).reshape(-1)
                for i in indices]
        return tf.constant(np.stack(rows))

    def table(self, feature):
        """A string vocabulary as a hash table built in the graph (TFLite's HASHTABLE
        builtins); create it outside the traced function (``tables``)."""
        if feature.name not in self._tables:
            keys = self.vocabularies[feature.name]
            self._tables[feature.name] = tf.lookup.StaticHashTable(
                tf.lookup.KeyValueTensorInitializer(tf.constant(keys, tf.string),
                                                    tf.range(len(keys), dtype=tf.int64)), default_value=-1)
        return self._tables[feature.name]

    def learn_vocabularies(self, features, keys):
        """Nothing to learn: the vocabularies were read from the Transform output."""

    def vocabulary_ids(self, features, raw, keys):
        ids = []
        for feature, x, key in zip(features, raw, keys):
            if is_present(x) and x.dtype == tf.string:
                # TFLite has no select of strings: look the values up, then take the missing
                # value's id where a value is missing (the same ids as filling first)
                missing_id = self.vocabulary(feature, tf.constant([MISSING_STRING]))[0]
                ids.append(tf.where(x.present, self.vocabulary(feature, x.values), missing_id))
            else:
                ids.append(self.vocabulary(feature, key))
        return ids

    def text_ids(self, feature, text):
        """No phone model reads text (Flex-only string ops): the config refuses it (pipeline/config)."""
        raise ValueError(f"feature {feature.name!r} is text: TFLite has no builtin string ops to tokenise it; "
                         "set serving.tflite: none")

    def vocabulary(self, feature, dense):
        """One feature's ids of its keys (``dense``), as tft.apply_vocabulary gives them."""
        keys = self.vocabularies[feature.name]
        if dense.dtype == tf.string:
            # reshape: TFLite's HASHTABLE_FIND leaves its output's shape unknown until it runs,
            # and a fresh interpreter's first call (no resize) would meet a scalar downstream
            ids = tf.reshape(self.table(feature).lookup(dense), [-1])
        else:  # integer keys: no TFLite builtin table maps int64 to int64; compare with each key
            key_values = tf.constant([int(k) for k in keys] or [0], tf.int64)
            equal = tf.equal(tf.expand_dims(dense, 1), tf.expand_dims(key_values, 0))
            found = tf.reduce_any(equal, axis=1) if keys else tf.zeros_like(dense, tf.bool)
            ids = tf.where(found, tf.argmax(tf.cast(equal, tf.int32), axis=1, output_type=tf.int64),
                           tf.constant(-1, tf.int64))
        if feature.oov_buckets <= 0:
            return ids
        if feature.oov_buckets == 1:  # one bucket: no hash to compute (and no Select TF op)
            return tf.where(ids >= 0, ids, tf.constant(len(keys), tf.int64))
        # tf.lookup.StaticVocabularyTable's rule, which tft uses: an unseen key's bucket is the
        # fingerprint hash of its string form, after the vocabulary (a Select TF op in TFLite)
        as_string = dense if dense.dtype == tf.string else tf.strings.as_string(dense)
        buckets = tf.strings.to_hash_bucket_fast(as_string, feature.oov_buckets) + len(keys)
        return tf.where(ids >= 0, ids, buckets)


def read_values(transform_fn_dir: str, names: List[str], optional_names: Sequence[str] = ()) -> Dict[str, np.ndarray]:
    """{analyzer name: value} from a Transform's saved graph; of ``optional_names``, those it holds.

    tft saves the transform as a signature that calls the traced ``preprocessing_fn``; each
    analyzer output reaches it as an argument fed by a captured constant (or, in graphs
    frozen differently, as a Const inside). The named identity is followed to either."""
    if not names and not optional_names:
        return {}
    loaded = tf.saved_model.load(transform_fn_dir)
    pattern = re.compile(r"(?:^|/)(" + "|".join(map(re.escape, list(names) + list(optional_names))) + r")$")
    found: Dict[str, Optional[np.ndarray]] = {}  # None: no constant value found
    for cf in loaded.signatures.values():
        graph = cf.graph
        captured = {id(internal): external for external, internal in graph.captures}
        library = {f.signature.name: f for f in graph.as_graph_def().library.function}
        for op in graph.get_operations():
            m = pattern.search(op.name)
            if m:
                found.setdefault(m.group(1), _value(op.outputs[0], captured))
            if op.type in ("PartitionedCall", "StatefulPartitionedCall") and op.get_attr("f").name in library:
                fdef = library[op.get_attr("f").name]
                args = [a.name for a in fdef.signature.input_arg]
                nodes = {n.name: n for n in fdef.node_def}
                for node in fdef.node_def:
                    m = pattern.search(node.name)
                    if not m:
                        continue
                    source = _follow_identities(node, nodes)
                    if isinstance(source, str) and source in args:
                        found.setdefault(m.group(1), _value(op.inputs[args.index(source)], captured))
                    elif source is not None and not isinstance(source, str):  # a Const node
                        found.setdefault(m.group(1), tf.make_ndarray(source.attr["value"].tensor))
    missing = [n for n in names if found.get(n) is None]
    if missing:
        raise AnalyzerValuesError(
            f"the Transform output {os.path.dirname(transform_fn_dir)} holds no value for {missing[0]} "
            f"({len(missing)} of {len(names)} missing): it was written before its analyzers were named; "
            "fix: run the pipeline again so the Transform re-runs (tfxline run)")
    return {n: value for n in list(names) + list(optional_names) if (value := found.get(n)) is not None}


def _follow_identities(node, nodes):
    """The Const node an Identity chain starts from, or the name of the function argument."""
    while node.op == "Identity":
        name = node.input[0].split(":")[0]
        if name not in nodes:
            return name
        node = nodes[name]
    return node if node.op == "Const" else None


def _value(tensor: tf.Tensor, captured: Mapping[int, Any]):
    """A graph tensor's constant value: a captured eager tensor, or a Const (through Identity)."""
    while True:
        if id(tensor) in captured and hasattr(captured[id(tensor)], "numpy"):
            return np.asarray(captured[id(tensor)].numpy())
        value = tf.get_static_value(tensor)
        if value is not None:
            return np.asarray(value)
        if tensor.op.type != "Identity":
            return None
        tensor = tensor.op.inputs[0]
