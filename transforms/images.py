"""Encoded images to the pixels a model sees: one definition for the Trainer's input pipeline
(trainer/data.py), the exported signatures (trainer/export.py) and the TFLite model's inputs
(serving/tflite.py), so training and serving decode alike.

The examples hold the files' bytes (ExampleGen stores them; Transform passes them through):
a 2 KB JPEG stays 2 KB, where TFX's removed cifar10 example stored 600 KB of decoded floats a
record. Decoding happens batch by batch where the pixels are needed: ``decode_batch`` turns a
[batch] string tensor into float32 [batch, size, size, 3] in 0-255, RGB whatever the file's
channels (grayscale repeated, transparency laid on white), the first frame of a GIF, resized with bilinear
interpolation and antialiasing (a 640-pixel photo to 96 keeps its detail). The model scales
the pixels itself (trainer/image_model.py), so every caller feeds 0-255.
"""
from __future__ import annotations

from typing import Optional

import tensorflow as tf

from tfxline.transforms.image_files import IMAGE_EXTENSIONS, is_image_name  # noqa: F401 - callers import them here

CHANNELS = 3


def decode_one(encoded: tf.Tensor, size: int) -> tf.Tensor:
    """One encoded image -> float32 [size, size, 3], 0-255. Transparent pixels (a PNG's or GIF's
    alpha) are laid on white, as a viewer shows them: dropping the alpha would leave whatever
    color the encoder kept under them, often black (a shop's product cut-outs, icons)."""
    image = tf.cast(tf.io.decode_image(encoded, expand_animations=False), tf.float32)  # its own channels
    channels = tf.shape(image)[-1]
    color = tf.cond(channels < 3, lambda: tf.tile(image[..., :1], [1, 1, CHANNELS]), lambda: image[..., :CHANNELS])
    alpha = tf.cond(tf.math.floormod(channels, 2) == 0, lambda: image[..., -1:] / 255.0,
                    lambda: tf.ones_like(image[..., :1]))
    image = color * alpha + 255.0 * (1.0 - alpha)
    image.set_shape([None, None, CHANNELS])
    return tf.image.resize(image, [size, size], antialias=True)


def augmented(image: tf.Tensor, size: int, augment: str, seed: Optional[int] = None) -> tf.Tensor:
    """A training copy of a [size, size, 3] image: ``crop`` shifts it by up to an eighth of its
    side (padded with its edge pixels, then a random crop back to size); ``flip_crop`` also flips
    it left-right at random; ``none`` leaves it."""
    if augment == "none":
        return image
    pad = max(1, size // 8)
    padded = tf.pad(image, [[pad, pad], [pad, pad], [0, 0]], mode="SYMMETRIC")
    image = tf.image.random_crop(padded, [size, size, CHANNELS], seed=seed)
    if augment == "flip_crop":
        image = tf.image.random_flip_left_right(image, seed=seed)
    return image


def decode_batch(encoded: tf.Tensor, size: int, augment: str = "none", seed: Optional[int] = None) -> tf.Tensor:
    """A [batch] (or [batch, 1]) string tensor of encoded images -> float32 [batch, size, size, 3]."""
    encoded = tf.reshape(encoded, [-1])

    def one(e):
        return augmented(decode_one(e, size), size, augment, seed)

    return tf.map_fn(one, encoded, fn_output_signature=tf.TensorSpec([size, size, CHANNELS], tf.float32),
                     parallel_iterations=16)
