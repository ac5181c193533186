"""The rules of one input feature, and of a spec as a whole where its kind of data asks for them
(an image spec: one image input and a class label). transforms/features.py applies them."""
from __future__ import annotations

from typing import Any, Sequence

from tfxline.transforms.dates import PARTS as DATETIME_PARTS
from tfxline.typed_config.problems import ConfigError

IMAGE_TRANSFORM = "image"
TEXT_TRANSFORM = "text"
TEXT_FIELDS = {"ngrams": (1, 3), "max_tokens": (1, 4096), "min_count": (1, 1_000_000)}  # each: [low, high]
AUGMENTS = ("crop", "flip_crop", "none")
IMAGE_SIZES = (32, 1024)  # keras.applications' backbones take 32 px and up
# the label transforms of an image spec: it classifies
IMAGE_LABELS = ("class_vocabulary", "binary")


class FeatureSpecError(ConfigError):
    """The feature spec in a config is invalid."""


def check_input(f: Any, transforms: Sequence[str]) -> None:
    """One input feature's rules: a known transform, sizes of 1 or more, and its kind's own fields."""
    if f.transform not in transforms:
        raise FeatureSpecError(f"features.inputs: {f.name!r} has unknown transform {f.transform!r}; "
                               f"use one of {', '.join(transforms)}")
    for field in ("top_k", "oov_buckets", "num_buckets"):
        if getattr(f, field) < 1:
            raise FeatureSpecError(f"features.inputs: {f.name!r} needs {field} >= 1; set it to 1 or more")
    check_part(f)
    check_image(f)
    check_text(f)


def check_text(f: Any) -> None:
    """A text input's n-gram width, length and frequency floor, whole numbers in their ranges; no other
    input has them."""
    for field, (low, high) in TEXT_FIELDS.items():
        value = getattr(f, field)
        if value is None:
            continue
        if f.transform != TEXT_TRANSFORM:
            raise FeatureSpecError(f"features.inputs: {f.name!r} has {field} but transform {f.transform!r}; "
                                   f"{field} applies to transform text: remove {field}:")
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise FeatureSpecError(f"features.inputs: {f.name!r} (transform text) has {field} {value!r}; set it "
                                   f"to a whole number from {low} to {high}")


def check_image(f: Any) -> None:
    """An image input's size and augmentation; no other input has them."""
    if f.transform != IMAGE_TRANSFORM:
        for field in ("size", "augment"):
            if getattr(f, field) is not None:
                raise FeatureSpecError(f"features.inputs: {f.name!r} has {field} but transform {f.transform!r}; "
                                       f"{field} applies to transform image: remove {field}:")
        return
    low, high = IMAGE_SIZES
    if isinstance(f.size, bool) or not isinstance(f.size, int) or not low <= f.size <= high:
        raise FeatureSpecError(f"features.inputs: {f.name!r} (transform image) has size {f.size!r}; set size: to the "
                               f"side in pixels the model sees, a whole number from {low} to {high}")
    if f.augment is not None and f.augment not in AUGMENTS:
        raise FeatureSpecError(f"features.inputs: {f.name!r} has augment {f.augment!r}; use one of "
                               f"{', '.join(AUGMENTS)}")


def check_part(f: Any) -> None:
    """A datetime feature names a known part (and a default among its categories); no other has one."""
    if f.transform == "datetime" and (not isinstance(f.part, str) or f.part not in DATETIME_PARTS):
        raise FeatureSpecError(f"features.inputs: {f.name!r} has transform datetime and part {f.part!r}; "
                               f"set part: to one of {', '.join(DATETIME_PARTS)}")
    if f.transform != "datetime" and f.part is not None:
        raise FeatureSpecError(f"features.inputs: {f.name!r} has part {f.part!r} but transform "
                               f"{f.transform!r}; part applies to transform datetime: remove part: or "
                               "use transform: datetime")
    parts = DATETIME_PARTS.get(f.part or "") if f.transform == "datetime" else None  # a category part's count
    if parts and not 0 <= f.default < parts:
        raise FeatureSpecError(f"features.inputs: {f.name!r} has default {f.default} outside its part's "
                               f"categories; set default: between 0 and {parts - 1}")


def check_image_spec(spec: Any) -> None:
    """An image spec: the image is the model's one input (no crosses), its label a class."""
    images = [f.name for f in spec.inputs if f.transform == IMAGE_TRANSFORM]
    if len(images) > 1 or len(spec.inputs) > 1 or spec.crosses:
        others = [f.name for f in spec.inputs if f.transform != IMAGE_TRANSFORM] + [c.name for c in spec.crosses]
        raise FeatureSpecError(f"features.inputs: an image model reads one image and nothing else; "
                               f"{', '.join(images[1:] + others)} {'is' if len(images[1:] + others) == 1 else 'are'} "
                               "also declared: remove them (or train a table model on them)")
    if spec.label.transform not in IMAGE_LABELS:
        raise FeatureSpecError(f"features.label: an image model classifies; transform {spec.label.transform!r} "
                               f"is not a class label: use {' or '.join(IMAGE_LABELS)}")


def check_crosses(spec: Any, seen: set) -> None:
    """Each cross: a name no feature or label has (added to ``seen``), two or more categorical
    inputs, two or more hash buckets."""
    for c in spec.crosses:
        if c.name in seen or c.name == spec.label.name:
            raise FeatureSpecError(f"features: duplicate feature name {c.name!r}; "
                                   "give the cross a name no feature or label has")
        seen.add(c.name)
        if len(c.inputs) < 2:
            raise FeatureSpecError(f"features.crosses: {c.name!r} needs two or more inputs; "
                                   "list at least two categorical inputs")
        for name in c.inputs:
            if name not in spec.input_names or not spec.input(name).is_categorical:
                raise FeatureSpecError(
                    f"features.crosses: {c.name!r} crosses {name!r}, which is not a "
                    "categorical input; cross only inputs with transform vocabulary, identity, bucketize "
                    "or datetime (hour, weekday, month)")
        if c.hash_buckets < 2:
            raise FeatureSpecError(f"features.crosses: {c.name!r} needs hash_buckets >= 2; "
                                   "set hash_buckets to 2 or more")
