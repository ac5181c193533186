"""The tft ``preprocessing_fn``, built from the feature spec in the pipeline config.

TFX's Transform calls ``preprocessing_fn(inputs, custom_config)``; the pipeline factory
puts the feature spec into ``custom_config['features']``, so this module names no
feature itself. Missing values (the taxi columns are 0% to 100% empty) arrive as sparse
tensors and are filled per transform as documented in ``transforms.features``.

Each kind of feature is built as one block ([rows, columns]: numbers, codes, vocabulary keys),
its statistics read as one vector per kind and its vocabularies from one table, so the traced
graph grows by a few ops a column, not tens (a 300-column table's graph was 21,000 ops, and every
component that loads it paid for them: transforms/columns.py, docs/scale.md).

The same code builds the TFLite model's preprocessing (serving/tflite.py): there
the full-pass analyzers are the values the Transform computed, read back from its graph
(``transforms.analyzers``), and a raw input is a dense column with a mask of present values
(``Present``), so the math is written once.
"""
from __future__ import annotations

import types
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

import tensorflow as tf

from tfxline import task_types
from tfxline.transforms import dates, number_pass
from tfxline.transforms import features as F
from tfxline.transforms import text as text_lib
from tfxline.transforms.analyzers import Analyzers, TftAnalyzers
from tfxline.transforms.columns import (  # noqa: F401 - callers import them here
    MISSING_INT,
    MISSING_STRING,
    Present,
    dense_block,
    is_present,
    map_values,
    presence,
    to_dense,
    unstacked,
)
from tfxline.transforms.crosses import hashed_cross

# A numeric input is clipped to its training range widened by this fraction of (max - min) on each
# side (transforms/features.py); a regression model's output, to the label's (trainer/model.py)
RANGE_MARGIN = 0.1


def widened(low: Any, high: Any) -> Tuple[Any, Any]:
    """A learnt [low, high] widened by ``RANGE_MARGIN`` of its width on each side."""
    margin = RANGE_MARGIN * (high - low)
    return low - margin, high + margin


# custom_config's key: the text inputs passed through as raw strings (make_preprocessing_fn)
RAW_TEXT = "raw_text"


def preprocessing_fn(inputs: Dict[str, Any], custom_config: Mapping[str, Any]) -> Dict[str, Any]:
    """Entry point TFX's Transform calls (referenced by import path, not module_file)."""
    spec = F.FeatureSpec.from_dict(custom_config["features"])
    return make_preprocessing_fn(spec, raw_text=bool(custom_config.get(RAW_TEXT)))(inputs)


def make_preprocessing_fn(spec: F.FeatureSpec, analyzers: Optional[Analyzers] = None, with_label: bool = True,
                          raw_text: bool = False) -> Callable[[Dict[str, Any]], Dict[str, Any]]:
    """A plain ``preprocessing_fn(inputs)`` for a feature spec (also used by tests).

    ``analyzers``: tft's full passes (the default), or the frozen values of a Transform
    output (``transforms.analyzers.FrozenAnalyzers``, for a model that serves without tft).
    ``with_label``: False for serving, where no label column is sent.
    ``raw_text``: each text input as its raw [rows] string (a missing value ""), not n-gram ids:
    what a pretrained encoder reads (``model.text_encoder: pretrained``; the factory sets it).
    """
    analyzers = analyzers or TftAnalyzers()

    def fn(inputs: Dict[str, Any]) -> Dict[str, Any]:
        # Each kind of feature as one block: its ops do not grow with the number of columns
        # (transforms/columns.py), the learnt values as one vector per statistic (number_pass.py)
        numeric = number_pass.numeric_features(spec.inputs)
        values, present = measured_block(numeric, inputs)
        analyzers.learn_numbers(numeric, values, present)
        learnt = [f for f in spec.inputs if f.transform == "vocabulary"]
        keys = vocabulary_key_columns(learnt, inputs)
        analyzers.learn_vocabularies(learnt, keys)
        built = numeric_outputs(numeric, values, present, analyzers)
        built.update(identity_outputs([f for f in spec.inputs if f.transform == "identity"], inputs))
        ids = analyzers.vocabulary_ids(learnt, [inputs[f.source] for f in learnt], keys)
        built.update(zip([f.name for f in learnt], ids))
        for feature in spec.inputs:
            if feature.transform == "datetime" and feature.name not in built:
                built[feature.name] = datetime_part(feature, inputs[feature.source])
            elif feature.transform == F.IMAGE_TRANSFORM:  # its bytes, as stored: decoded where the pixels
                built[feature.name] = to_dense(inputs[feature.source], "")  # are used (transforms/images.py)
            elif feature.is_text and raw_text:  # the text itself, for a pretrained encoder's own tokenizer
                built[feature.name] = text_lib.raw_text(feature, inputs[feature.source])
            elif feature.is_text:  # [rows, length] n-gram ids in its vocabulary (transforms/text.py)
                built[feature.name] = analyzers.text_ids(feature, text_lib.raw_text(feature, inputs[feature.source]))
        outputs = {F.transformed_name(f.name): built[f.name] for f in spec.inputs}
        for cross in spec.crosses:
            outputs[F.transformed_name(cross.name)] = hashed_cross(
                [outputs[F.transformed_name(n)] for n in cross.inputs],
                [F.index_bound(spec.input(n)) for n in cross.inputs], cross.hash_buckets)
        if with_label:
            outputs[spec.label.name] = transform_label(spec.label, inputs)
        return outputs

    return fn


