"""Feature declarations: the single source of truth for feature names and transforms.

A dataset config lists its raw columns' roles here once; ``transforms.preprocessing``
builds the tft ``preprocessing_fn`` from it and ``trainer`` builds the model inputs and
the serving signature from it. No feature name is written anywhere else.

Transforms of an input column. A feature reads the column of its own name, or the one
named by ``column`` (so one column can feed two features, e.g. ``fare`` as a log-scaled
number and as quantile buckets):

``zscore``      numeric; clipped to the range Transform learns on the training split (the
                present values' [min, max], widened by 10% of max - min on each side), then
                scaled: a value beyond it (a data-entry error 23 standard deviations out) is
                the edge value, never a point the network extrapolates to. Missing values are
                filled with the column mean, so they become 0 after scaling.
``log_zscore``  numeric, for skewed non-negative columns (fares, distances, durations):
                ``log1p(max(x, 0))``, then as ``zscore`` (its range in log space).
``bucketize``   numeric; quantile buckets (``num_buckets``), missing values filled with
                the mean first, so they land in the middle bucket.
``vocabulary``  string or integer category; ``top_k`` most frequent values get their own
                index, everything else (unseen at serving too) goes to one of
                ``oov_buckets`` out-of-vocabulary indices. A missing value is its own
                category (the empty string, or -1 for integers).
``identity``    integer category already in ``[0, num_buckets)``; missing or out of range
                values map to ``default`` (0 unless set).
``image``       encoded image bytes, passed through Transform as bytes; decoded to RGB and resized
                to ``size`` x ``size`` pixels by the Trainer's input and the serving model
                (transforms/images.py), ``augment``-ed in training: crop (default), flip_crop, none.
``text``        free text: its first ``max_tokens`` tokens' n-grams of 1 to ``ngrams`` tokens in a
                vocabulary of ``top_k`` seen in ``min_count`` documents (transforms/text.py), read
                by a text encoder (``model.text_encoder``: trainer/text.py).
``datetime``    text of ISO dates or date-times (``2013-01-01``, ``2013-01-01 05:00:00``,
                ``2013-01-01T05:00:00.5+01:00``; transforms/dates.py), one ``part`` of it:
                ``hour`` (0-23), ``weekday`` (0 Monday to 6 Sunday) or ``month`` (0-11) is a
                category, a missing or unparsable value taking ``default``; ``days`` since
                1970-01-01 (time of day as the fraction) is a number, then as ``zscore``.

A cross combines the transformed indices of two or more categorical features and hashes
them into ``hash_buckets``.

Label transforms decide the task, and with it the model head: each task type documents its own
(task_types/binary.py: ``ratio_threshold``, ``binary``; multiclass.py: ``class_vocabulary``;
regression.py: ``regression``). A label reads the column of its own name or the one in ``column``.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Dict, Optional, Sequence, Tuple

from tfxline import task_types
from tfxline.task_types import TASK_BINARY, TASK_MULTICLASS, TASK_REGRESSION  # noqa: F401 - the names callers import here
from tfxline.task_types.multiclass import LABEL_VOCABULARY  # noqa: F401 - Transform's and the Trainer's name for it
from tfxline.transforms import feature_checks
from tfxline.transforms.dates import PARTS as DATETIME_PARTS
from tfxline.typed_config.close_names import did_you_mean
from tfxline.typed_config.problems import ConfigError
from tfxline.typed_config.read import REQUIRED, from_yaml

NUMERIC_TRANSFORMS = ("zscore", "log_zscore")
CATEGORICAL_TRANSFORMS = ("vocabulary", "identity", "bucketize")
IMAGE_TRANSFORM = feature_checks.IMAGE_TRANSFORM
TEXT_TRANSFORM = feature_checks.TEXT_TRANSFORM
INPUT_TRANSFORMS = NUMERIC_TRANSFORMS + CATEGORICAL_TRANSFORMS + ("datetime", IMAGE_TRANSFORM, TEXT_TRANSFORM)
TABLE, IMAGE = "table", "image"  # the kinds of data a spec describes (FeatureSpec.data_kind)
LABEL_TRANSFORMS = task_types.LABEL_TRANSFORMS   # ratio_threshold, binary, class_vocabulary, regression
# What a missing name's refusal says (a feature, a cross and a label all need one).
NAME_REQUIRED = {REQUIRED: "add name: (the column it reads, unless column: says otherwise)"}
FeatureSpecError = feature_checks.FeatureSpecError  # the spec's refusal (defined with its rules)


def drop_none(d: Dict[str, Any]) -> Dict[str, Any]:
    return {k: v for k, v in d.items() if v is not None}


@dataclasses.dataclass(frozen=True)
class InputFeature:
    name: str = dataclasses.field(metadata=NAME_REQUIRED)
    transform: str
    top_k: int = 1000
    oov_buckets: int = 1
    num_buckets: int = 10
    default: int = 0
    column: Optional[str] = None   # the raw column read; None: the feature's own name
    part: Optional[str] = None     # datetime: hour | weekday | month | days
    size: Optional[int] = None     # image: the side, in pixels, of the square the model sees
    augment: Optional[str] = None  # image: crop (default) | flip_crop | none
    ngrams: Optional[int] = None      # text: n-grams of 1 to ngrams tokens (transforms/text.py's default: 2)
    max_tokens: Optional[int] = None  # text: the tokens of a document read (default 256)
    min_count: Optional[int] = None   # text: an n-gram's fewest training documents to be in the vocabulary (2)

    @property
    def is_categorical(self) -> bool:
        return self.transform in CATEGORICAL_TRANSFORMS or bool(self.transform == "datetime" and
                                                                DATETIME_PARTS.get(self.part or ""))

    @property
    def is_text(self) -> bool:
        return self.transform == TEXT_TRANSFORM

    @property
    def source(self) -> str:
        return self.column or self.name


@dataclasses.dataclass(frozen=True)
class Cross:
    name: str = dataclasses.field(metadata=NAME_REQUIRED)
    inputs: Tuple[str, ...]
    hash_buckets: int = 1000


@dataclasses.dataclass(frozen=True)
class Label:
    name: str = dataclasses.field(metadata=NAME_REQUIRED)
    transform: str
    column: Optional[str] = None
    numerator: Optional[str] = None
    denominator: Optional[str] = None
    threshold: float = 0.0
    positive: Optional[Any] = None   # binary: the positive value as the data writes it (text or number)
    log: bool = False                # regression: learn log1p(label), serve expm1 (the label's unit)

    @property
    def task(self) -> str:
        return task_types.for_label_transform(self.transform).name

    @property
    def source(self) -> str:
        """The raw column a binary, class_vocabulary or regression label reads: ``column``,
        or the label's own name (as for inputs)."""
        return self.column or self.name

    @property
    def source_columns(self) -> Tuple[str, ...]:
        if self.transform == "ratio_threshold":  # both set (validate: its label_fields)
            return (self.numerator or "", self.denominator or "")
        return (self.source,)


