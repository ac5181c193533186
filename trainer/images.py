"""What the Trainer does for an image spec (transforms/features.py, ``data_kind`` image): the
input's decoding step and the model.

Input: the Transform output holds the images' encoded bytes; each batch is decoded, resized and,
for training, augmented here, in the tf.data pipeline, in parallel with the training step
(``num_parallel_calls``), after the cache (the cache holds bytes, not pixels) and before the
prefetch. The exported model decodes the same way (transforms/images.py).

Model: a backbone over the pixels, global average pooling, dropout and the task's head, its output
layer in float32 whatever the precision policy (mixed precision keeps the rest in 16 bit):

``small_cnn``        three blocks of two 3x3 convolutions (32, 64, 128 filters), batch
                     normalization and max pooling: the CPU default, which trains from scratch on a
                     few thousand small images in minutes on two cores.
``mobilenet_v2``, ``efficientnet_b0``, ``resnet50``
                     keras.applications' networks, without their top, from scratch
                     (``model.weights: none``) or from a weights file (a path or gs://; the
                     ``..._no_top.h5`` file Keras downloads). ``imagenet`` is refused at pre-flight:
                     it downloads at run time (trainer/settings.py says how to provide the file).
                     From a file, in two phases: the backbone frozen for ``model.frozen_epochs``
                     (the new head learns), then the whole network at a tenth of the learning rate.

Each backbone gets the pixel scaling its weights were trained with, inside the model: every caller
(tf.data, the serving signatures, the TFLite model) feeds 0-255 RGB.
"""
from __future__ import annotations

import os
import tempfile
from typing import Any, Optional

import tensorflow as tf

from tfxline import task_types
from tfxline.trainer.keras_compat import keras
from tfxline.transforms import features as F
from tfxline.transforms import images
from tfxline.transforms.image_input import image_input

# backbone -> (keras.applications constructor, the pixel scaling its weights expect)
APPLICATIONS = {"mobilenet_v2": ("MobileNetV2", "minus_one_to_one"),
                "efficientnet_b0": ("EfficientNetB0", "raw"),  # its own Rescaling and Normalization layers
                "resnet50": ("ResNet50", "caffe")}
CAFFE_MEANS = (103.939, 116.779, 123.68)  # BGR, keras.applications.imagenet_utils ("caffe" mode)
BACKBONE = "backbone"
FINE_TUNE_RATE = 0.1  # the learning rate once a pretrained backbone is unfrozen, a fraction of the configured


def decoded(ds: tf.data.Dataset, spec: F.FeatureSpec, *, training: bool, seed: int) -> tf.data.Dataset:
    """(features, label) batches whose image bytes are decoded to [batch, size, size, 3] pixels
    (and, for training, augmented)."""
    feature, size = image_input(spec)
    name = F.transformed_name(feature.name)
    augment = (feature.augment or "crop") if training else "none"

    def step(features, label):
        features = dict(features)
        features[name] = images.decode_batch(features[name], size, augment, seed if training else None)
        return features, label

    return ds.map(step, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True).prefetch(tf.data.AUTOTUNE)


def local_weights(path: str) -> str:
    """A weights file Keras can open (h5py reads local files only): a gs:// one copied first."""
    if "://" not in path:
        return path
    local = os.path.join(tempfile.mkdtemp(prefix="tfxline-weights-"), os.path.basename(path))
    tf.io.gfile.copy(path, local, overwrite=True)
    return local


