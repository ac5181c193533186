"""The text encoders: what a model makes of a text input's n-gram ids (transforms/text.py), built
into the same network as the table's other columns (trainer/model.py).

``bag`` (the default): fastText's design (Joulin et al. 2016, "Bag of Tricks for Efficient Text
Classification"): the mean of the document's n-gram embeddings through a linear layer, plus a
linear weight per n-gram, summed over the document and scaled by 1/sqrt(its n-grams): that part
alone is logistic regression on length-normalised n-gram counts, the model a user compares with
(TF-IDF + logistic regression); the embeddings add what similar n-grams share. Order-free and
fast: one gather per part. The text's logits add to the table's (its MLP reads the other columns).

``transformer``: the document's tokens (its 1-grams, in order, the first ``max_tokens``) as
embeddings plus learnt positions, through ``TRANSFORMER_BLOCKS`` Transformer encoder blocks
(self-attention that ignores the padding, a feed-forward layer, residuals and layer norms), mean-
pooled over the tokens present: for text where word order counts. Slower on a CPU (attention is
quadratic in the length), so init keeps it for short texts or names it (cli/init_text.py).

``pretrained``: an encoder someone else trained, from a SavedModel folder, on the raw text
(trainer/text_pretrained.py), through the same linear layer.

No artifact I/O here: built from ``ModelInput``s as the rest of the model is.
"""
from __future__ import annotations

import functools
from typing import Any, List

import tensorflow as tf

from tfxline.trainer.embedding_ops import gather_with_dense_gradient
from tfxline.trainer.keras_compat import keras
from tfxline.trainer.text_settings import PRETRAINED

TRANSFORMER_BLOCKS = 2
TRANSFORMER_HEADS = 4


def encode(ids: Any, model_input: Any, encoder: str, dim: int, units: int, dropout: float,
           saved_model: str = "", fine_tune: bool = False) -> List[Any]:
    """The [batch, units] logits a text input's [batch, length] ids add to the model's: the encoded
    document through a linear layer (fastText's classifier), and for the bag the n-grams' own
    linear weights. Not through the table's MLP: on a few thousand documents the MLP over the
    document vector memorised the training rows within two passes (a review table's validation
    AUC fell from 0.854 after the first pass). ``pretrained``: ``ids`` is the [batch] raw text,
    through the SavedModel at ``saved_model`` (trainer/text_pretrained.py)."""
    layers = _layers()
    k = keras()
    name = model_input.name
    if (encoder == PRETRAINED) != bool(model_input.raw_text):
        raise ValueError(f"{name}: text_encoder {encoder} with the Transform's "
                         f"{'raw text' if model_input.raw_text else 'n-gram ids'}; the Transform passes the raw text "
                         f"through for text_encoder: {PRETRAINED} only (run the pipeline again: its Transform re-runs)")
    if encoder == PRETRAINED:
        from tfxline.trainer import text_pretrained

        vector = text_pretrained.encoder_layer(saved_model, fine_tune, name=f"{name}_pretrained")(ids)
    elif encoder == "transformer":
        tokens = layers["Tokens"](model_input.tokens, name=f"{name}_tokens")(ids)
        vector = layers["TransformerEncoder"](model_input.cardinality, model_input.tokens, dim, dropout,
                                              name=f"{name}_transformer")(tokens)
    else:
        vector = layers["NgramBag"](model_input.cardinality, dim, pooling="mean", name=f"{name}_bag")(ids)
    if dropout:
        vector = k.layers.Dropout(dropout, rng_type="stateful", name=f"{name}_dropout")(vector)
    logits = [k.layers.Dense(units, name=f"{name}_logits")(vector)]
    if encoder == "bag":
        logits.append(layers["NgramBag"](model_input.cardinality, units, pooling="sqrt", initializer="zeros",
                                         name=f"{name}_linear")(ids))
    return logits


def present(ids: tf.Tensor, dtype) -> tf.Tensor:
    """[batch, length] 1.0 where an id is a document's n-gram, 0.0 in the padding (ids < 0)."""
    return tf.cast(ids >= 0, dtype)


