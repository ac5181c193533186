"""The one Keras this project uses: tf_keras (Keras 2), selected by TF_USE_LEGACY_KERAS=1.

Why: from TF 2.16 ``tf.keras`` means Keras 3, under which TFX's Trainer fails
("inputs not connected to outputs"), and TFT's ``transform_features_layer()`` and TFMA
expect the Keras the model was built with. ``TF_USE_LEGACY_KERAS=1`` makes ``tf.keras``
resolve to tf_keras on both supported stacks (TF 2.16 and TF 2.21). The variable must be
set before TensorFlow is first imported, so it is set by the entry points (the CLI
``main``, the tests' conftest, the container image's ENV) and only checked here.
"""
from __future__ import annotations

import os
import types

ENV_VAR = "TF_USE_LEGACY_KERAS"


def select_legacy_keras() -> None:
    """Entry points call this first thing, before anything imports TensorFlow."""
    os.environ[ENV_VAR] = "1"


def keras() -> types.ModuleType:
    """Return ``tf.keras`` after checking it is tf_keras (Keras 2). Typed as a module (its names
    are Any to a type checker): TensorFlow's stubs describe Keras 3's ``tf.keras``, not tf_keras."""
    import tensorflow as tf

    if not tf.keras.__name__.startswith("tf_keras"):
        raise RuntimeError(
            f"tf.keras is {tf.keras.__name__} (Keras 3), but this project needs tf_keras: set "
            f"{ENV_VAR}=1 before TensorFlow is imported (the tfxline command does this)")
    return tf.keras

