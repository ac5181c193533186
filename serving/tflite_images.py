"""The TFLite model of an image classifier (serving/tflite.py builds the table one): decoded
pixels in, as a phone's camera pipeline hands them over, the trained network inside.

* input: float32 ``[1, size, size, 3]``, RGB 0-255 (the network scales them itself:
  trainer/images.py), named after the image column (``tflite.input_name``): one image a call, the
  fixed shape mobile delegates (GPU, NNAPI) want;
* outputs: as ``serving_default``'s (``probabilities``);
* the parity gate feeds it the eval images decoded as the SavedModel decodes them
  (transforms/images.py), one at a time, and compares the outputs.
"""
from __future__ import annotations

from typing import Any, Dict, Sequence

import numpy as np

from tfxline import task_types
from tfxline.transforms import features as F
from tfxline.transforms import images
from tfxline.transforms.image_input import image_input


def build_module(model_dir: str, spec: F.FeatureSpec, input_name: str):
    """A tf.Module whose ``serve`` takes one decoded image."""
    import tensorflow as tf

    from tfxline.trainer.export import model_function

    class TFLiteImageModule(tf.Module):  # what serve reads, tracked for the SavedModel
        model: Any
        serve: Any

    module = TFLiteImageModule()
    module.model = tf.saved_model.load(model_dir)
    (image, size), task = image_input(spec), task_types.get(spec.task)
    name = F.transformed_name(image.name)

    @tf.function(input_signature=[tf.TensorSpec([1, size, size, images.CHANNELS], tf.float32,
                                                name=input_name)], autograph=False)
    def serve(pixels):
        outputs = tf.cast(model_function(module.model)({name: pixels}), tf.float32)
        return {task.output_key: task.serving_output(spec.label, outputs)}

    module.serve = serve
    return module


def columns_from_examples(records: Sequence[bytes], spec: F.FeatureSpec) -> Dict[str, np.ndarray]:
    """{image column: float32 [n, size, size, 3]}: the records' images decoded as serving decodes them."""
    import tensorflow as tf

    image, size = image_input(spec)
    parsed = tf.io.parse_example(tf.constant(list(records)), {image.source: tf.io.FixedLenFeature([], tf.string)})
    encoded = parsed[image.source]
    assert isinstance(encoded, tf.Tensor)  # a FixedLenFeature's: dense
    decoded = [images.decode_batch(encoded[i:i + 256], size).numpy() for i in range(0, len(records), 256)]
    return {image.source: np.concatenate(decoded) if decoded else np.zeros([0, size, size, 3], np.float32)}