@functools.lru_cache(maxsize=None)
def _layers():
    """The encoders' layers (defined on first use: Keras is chosen at the entry point)."""
    k = keras()

    class NgramBag(k.layers.Layer):
        """[batch, length] ids -> [batch, output_dim]: the present ids' embeddings summed, divided by
        their count (``mean``) or its square root (``sqrt``); an empty document is zeros."""

        def __init__(self, cardinality: int, output_dim: int, pooling: str = "mean", initializer="uniform",
                     drop: float = 0.0, **kwargs):
            super().__init__(**kwargs)
            self.cardinality, self.output_dim = int(cardinality), int(output_dim)
            self.pooling, self.initializer, self.drop = pooling, initializer, float(drop)

        def build(self, input_shape):
            self.table = self.add_weight(name="table", shape=(self.cardinality, self.output_dim),
                                         initializer=k.initializers.get(self.initializer), trainable=True)
            super().build(input_shape)

        def call(self, ids, training=None):
            mask = present(ids, self.compute_dtype)
            if training and self.drop:  # n-gram dropout: each of a training document's n-grams left out
                mask = mask * tf.cast(tf.random.uniform(tf.shape(mask)) >= self.drop, mask.dtype)
            rows = tf.clip_by_value(ids, 0, self.cardinality - 1)
            vectors = tf.cast(gather_with_dense_gradient(tf.convert_to_tensor(self.table), rows), self.compute_dtype)
            total = tf.reduce_sum(vectors * tf.expand_dims(mask, -1), axis=1)
            count = tf.maximum(tf.reduce_sum(mask, axis=1, keepdims=True), 1.0)
            return total / (count if self.pooling == "mean" else tf.sqrt(count))

        def get_config(self):
            return dict(super().get_config(), cardinality=self.cardinality, output_dim=self.output_dim,
                        pooling=self.pooling, initializer=self.initializer, drop=self.drop)

    class Tokens(k.layers.Layer):
        """The first ``tokens`` ids of the block: the document's 1-grams in order (transforms/text.py)."""

        def __init__(self, tokens: int, **kwargs):
            super().__init__(**kwargs)
            self.tokens = int(tokens)

        def call(self, ids):
            return ids[:, :self.tokens]

        def get_config(self):
            return dict(super().get_config(), tokens=self.tokens)

    class TransformerEncoder(k.layers.Layer):
        """[batch, tokens] ids -> [batch, dim]: embeddings + positions, Transformer blocks, masked mean."""

        def __init__(self, cardinality: int, tokens: int, dim: int, dropout: float = 0.0, **kwargs):
            super().__init__(**kwargs)
            self.cardinality, self.tokens, self.dim, self.dropout = int(cardinality), int(tokens), int(dim), dropout
            heads = TRANSFORMER_HEADS if dim % TRANSFORMER_HEADS == 0 else 1
            self.embedding = k.layers.Embedding(self.cardinality + 1, self.dim, name="tokens")
            self.positions = k.layers.Embedding(self.tokens, self.dim, name="positions")
            self.blocks = [(k.layers.MultiHeadAttention(heads, self.dim // heads, dropout=dropout,
                                                        name=f"attention_{i}"),
                            k.layers.LayerNormalization(epsilon=1e-6, name=f"attention_{i}_norm"),
                            k.layers.Dense(2 * self.dim, activation="relu", name=f"ffn_{i}_in"),
                            k.layers.Dense(self.dim, name=f"ffn_{i}_out"),
                            k.layers.LayerNormalization(epsilon=1e-6, name=f"ffn_{i}_norm"))
                           for i in range(TRANSFORMER_BLOCKS)]

        def call(self, ids, training=None):
            mask = ids >= 0
            x = self.embedding(tf.where(mask, ids + 1, tf.zeros_like(ids)))  # row 0: the padding
            x = x + self.positions(tf.range(tf.shape(ids)[1]))[None]
            attend = tf.logical_and(mask[:, None, :], mask[:, :, None])
            for attention, norm, ffn_in, ffn_out, ffn_norm in self.blocks:
                x = norm(x + attention(x, x, attention_mask=attend, training=training))
                x = ffn_norm(x + ffn_out(ffn_in(x)))
            weights = tf.cast(mask, x.dtype)[..., None]
            return tf.reduce_sum(x * weights, axis=1) / tf.maximum(tf.reduce_sum(weights, axis=1), 1.0)

        def get_config(self):
            return dict(super().get_config(), cardinality=self.cardinality, tokens=self.tokens, dim=self.dim,
                        dropout=self.dropout)

    return {"NgramBag": NgramBag, "Tokens": Tokens, "TransformerEncoder": TransformerEncoder}
