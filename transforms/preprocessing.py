"""The tft ``preprocessing_fn``, built from the feature spec in the pipeline config.

TFX's Transform calls ``preprocessing_fn(inputs, custom_config)``; the pipeline factory
puts the feature spec into ``custom_config['features']``, so this module names no
feature itself. Missing values (the taxi columns are 0% to 100% empty) arrive as sparse
tensors and are filled per transform as documented in ``transforms.features``.

The same code builds the TFLite model's preprocessing (serving/tflite.py): there
the full-pass analyzers are the values the Transform computed, read back from its graph
(``transforms.analyzers``), and a raw input is a dense column with a mask of present values
(``Present``), so the math is written once.
"""
from __future__ import annotations

import dataclasses
import types
from typing import Any, Callable, Dict, Mapping, Optional, Tuple

import tensorflow as tf

from tfxline import task_types
from tfxline.transforms import dates, number_pass
from tfxline.transforms import features as F
from tfxline.transforms.analyzers import Analyzers, TftAnalyzers

MISSING_STRING = "__MISSING__"
MISSING_INT = -1
# A numeric input is clipped to its training range widened by this fraction of (max - min) on each
# side (transforms/features.py); a regression model's output, to the label's (trainer/model.py)
RANGE_MARGIN = 0.1


def widened(low: Any, high: Any) -> Tuple[Any, Any]:
    """A learnt [low, high] widened by ``RANGE_MARGIN`` of its width on each side."""
    margin = RANGE_MARGIN * (high - low)
    return low - margin, high + margin


def preprocessing_fn(inputs: Dict[str, Any], custom_config: Mapping[str, Any]) -> Dict[str, Any]:
    """Entry point TFX's Transform calls (referenced by import path, not module_file)."""
    spec = F.FeatureSpec.from_dict(custom_config["features"])
    return make_preprocessing_fn(spec)(inputs)


def make_preprocessing_fn(spec: F.FeatureSpec, analyzers: Optional[Analyzers] = None,
                          with_label: bool = True) -> Callable[[Dict[str, Any]], Dict[str, Any]]:
    """A plain ``preprocessing_fn(inputs)`` for a feature spec (also used by tests).

    ``analyzers``: tft's full passes (the default), or the frozen values of a Transform
    output (``transforms.analyzers.FrozenAnalyzers``, for a model that serves without tft).
    ``with_label``: False for serving, where no label column is sent.
    """
    analyzers = analyzers or TftAnalyzers()

    def fn(inputs: Dict[str, Any]) -> Dict[str, Any]:
        outputs: Dict[str, Any] = {}
        numeric = number_pass.numeric_features(spec.inputs)
        measured = {f.name: measured_values(f, inputs[f.source]) for f in numeric}
        analyzers.learn_numbers(numeric, [measured[f.name].values for f in numeric],
                                [measured[f.name].present for f in numeric])
        learnt = [f for f in spec.inputs if f.transform == "vocabulary"]
        analyzers.learn_vocabularies(learnt, [vocabulary_keys(inputs[f.source]) for f in learnt])
        for feature in spec.inputs:
            outputs[F.transformed_name(feature.name)] = transform_input(
                feature, inputs[feature.source], analyzers, measured.get(feature.name))
        for cross in spec.crosses:
            outputs[F.transformed_name(cross.name)] = hashed_cross(
                [outputs[F.transformed_name(n)] for n in cross.inputs],
                [F.index_bound(spec.input(n)) for n in cross.inputs], cross.hash_buckets)
        if with_label:
            outputs[spec.label.name] = transform_label(spec.label, inputs)
        return outputs

    return fn


@dataclasses.dataclass
class Present:
    """A dense single-valued column and which of its values are present (``values`` holds
    anything where ``present`` is False): how the TFLite model takes a raw feature."""
    values: tf.Tensor
    present: tf.Tensor

    @property
    def dtype(self) -> tf.DType:
        return self.values.dtype


def is_present(x: Any) -> bool:
    """``x`` is a ``Present`` column. By its fields, not its class: a copy of this module that
    Beam's pickling re-created (seen on Beam 2.77) has its own ``Present`` class."""
    return hasattr(x, "present") and hasattr(x, "values") and not isinstance(x, (tf.SparseTensor, tf.RaggedTensor))


def to_dense(x: Any, default: Any) -> tf.Tensor:
    """A rank-1 dense tensor from a sparse/ragged/dense/``Present`` single-valued column."""
    if is_present(x):
        return tf.where(x.present, x.values, tf.cast(default, x.values.dtype))
    if isinstance(x, tf.SparseTensor):
        x = tf.sparse.to_dense(
            tf.SparseTensor(x.indices, x.values, [x.dense_shape[0], 1]), default_value=default)
    elif isinstance(x, tf.RaggedTensor):
        x = x.to_tensor(default_value=default, shape=[None, 1])
    return tf.reshape(x, [-1])