@dataclasses.dataclass(frozen=True)
class FeatureSpec:
    """Every raw column's role: model inputs, hashed crosses and the label."""

    label: Label = dataclasses.field(metadata={REQUIRED: "add it (pipeline/configs/taxi.yaml has label and inputs)"})
    inputs: Tuple[InputFeature, ...] = dataclasses.field(
        metadata={REQUIRED: "list the columns the model reads under it (pipeline/configs/taxi.yaml has one)"})
    crosses: Tuple[Cross, ...] = ()

    @property
    def task(self) -> str:
        return self.label.task

    @property
    def data_kind(self) -> str:
        """``image`` when the model reads an encoded image, else ``table``: every module whose code
        differs by the kind of data asks here."""
        return IMAGE if any(f.transform == IMAGE_TRANSFORM for f in self.inputs) else TABLE

    @property
    def image(self) -> Optional[InputFeature]:
        """The image input of an image spec (None for a table)."""
        return next((f for f in self.inputs if f.transform == IMAGE_TRANSFORM), None)

    @property
    def text_inputs(self) -> Tuple[InputFeature, ...]:
        """The free-text inputs (``transform: text``), in a table of any other columns or alone."""
        return tuple(f for f in self.inputs if f.is_text)

    @property
    def input_names(self) -> Tuple[str, ...]:
        return tuple(f.name for f in self.inputs)

    @property
    def model_feature_names(self) -> Tuple[str, ...]:
        """Transformed feature names the model consumes, in a stable order."""
        return tuple(transformed_name(n) for n in self.input_names + tuple(c.name for c in self.crosses))

    @property
    def serving_columns(self) -> Tuple[str, ...]:
        """Raw columns a serving request carries: every column an input reads, never the label."""
        return tuple(dict.fromkeys(f.source for f in self.inputs))

    @property
    def raw_columns(self) -> Tuple[str, ...]:
        """Every raw column the pipeline reads (inputs and label sources)."""
        cols = list(self.serving_columns)
        cols += [c for c in self.label.source_columns if c not in cols]
        return tuple(cols)

    def input(self, name: str) -> InputFeature:
        for f in self.inputs:
            if f.name == name:
                return f
        raise KeyError(name)

    def to_dict(self) -> Dict[str, Any]:
        return {
            "label": {k: v for k, v in drop_none(dataclasses.asdict(self.label)).items()
                      if k != "log" or v},  # a plain label serialises as before (log: false unsaid)
            "inputs": [drop_none(dataclasses.asdict(f)) for f in self.inputs],
            "crosses": [dict(dataclasses.asdict(c), inputs=list(c.inputs)) for c in self.crosses],
        }

    @classmethod
    def from_dict(cls, raw: Any) -> "FeatureSpec":
        """The spec from a config's ``features`` section (or a component's custom_config, which
        holds ``to_dict()``), read as every section is (typed_config/read.py), then validated."""
        try:
            spec = from_yaml(cls, raw, "features")
        except ConfigError as e:
            raise FeatureSpecError(str(e)) from None
        spec.validate()
        return spec

    def validate(self, schema_columns: Optional[Sequence[str]] = None) -> None:
        """Raise FeatureSpecError naming the first problem found."""
        if not self.inputs:
            raise FeatureSpecError("features.inputs: declare at least one input feature; "
                                   "list the columns the model reads under inputs")
        if self.label.transform not in LABEL_TRANSFORMS:
            raise FeatureSpecError(
                f"features.label: unknown transform {self.label.transform!r}; "
                f"use one of {', '.join(LABEL_TRANSFORMS)}")
        if isinstance(self.label.positive, bool):
            raise FeatureSpecError(
                f"features.label: positive is the YAML boolean {str(self.label.positive).lower()} (yes, no, true, "
                "false, on and off unquoted are booleans); quote the value as the data writes it, "
                "e.g. positive: \"yes\"")
        task = task_types.for_label_transform(self.label.transform)  # an unknown transform was refused above
        if self.label.positive is not None and not task.positive_label:
            raise FeatureSpecError(f"features.label: positive applies to transform binary, not "
                                   f"{self.label.transform!r}; remove positive: or use transform: binary")
        if self.label.log is not False and (self.label.log is not True or not task.log_label):
            raise FeatureSpecError(f"features.label: log applies to transform regression and is true or false, "
                                   f"not {self.label.log!r} with {self.label.transform!r}; remove log: or fix it")
        for field in task.label_fields[self.label.transform]:
            if not getattr(self.label, field):
                raise FeatureSpecError(
                    f"features.label: transform {self.label.transform!r} needs '{field}'; "
                    f"add {field}: to features.label")
        seen = set()
        for f in self.inputs:
            feature_checks.check_input(f, INPUT_TRANSFORMS)
            if f.name in seen:
                raise FeatureSpecError(f"features: duplicate feature name {f.name!r}; give each feature its own name")
            seen.add(f.name)
        feature_checks.check_crosses(self, seen)
        if self.data_kind == IMAGE:
            feature_checks.check_image_spec(self)
        if self.label.name in self.input_names:
            raise FeatureSpecError(
                f"features.label: label name {self.label.name!r} is also an input feature; "
                "rename the label or the input")
        for col in self.label.source_columns:
            if col in self.serving_columns and self.label.transform != "ratio_threshold":
                raise FeatureSpecError(
                    f"features.label: label column {col!r} is also an input (label leak); "
                    "remove it from features.inputs")
        if schema_columns is not None:
            missing = [c for c in self.raw_columns if c not in set(schema_columns)]
            if missing:
                raise FeatureSpecError(
                    f"features: column(s) {', '.join(missing)} are not in the schema; fix the names in the "
                    f"config{did_you_mean(missing, schema_columns)}, or add the columns to the data and its schema")