def _missing_default(x: Any) -> Any:
    if is_present(x):
        x = x.values
    if x.dtype == tf.string:
        return MISSING_STRING
    if x.dtype.is_integer:
        return tf.constant(MISSING_INT, x.dtype)
    return tf.constant(0, x.dtype)


def measured_block(numeric: Sequence[F.InputFeature], inputs: Mapping[str, Any]) -> Tuple[Any, Any]:
    """[rows, k] values the numeric features' statistics are learnt from, and which are present
    (``measured_values``, for all at once): a date's days column by column, every other one
    in one block."""
    if not numeric:
        return None, None
    plain = [f for f in numeric if f.transform != "datetime"]
    blocks = []
    if plain:
        values, present = dense_block([inputs[f.source] for f in plain], tf.float32, 0.0)
        logs = [f.transform == "log_zscore" for f in plain]
        if any(logs):
            values = tf.where(tf.constant([logs]), log1p_non_negative(values), values)
        blocks.append((values, present))
    days = [measured_values(f, inputs[f.source]) for f in numeric if f.transform == "datetime"]
    if days:
        blocks.append((tf.stack([m.values for m in days], axis=1), tf.stack([m.present for m in days], axis=1)))
    if len(blocks) == 1:
        return blocks[0]
    order = [f for f in numeric if f.transform != "datetime"] + [f for f in numeric if f.transform == "datetime"]
    columns = [order.index(f) for f in numeric]
    return tuple(tf.gather(tf.concat([b[i] for b in blocks], axis=1), columns, axis=1) for i in (0, 1))


def numeric_outputs(numeric: Sequence[F.InputFeature], values: Any, present: Any,
                    analyzers: Analyzers) -> Dict[str, tf.Tensor]:
    """{feature name: transformed column} of the numeric features from their block: (x - mean) /
    std of the present values, a missing value the mean (0), a value first clipped to the present
    values' range, widened (``widened``): one far outside it (a data-entry error) is the edge
    value, not a point a network extrapolates to. A bucketized one: its quantile bucket, a missing
    value the mean's."""
    if not numeric:
        return {}
    filled = tf.where(present, values, analyzers.statistic("mean"))
    out: Dict[str, tf.Tensor] = {}
    if any(f.transform != "bucketize" for f in numeric):
        mean, std = analyzers.statistic("mean"), tf.sqrt(analyzers.statistic("var"))
        ranged = clip_to_range(filled, (-analyzers.statistic("negated_min"), analyzers.statistic("max")))
        scaled = (ranged - mean) / tf.where(std > 0, std, tf.ones_like(std))
        for f, column in zip(numeric, unstacked(scaled, len(numeric))):
            if f.transform != "bucketize":
                out[f.name] = column
    for num_buckets, indices in number_pass.bucket_groups(numeric).items():
        ids = number_pass.apply_buckets(tf.gather(filled, indices, axis=1), analyzers.boundaries(num_buckets))
        out.update({numeric[i].name: column for i, column in zip(indices, unstacked(ids, len(indices)))})
    return out


def identity_outputs(identities: Sequence[F.InputFeature], inputs: Mapping[str, Any]) -> Dict[str, tf.Tensor]:
    """{feature name: index} of whole-number codes used as their own index; a missing code, or
    one outside [0, num_buckets), the feature's ``default``."""
    if not identities:
        return {}
    values, present = dense_block([inputs[f.source] for f in identities], tf.int64, 0)
    default = tf.constant([f.default for f in identities], tf.int64)
    dense = tf.where(present, values, default)
    out_of_range = tf.logical_or(dense < 0, dense >= tf.constant([f.num_buckets for f in identities], tf.int64))
    ids = tf.where(out_of_range, default, dense)
    return {f.name: column for f, column in zip(identities, unstacked(ids, len(identities)))}


def vocabulary_key_columns(learnt: Sequence[F.InputFeature], inputs: Mapping[str, Any]) -> List[tf.Tensor]:
    """Each vocabulary feature's keys (``vocabulary_keys``): sparse text columns as one block,
    sparse number columns as another; any other kind column by column."""
    xs = [inputs[f.source] for f in learnt]
    if not xs or not all(isinstance(x, tf.SparseTensor) for x in xs):
        return [vocabulary_keys(x) for x in xs]
    keys: List[Any] = [None] * len(xs)
    for text in (True, False):
        at = [i for i, x in enumerate(xs) if (x.dtype == tf.string) == text]
        if not at:
            continue
        if text:
            block, _ = dense_block([xs[i] for i in at], tf.string, MISSING_STRING, cast=lambda v: v)
        else:
            block, _ = dense_block([xs[i] for i in at], tf.int64, MISSING_INT, cast=_round_to_int)
        for i, column in zip(at, tf.unstack(block, num=len(at), axis=1)):   # keys: any int64 (not TFLite's path)
            keys[i] = column
    return keys


