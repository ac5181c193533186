"""The decision forests' inference ops, for every process that loads a trees model.

A trees model's graph calls ``SimpleMLCreateModelResource``, ``SimpleMLLoadModelFromPathWithHandle``
and ``SimpleMLInferenceOpWithHandle`` (trainer/trees.py), which core TensorFlow lacks: loading it
without them fails with "Op type not registered". They come from one op library, loaded here with
``tf.load_op_library`` and nothing else of the training libraries: TF-DF's
tensorflow_decision_forests/tensorflow/ops/inference/inference.so on TF 2.16, ydf-tf's
ydf_tf/inference.so on TF 2.21. Our loaders (the Evaluator's module, the serving baseline,
``tfxline predict``, the tests) call ``load_inference_ops`` first; it is a no-op where neither is
installed (a network model needs none).

TF Serving links the same ops into its model server: tensorflow/serving at 9d981c5,
tensorflow_serving/model_servers/BUILD:458-466 (``SUPPORTED_TENSORFLOW_OPS`` holds
``@org_tensorflow_decision_forests//tensorflow_decision_forests/tensorflow/ops/inference:kernel_and_op``)
and tensorflow_serving/workspace.bzl:143-153 (TF-DF 1.3.0), whose op.cc registers the six ops in
``SERVING_OPS`` (tensorflow/decision-forests 1.3.0, tensorflow_decision_forests/tensorflow/ops/
inference/op.cc:36-250). tests/test_trees_serving.py checks a pushed trees model's graph against
TensorFlow's own ops plus these.
"""
from __future__ import annotations

import importlib.util
import os
from typing import Optional

# tensorflow/decision-forests 1.3.0 tensorflow_decision_forests/tensorflow/ops/inference/op.cc:36,60,167,222,238,250
SERVING_OPS = frozenset({
    "SimpleMLLoadModelFromPath", "SimpleMLLoadModelFromPathWithHandle", "SimpleMLInferenceOp",
    "SimpleMLInferenceOpWithHandle", "SimpleMLInferenceLeafIndexOpWithHandle", "SimpleMLCreateModelResource"})
# (the package, the op library's path inside it): TF-DF's on TF 2.16, ydf-tf's on TF 2.21
LIBRARIES = (("tensorflow_decision_forests", os.path.join("tensorflow", "ops", "inference", "inference.so")),
             ("ydf_tf", "inference.so"))
INSTALL_FIX = ("model.family trees needs YDF with its TensorFlow ops: on TFX 1.16 ydf==0.9.0 and "
               "tensorflow-decision-forests==1.9.2, on TFX 1.21 ydf and ydf-tf (both in the project's lock "
               "files: make setup installs them); or set model.family: network")
_loaded: Optional[str] = None


def library_path() -> Optional[str]:
    """The installed op library's file, found without importing its package; None when there is none."""
    for package, relative in LIBRARIES:
        spec = importlib.util.find_spec(package)
        if spec is not None and spec.submodule_search_locations:
            path = os.path.join(list(spec.submodule_search_locations)[0], relative)
            if os.path.exists(path):
                return path
    return None


def load_inference_ops() -> Optional[str]:
    """Register the inference ops in this process (once); the library's path, or None where none is
    installed."""
    global _loaded
    if _loaded is None:
        path = library_path()
        if path is None:
            return None
        import tensorflow as tf

        tf.load_op_library(path)
        _loaded = path
    return _loaded


class TreesUnavailable(RuntimeError):
    """model.family trees (or auto) where YDF or its TensorFlow ops are not installed."""


def check_installed() -> None:
    """Fail in one line, with the fix, where the trees cannot be trained or exported here."""
    if importlib.util.find_spec("ydf") is None or library_path() is None:
        raise TreesUnavailable(INSTALL_FIX)
