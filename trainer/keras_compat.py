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

ENV_VAR = "TF_USE_LEGACY_KERAS"


def select_legacy_keras() -> None:
    """Entry points call this first thing, before anything imports TensorFlow."""
    os.environ[ENV_VAR] = "1"


def keras():
    """Return ``tf.keras`` after checking it is tf_keras (Keras 2)."""
    import tensorflow as tf

    if not tf.keras.__name__.startswith("tf_keras"):
        raise RuntimeError(
            f"tf.keras is {tf.keras.__name__} (Keras 3), but this project needs tf_keras: set "
            f"{ENV_VAR}=1 before TensorFlow is imported (the tfxline command does this)")
    return tf.keras


# Libraries whose code runs inside this project's tf.functions and is graph code already, which
# AutoGraph nevertheless converts (it skips only ``keras`` and ``tensorflow``, TF 2.16).
# tf_keras: the first fit() re-parsed the library's source, 55 s of a 58 s first epoch on the
# taxi model (cProfile). tensorflow_transform: its SavedModel loader's functions, converted
# again each time the Transform layer is called in a new function (the Trainer's datasets, the
# export's two signatures) and its analyzers' inside each trace of the preprocessing_fn: 42
# conversions, 2.9 s of a taxi run on a busy 2-core machine; tf.Transform also traces as a TF1
# graph (force_tf_compat_v1), where nothing is converted.
AUTOGRAPH_SKIPPED = ("tf_keras", "tensorflow_transform")


def skip_autograph_for_libraries() -> None:
    """Stop AutoGraph from converting ``AUTOGRAPH_SKIPPED``'s code (idempotent). Only user code
    needs conversion. There is no public API for this, so it touches AutoGraph's rule list, here
    and nowhere else."""
    from tensorflow.python.autograph.core import config as autograph_config

    rules = tuple(autograph_config.CONVERSION_RULES)
    have = {getattr(r, "_prefix", None) for r in rules}
    missing = tuple(autograph_config.DoNotConvert(name) for name in AUTOGRAPH_SKIPPED if name not in have)
    if missing:
        autograph_config.CONVERSION_RULES = missing + rules
