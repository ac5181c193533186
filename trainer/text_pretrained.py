"""The pretrained text encoder (``model.text_encoder: pretrained``): a TF2 SavedModel from a folder
(``model.text_saved_model``, a path or gs://) whose ``__call__`` maps a rank-1 batch of strings to
[batch, dim] vectors, as TF Hub's text-embedding models do (nnlm, Universal Sentence Encoder), its
tokenizer and vocabulary inside it. It reads the raw text: for such a model the Transform passes a
text input through as a string (transforms/preprocessing.py, ``raw_text``), and the serving graph
holds the encoder, its variables and its assets, so TF Serving needs nothing beside the model.

``hub.KerasLayer``'s job, without tensorflow_hub: 0.15.0, the version both locks hold, fails to
import on TF 2.16 (tensorflow_hub/estimator.py imports ``tensorflow.compat.v1.estimator``, gone since
TF 2.16). Frozen by default (the encoder's weights fixed, the head learns); ``text_fine_tune: true``
trains its trainable variables with the rest at the model's learning rate. A string op has no XLA
kernel, so a model with a pretrained encoder trains without XLA (trainer/run.py;
``runtime.jit_compile: true`` is refused at config load)."""
from __future__ import annotations

import functools
from typing import Any, List

import tensorflow as tf

from tfxline.trainer.keras_compat import keras


def variables(loaded: Any) -> List[tf.Variable]:
    """A restored SavedModel's variables: TF Hub's ``trainable_variables`` where it saved that list
    (its reusable-SavedModel convention), else every variable the object tracks."""
    listed = getattr(loaded, "trainable_variables", None)
    if listed is not None:
        return list(listed)
    return [v for v in tf.train.TrackableView(loaded).descendants() if isinstance(v, tf.Variable)]


@functools.lru_cache(maxsize=None)
def _layer_class():
    k = keras()

    class SavedModelEncoder(k.layers.Layer):
        """[batch] strings -> [batch, dim] float32: the SavedModel at ``path`` called on them."""

        def __init__(self, path: str, fine_tune: bool = False, **kwargs):
            super().__init__(trainable=fine_tune, dtype="float32", **kwargs)
            self.path, self.fine_tune = path, bool(fine_tune)
            self.encoder = tf.saved_model.load(path)
            if not callable(self.encoder):
                raise ValueError(f"model.text_saved_model: {path} has no __call__ (a TF2 SavedModel whose "
                                 "__call__ maps a batch of strings to [batch, dim] vectors); fix: save the encoder "
                                 "with tf.saved_model.save(obj, path), obj callable on a tf.string batch")
            for v in variables(self.encoder):
                (self._trainable_weights if fine_tune and v.trainable else self._non_trainable_weights).append(v)

        def call(self, text):
            vectors = self.encoder(tf.reshape(text, [-1]))
            return tf.cast(vectors, tf.float32)

        def get_config(self):
            return dict(super().get_config(), path=self.path, fine_tune=self.fine_tune)

    return SavedModelEncoder


def encoder_layer(path: str, fine_tune: bool, name: str):
    """The pretrained encoder as a Keras layer named ``name``."""
    return _layer_class()(path, fine_tune=fine_tune, name=name)
