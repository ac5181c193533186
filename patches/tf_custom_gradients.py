"""The gradients ``tf.custom_gradient`` registers while a graph is traced, let go when the graph is done
(a run-time patch: TensorFlow has no API to unregister them; patches/registry.py).

Traced in a graph (any ``tf.function``: Keras' train, predict and serving functions), TensorFlow's
``tf.custom_gradient`` registers a gradient function under a new name, ``CustomGradient-<uid>``, in
its process-wide gradient registry and never removes it (tensorflow/python/ops/custom_gradient.py,
``_graph_mode_decorator``: ``name = generate_name()``, then ``@ops.RegisterGradient(name)``; the
registry is ``ops.gradient_registry``, tensorflow/python/framework/ops.py). Its closure holds the
traced graph's tensors, so the FuncGraph and the functions in it live as long as TensorFlow's ``ops``
module. Here that is this project's custom gradients (trainer/model.py: the embedding lookup, the
label-range clip) and TensorFlow's own (``ReplicaContext.all_reduce`` in a Keras loss), traced inside
the gradient-accumulation ``tf.while_loop`` (trainer/train_step.py): the registry keeps the loop's
body and condition, AtomicFunctions. In a long-lived process (a notebook kernel, the test process)
each training's graphs stay in memory; at interpreter exit they are freed only after TensorFlow's
modules are torn down, where ``AtomicFunction.__del__`` fails on TF 2.16 ("Exception ignored in ...
TypeError: 'NoneType' object is not subscriptable", atomic_function.py:291; printed when a garbage
collection runs during the teardown, tensorflow/datasets#5355). TF 2.17+ returns early there when
the module is gone, which hides the message but not the kept graphs.

:func:`released` unregisters the custom gradients traced inside a block when it ends (``run_fn``: a
training's graphs are done when it returns). The exit hook, registered on this module's import (after
TensorFlow's, so it runs before TensorFlow's own and before the interpreter's teardown), unregisters
the rest and collects their graphs while TensorFlow is whole (trainer/data.py's exit hook forgets its
Transform layers the same way). Nothing else is unregistered: the
gradients of ops, registered by name at import, stay. It also forgets trainer/data.py's Transform
layers (each holds its loaded SavedModel, and its cache key), which ``run_fn`` forgets when it ends.
"""
from __future__ import annotations

import atexit
import contextlib
import gc
from typing import AbstractSet, Iterator

import tensorflow  # noqa: F401 - imported first, so the exit hook below runs before TensorFlow's own

from tfxline.patches import guard

# custom_gradient.generate_name()'s names (TF 2.16 and 2.21); the SavedModel loader takes them too
CUSTOM_GRADIENT_PREFIX = "CustomGradient-"


def _registry() -> dict:
    """TensorFlow's gradient registry (no public handle); empty where a TensorFlow has it elsewhere."""
    try:
        from tensorflow.python.framework import ops
    except ImportError:
        return {}
    return getattr(getattr(ops, "gradient_registry", None), "_registry", None) or {}


def custom_gradient_names() -> AbstractSet[str]:
    return {name for name in _registry() if name.startswith(CUSTOM_GRADIENT_PREFIX)}


def release(keep: AbstractSet[str] = frozenset()) -> int:
    """Unregister the custom gradients not in ``keep``; the graphs only they kept become garbage
    (Python's collector frees them). Returns how many; 0 where the patch stands down."""
    if not guard.applies("tf_custom_gradients"):
        return 0
    registry = _registry()
    gone = custom_gradient_names() - keep
    for name in gone:
        registry.pop(name, None)
    return len(gone)


@contextlib.contextmanager
def released() -> Iterator[None]:
    """Unregister the custom gradients traced inside the block when it ends. Only for work whose
    graphs are done when it returns: one of them differentiated again afterwards (a function it
    traced, called under a new tape) would no longer find its gradient."""
    before = custom_gradient_names()
    try:
        yield
    finally:
        release(keep=before)


@atexit.register
def _release_at_exit() -> None:
    if release():
        gc.collect()  # now, while TensorFlow's modules are whole