def build_model(spec: F.FeatureSpec, head: Any, backbone: str = "small_cnn", weights: str = "none",
                dropout: float = 0.2):
    """The image classifier: 0-255 RGB [batch, size, size, 3] under the transformed image's name ->
    the task's output (float32)."""
    k = keras()
    image, size = image_input(spec)
    pixels = k.Input(shape=(size, size, images.CHANNELS), name=F.transformed_name(image.name), dtype="float32")
    if backbone == "small_cnn":
        x = _layers()["Scale"]("minus_one_to_one", name="scale")(pixels)
        x = small_cnn(k, x)
    else:
        constructor, scaling = APPLICATIONS[backbone]
        pretrained = weights not in ("none", "", None)
        base = getattr(k.applications, constructor)(
            include_top=False, input_shape=(size, size, images.CHANNELS),
            weights=local_weights(weights) if pretrained else None)
        base._name = BACKBONE  # noqa: SLF001 - one name for every backbone (frozen_epochs, unfreeze)
        # pretrained: its batch normalization keeps the statistics it learnt (inference mode), as
        # Keras's transfer-learning guide does, also once it is unfrozen
        x = base(_layers()["Scale"](scaling, name="scale")(pixels), training=False if pretrained else None)
    x = k.layers.GlobalAveragePooling2D(name="pool")(x)
    if dropout:
        x = k.layers.Dropout(dropout, name="top_dropout")(x)
    logits = k.layers.Dense(head.units, name="logits")(x)
    output = k.layers.Activation(task_types.get(head.task).activation, dtype="float32", name="prediction")(logits)
    model = k.Model(inputs={F.transformed_name(image.name): pixels}, outputs=output, name=f"image_{backbone}")
    model.pretrained = backbone != "small_cnn" and weights not in ("none", "", None)
    return model


def frozen_epochs(model, configured: int, epochs: int) -> int:
    """Freeze a pretrained backbone for its first ``configured`` epochs (the new head learns first,
    so its random start does not wreck the learnt features); 0 when there is none to freeze or the
    training is no longer than that."""
    backbone = _backbone(model)
    if backbone is None or not configured or configured >= epochs or not getattr(model, "pretrained", False):
        return 0
    backbone.trainable = False
    return configured


def unfreeze(model) -> None:
    backbone = _backbone(model)
    if backbone is not None:  # frozen_epochs froze one
        backbone.trainable = True


def phases(first_epoch: int, epochs: int, frozen: int):
    """The fits of a training from ``first_epoch``: (first, last) epochs, frozen ones first."""
    if frozen and first_epoch < frozen:
        return [(first_epoch, frozen), (frozen, epochs)]
    return [(first_epoch, epochs)]


def _backbone(model):
    return next((layer for layer in model.layers if layer.name == BACKBONE), None)


def small_cnn(k, x, widths=(32, 64, 128)):
    for i, width in enumerate(widths):
        for j in range(2):
            x = k.layers.Conv2D(width, 3, padding="same", use_bias=False, name=f"block{i}_conv{j}")(x)
            x = k.layers.BatchNormalization(momentum=0.9, name=f"block{i}_bn{j}")(x)
            x = k.layers.Activation("relu", name=f"block{i}_relu{j}")(x)
        if i < len(widths) - 1:
            x = k.layers.MaxPooling2D(name=f"block{i}_pool")(x)
    return x


_LAYERS: Optional[dict] = None


def _layers():
    """The model's own layers (defined on first use: Keras is chosen at the entry point)."""
    global _LAYERS
    if _LAYERS is None:
        k = keras()

        class Scale(k.layers.Layer):
            """0-255 RGB pixels to what a backbone's weights expect: ``minus_one_to_one``,
            ``caffe`` (BGR less ImageNet's means) or ``raw``."""

            def __init__(self, mode: str, **kwargs):
                super().__init__(**kwargs)
                self.mode = mode

            def call(self, x):
                x = tf.cast(x, self.compute_dtype)
                if self.mode == "minus_one_to_one":
                    return x / 127.5 - 1.0
                if self.mode == "caffe":
                    return x[..., ::-1] - tf.constant(CAFFE_MEANS, self.compute_dtype)
                return x

            def get_config(self):
                return dict(super().get_config(), mode=self.mode)

        _LAYERS = {"Scale": Scale}
    return _LAYERS