def _missing_default(x: Any) -> Any:
    if is_present(x):
        x = x.values
    if x.dtype == tf.string:
        return MISSING_STRING
    if x.dtype.is_integer:
        return tf.constant(MISSING_INT, x.dtype)
    return tf.constant(0, x.dtype)


def transform_input(feature: F.InputFeature, x: Any, analyzers: Analyzers,
                    measured: Optional[Present] = None) -> tf.Tensor:
    """One feature's transformed values; ``measured``: its ``measured_values`` where already built."""
    if number_pass.needs_statistics(feature):
        measured = measured or measured_values(feature, x)
        if feature.transform == "bucketize":
            # Boundaries are quantiles of the present values; a missing value is filled with the mean
            filled = tf.where(measured.present, measured.values, analyzers.mean(feature))
            return analyzers.apply_buckets(filled, analyzers.quantiles(feature))
        return zscore_fill_mean(feature, measured, analyzers)
    if feature.transform == "vocabulary":
        if is_present(x) and x.dtype == tf.string:
            # TFLite has no select of strings: look the values up, then take the missing
            # value's id where a value is missing (the same ids as filling first)
            missing_id = analyzers.vocabulary(feature, tf.constant([MISSING_STRING]))[0]
            return tf.where(x.present, analyzers.vocabulary(feature, x.values), missing_id)
        return analyzers.vocabulary(feature, vocabulary_keys(x))
    if feature.transform == "identity":
        dense = tf.cast(to_dense(x, tf.constant(feature.default, x.dtype)), tf.int64)
        out_of_range = tf.logical_or(dense < 0, dense >= feature.num_buckets)
        return tf.where(out_of_range, tf.constant(feature.default, tf.int64), dense)
    if feature.transform == "datetime":
        return datetime_part(feature, x)
    raise ValueError(f"unknown transform {feature.transform!r}")  # FeatureSpec.validate stops this


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
    return Present(to_dense(x, 0.0), to_dense(map_values(lambda v: tf.ones_like(v, tf.bool), x), False))


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
    return tf.where(parsed, parts[feature.part], tf.constant(feature.default, tf.int64))


def zscore_fill_mean(feature: F.InputFeature, measured: Present, analyzers: Analyzers) -> tf.Tensor:
    """(x - mean) / std over the present values; a missing value becomes 0 (the mean). A value
    is first clipped to the present values' range, widened (``widened``): one far outside it
    (a data-entry error) is the edge value, not a point a network extrapolates to."""
    mean = analyzers.mean(feature)
    std = tf.sqrt(analyzers.var(feature))
    filled = clip_to_range(tf.where(measured.present, measured.values, mean), analyzers.value_range(feature))
    safe_std = tf.where(std > 0, std, tf.ones_like(std))
    return (filled - mean) / safe_std


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


def map_values(fn: Callable[[tf.Tensor], tf.Tensor], x: Any) -> Any:
    """``fn`` applied to a column's present values, keeping which rows have one (sparse,
    ragged, dense or ``Present``)."""
    if is_present(x):
        return Present(fn(x.values), x.present)
    if isinstance(x, tf.SparseTensor):
        return tf.SparseTensor(x.indices, fn(x.values), x.dense_shape)
    if isinstance(x, tf.RaggedTensor):
        return tf.ragged.map_flat_values(fn, x)
    return fn(x)


# Knuth's multiplicative constant and the Mersenne prime 2^31 - 1: every product below stays
# under 2^63, so int64 arithmetic never overflows
_CROSS_MULTIPLIER = 2654435761
_CROSS_PRIME = 2 ** 31 - 1


def hashed_cross(indices, bounds, hash_buckets: int) -> tf.Tensor:
    """The cell of the inputs' transformed indices in their product, folded into
    ``hash_buckets``: exact (no two pairs share a bucket) when the product fits, else a
    multiplicative hash of the cell. Integer arithmetic only, so a TFLite model computes it
    with builtins (a string hash has none). ``bounds``: each index is below its bound."""
    cell = tf.zeros_like(indices[0], tf.int64)
    size = 1
    for index, bound in zip(indices, bounds):
        # +1: a missing or out-of-vocabulary index (-1 without OOV buckets) is a value too
        index = tf.clip_by_value(tf.cast(index, tf.int64) + 1, 0, bound)
        cell = tf.math.floormod(cell * (bound + 1) + index, _CROSS_PRIME)
        size *= bound + 1
    if size <= hash_buckets:
        return cell
    return tf.math.floormod(tf.math.floormod(cell * _CROSS_MULTIPLIER, _CROSS_PRIME), hash_buckets)


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
    return map_values(lambda v: tf.cast(tf.round(v), tf.int64), x)


# How a task type's transform_label reads a raw column (task_types/base.py)
COLUMNS = types.SimpleNamespace(to_dense=to_dense, as_float=_as_float, as_int=_as_int, missing_default=_missing_default)