def categorical_cardinality(feature: InputFeature, vocabulary_size: Optional[int] = None) -> int:
    """Number of distinct indices a categorical transform can emit."""
    if feature.transform == "vocabulary":
        if vocabulary_size is None:
            raise ValueError(f"vocabulary size of {feature.name!r} is needed")
        return vocabulary_size + feature.oov_buckets
    if feature.transform in ("identity", "bucketize"):
        return feature.num_buckets
    parts = DATETIME_PARTS.get(feature.part or "") if feature.transform == "datetime" else None
    if parts:
        return parts
    raise ValueError(f"{feature.name!r} is not categorical")


def index_bound(feature: InputFeature) -> int:
    """An upper bound on a categorical transform's indices, known before any analysis
    (a vocabulary's size is at most top_k)."""
    if feature.transform == "vocabulary":
        return feature.top_k + max(feature.oov_buckets, 0)
    return categorical_cardinality(feature)


def transformed_name(name: str) -> str:
    """Transformed features get a suffix so they never shadow the raw column of the same
    name (TFMA sees both; slices must use the raw values)."""
    return f"{name}_xf"


def vocabulary_name(feature_name: str) -> str:
    """The tft vocabulary file name of a feature (shared by Transform and Trainer)."""
    return f"{feature_name}_vocab"