def measured_values(feature: F.InputFeature, x: Any) -> Present:
    """What a numeric feature's statistics are learnt from, dense with which rows hold a value:
    the column as float32 (``zscore``, ``bucketize``), its log (``log_zscore``), the days since
    1970 of a date (``datetime`` part ``days``)."""
    if feature.transform == "log_zscore":
        x = log1p_non_negative(x)
    elif feature.transform == "datetime":
        parts, parsed = parse_dates(feature, x)
        return Present(tf.cast(parts["days"], tf.float32), parsed)
    x = _as_float(x)
    if is_present(x):
        return x
    return Present(to_dense(x, 0.0), presence(x))


def vocabulary_keys(x: Any) -> tf.Tensor:
    """A vocabulary feature's values as the vocabulary holds them: rank-1 text or int64, a missing
    value filled (``MISSING_STRING``, ``MISSING_INT``); whole numbers written as floats (3.0) are
    categories by their integer."""
    if x.dtype.is_floating:
        x = _as_int(x)
    dense = to_dense(x, _missing_default(x))
    return tf.cast(dense, tf.int64) if dense.dtype.is_integer else dense


def parse_dates(feature: F.InputFeature, x: Any):
    """(parts, parsed) of an ISO date(-time) text column (transforms/dates.py)."""
    if x.dtype != tf.string:
        raise ValueError(f"feature {feature.name!r}: transform datetime reads text, and column {feature.source!r} "
                         f"holds {x.dtype.name}; fix: declare the column as text (BYTES) in the schema")
    return dates.parse_tensor(to_dense(x, ""))


def datetime_part(feature: F.InputFeature, x: Any) -> tf.Tensor:
    """A category part of an ISO date(-time) text column, ``default`` where the value is missing
    or does not parse (the ``days`` part is a number: ``transform_input``)."""
    parts, parsed = parse_dates(feature, x)
    return tf.where(parsed, parts[feature.part or ""], tf.constant(feature.default, tf.int64))


def clip_to_range(x: tf.Tensor, value_range: Optional[Tuple[tf.Tensor, tf.Tensor]]) -> tf.Tensor:
    """``x`` inside the widened ``value_range`` (None, or NaN for a column with no values: as is)."""
    if value_range is None:
        return x
    low, high = widened(*value_range)
    learnt = value_range[0] <= value_range[1]  # False for NaN
    low = tf.where(learnt, low, tf.constant(-float("inf"), low.dtype))
    high = tf.where(learnt, high, tf.constant(float("inf"), high.dtype))
    return tf.minimum(tf.maximum(x, low), high)


def log1p_non_negative(x: Any) -> Any:
    """log(1 + max(x, 0)) of the present values, keeping the column's sparsity."""
    return map_values(lambda v: tf.math.log1p(tf.maximum(v, 0.0)), _as_float(x))


def transform_label(label: F.Label, inputs: Mapping[str, Any]) -> tf.Tensor:
    """The label the model learns, as the label's task type computes it."""
    return task_types.for_label_transform(label.transform).transform_label(label, inputs, COLUMNS)


def label_in_its_unit(label: F.Label, values: tf.Tensor) -> tf.Tensor:
    """The inverse of the label's transform: a log label (``log: true``) back in the label's own
    unit, what serving returns and evaluation compares."""
    return task_types.for_label_transform(label.transform).label_in_its_unit(label, values)


def _as_float(x: Any) -> Any:
    if is_present(x):
        return Present(tf.cast(x.values, tf.float32), x.present)
    if isinstance(x, tf.SparseTensor):
        return tf.SparseTensor(x.indices, tf.cast(x.values, tf.float32), x.dense_shape)
    if isinstance(x, tf.RaggedTensor):
        return tf.cast(x, tf.float32)
    return tf.cast(x, tf.float32)


def _as_int(x: Any) -> Any:
    """A float column's values rounded to int64, keeping which are present (a missing value
    then takes the integer column's default, not a category of 0)."""
    return map_values(_round_to_int, x)


def _round_to_int(v: tf.Tensor) -> tf.Tensor:
    return tf.cast(tf.round(v), tf.int64) if v.dtype.is_floating else tf.cast(v, tf.int64)


# How a task type's transform_label reads a raw column (task_types/base.py)
COLUMNS = types.SimpleNamespace(to_dense=to_dense, as_float=_as_float, as_int=_as_int, missing_default=_missing_default)
