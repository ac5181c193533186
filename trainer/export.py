"""SavedModel export with the Transform graph inside, so serving has no skew.

Signatures:
``serving_default``     ``examples``: serialized raw tf.Examples without the label (what a
                        TF Serving client sends) -> ``probabilities`` (binary: float32 [batch],
                        P(positive), and ``predicted_class``, int64 [batch], 1 where P >= the
                        threshold chosen on validation; multi-class: float32 [batch, classes])
                        or ``predictions`` (regression).
``transform_features``  ``examples``: raw tf.Examples with the label columns -> every
                        transformed feature and the label; TFMA uses it to derive the label.
``serving_images``      image models: ``images``, the files' encoded bytes (JPEG, PNG, GIF, BMP;
                        what TF Serving's REST API decodes from ``{"b64": ...}``) -> as
                        ``serving_default``; both decode as the Trainer did (transforms/images.py).

The model is also saved as one function on the transformed features (``MODEL_FUNCTION``: what
serving/tflite.py converts), and ``tft_layer`` as a function of its own (``TransformLayer``). A
model holding a forest (``model.family`` trees, or the average) is saved without Keras's per-layer
traces, which traced every layer's call several times over (bench/export_traces.py, 300 inputs,
2-core AMD, both with the model function: the average with a forest inside saved in 0.29-0.32 x
the time without them, the network in 0.26-0.30 x; two runs): its loaded object is called through
those two functions and its signatures (TFMA reads it as ``tf_generic``, pipeline/eval_config.py),
and has no Keras attributes such as
``variables`` (a forest has none to train). The network keeps the traces: a user's code may read
a loaded network's ``variables`` or call it (tests/test_images_e2e.py reads its backbone's).

The task type shapes the output (``serving_output``); a regression label learnt in log space
(``log: true``) is served and evaluated in its own unit: both signatures apply the inverse
(``label_in_its_unit``) to the model's output and to the label.
"""
from __future__ import annotations

import os
import tempfile
from typing import Any, Dict, Optional

import tensorflow as tf

from tfxline import task_types
from tfxline.trainer import decision
from tfxline.trainer import strategy as strategy_lib
from tfxline.trainer import trees as trees_lib
from tfxline.transforms import features as F
from tfxline.transforms import images

SERVING_SIGNATURE = "serving_default"
TRANSFORM_SIGNATURE = "transform_features"
IMAGES_SIGNATURE, IMAGES_INPUT = "serving_images", "images"
TEXTS_SIGNATURE, TEXTS_INPUT = "serving_texts", "texts"  # a text dataset's raw strings (TF Serving REST: a plain list)
MODEL_FUNCTION = "transformed_outputs"  # the loaded SavedModel's function: transformed features -> the model's output


def model_function(loaded):
    """A loaded export's model on transformed features: ``MODEL_FUNCTION``, or the loaded object
    itself for an export written before it (Keras's traces made that callable)."""
    return getattr(loaded, MODEL_FUNCTION, loaded)


def attach_model_function(model) -> None:
    """``model``'s ``MODEL_FUNCTION``: the model on its transformed inputs, traced once (what
    Keras's per-layer traces made of the loaded object, at a fraction of their cost)."""
    setattr(model, MODEL_FUNCTION, tf.function(
        lambda features: model(features), input_signature=[{n: t.type_spec for n, t in model.input.items()}]))


class TransformLayer(tf.Module):
    """The Transform's Keras layer as the loaded export's ``tft_layer`` (what TFX's templates
    attach, and what users call on a loaded model): a tf.function, so it stays callable without
    Keras's per-layer traces, on the raw feature dicts the signatures traced it with (the serving
    columns, and those with the label)."""

    def __init__(self, layer):
        super().__init__(name="tft_layer")
        self.layer = layer

    @tf.function
    def __call__(self, features):
        return self.layer(features)


