"""An image spec's image input, typed for the code that runs only for one (issue #74).

``FeatureSpec.image`` is None for a table, and ``InputFeature.size`` None for any input but an
image; an image spec has both (``transforms/feature_checks.py`` requires the size of a ``transform:
image`` input, and ``data_kind`` is ``image`` exactly when there is one). The image paths (the
Trainer's decoding and model, the export, the TFLite model, the report's gallery, the pre-flight
check) read them here, so a table spec that reaches one is refused by name rather than as an
AttributeError on None. No TensorFlow here: the pre-flight check imports it before TensorFlow starts.
"""
from __future__ import annotations

from typing import NamedTuple

from tfxline.transforms import features as F


class ImageInput(NamedTuple):
    feature: F.InputFeature
    size: int  # the side, in pixels, of the square the model sees


def image_input(spec: F.FeatureSpec) -> ImageInput:
    """The image input of an image spec and its size; ValueError for a spec without one."""
    feature = spec.image
    if feature is None or feature.size is None:
        raise ValueError(f"the features {list(spec.input_names)} hold no image input with a size (transform: "
                         "image, size: N); this path is an image model's")
    return ImageInput(feature, feature.size)