def build_signatures(model, tf_transform_output, spec: F.FeatureSpec, threshold: Optional[float] = None):
    model.tft_layer = TransformLayer(tf_transform_output.transform_features_layer())
    raw_spec = tf_transform_output.raw_feature_spec()
    serving_spec = {k: raw_spec[k] for k in spec.serving_columns}
    names = spec.model_feature_names
    task = task_types.get(spec.task)

    image = spec.image  # an image model's input: its bytes decoded to pixels, as in training
    size = int(image.size or 0) if image else 0  # an image input has its size (feature_checks.check_image)

    def pixels(transformed):
        return {n: images.decode_batch(transformed[n], size) if image else transformed[n] for n in names}

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="examples")])
    def serve(examples):
        transformed = model.tft_layer(tf.io.parse_example(examples, serving_spec))
        outputs = tf.cast(model(pixels(transformed)), tf.float32)
        return task.serving_outputs(spec.label, outputs, threshold)

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="examples")])
    def transform_features(examples):
        transformed = dict(model.tft_layer(tf.io.parse_example(examples, raw_spec)))
        transformed[spec.label.name] = task.label_in_its_unit(spec.label, transformed[spec.label.name])
        return transformed

    signatures = {SERVING_SIGNATURE: serve, TRANSFORM_SIGNATURE: transform_features}
    if image:
        @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name=IMAGES_INPUT)])
        def serve_images(encoded):
            outputs = tf.cast(model({names[0]: images.decode_batch(encoded, size)}), tf.float32)
            return task.serving_outputs(spec.label, outputs, threshold)

        signatures[IMAGES_SIGNATURE] = serve_images
    if len(spec.inputs) == 1 and spec.inputs[0].is_text:  # a text dataset: the raw strings themselves
        column = spec.inputs[0].source

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name=TEXTS_INPUT)])
        def serve_texts(texts):
            transformed = model.tft_layer({column: raw_column(texts, serving_spec[column])})
            outputs = tf.cast(model({n: transformed[n] for n in names}), tf.float32)
            return task.serving_outputs(spec.label, outputs, threshold)

        signatures[TEXTS_SIGNATURE] = serve_texts
    return signatures


def raw_column(values: tf.Tensor, feature_spec) -> Any:
    """A rank-1 batch of one value a row as ``tf.io.parse_example`` gives a column of ``feature_spec``
    (a VarLenFeature's [rows, 1] SparseTensor, a FixedLenFeature's dense shape)."""
    if isinstance(feature_spec, tf.io.VarLenFeature):
        rows = tf.shape(values, out_type=tf.int64)[0]
        indices = tf.stack([tf.range(rows), tf.zeros([rows], tf.int64)], axis=1)
        return tf.SparseTensor(indices, values, tf.stack([rows, tf.constant(1, tf.int64)]))
    return tf.reshape(values, [-1] + list(feature_spec.shape))


def export(model, tf_transform_output, spec: F.FeatureSpec, serving_model_dir: str,
           chosen: Optional[Dict[str, Any]] = None) -> str:
    """Save the model and its decision (``chosen``: trainer/decision.py); in multi-worker runs
    only the chief writes to the real directory.

    Every worker must call save (it runs collective ops), so the others write to a
    temporary directory that is removed afterwards. Returns the directory written.
    """
    signatures = build_signatures(model, tf_transform_output, spec, chosen["threshold"] if chosen else None)
    if strategy_lib.is_chief():
        target = serving_model_dir
    else:
        target = os.path.join(tempfile.mkdtemp(prefix="tfxline-worker-export-"), "model")
    attach_model_function(model)
    # No optimizer state: serving does not train, and the export stays smaller.
    model.save(target, save_format="tf", signatures=signatures, include_optimizer=False,
               save_traces=not trees_lib.holds_forest(model))
    decision.write(target, chosen)
    if not strategy_lib.is_chief():
        tf.io.gfile.rmtree(os.path.dirname(target))
    return target
