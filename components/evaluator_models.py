"""The Evaluator's model loading, with a trees model's inference ops registered first
(trainer/trees_ops.py): in the executor's process and in every Beam worker that loads the model
(the DirectRunner's multi_processing workers, Dataflow's), since the loader TFMA ships to them
is this module's ``WithInferenceOps``, not a closure of the executor's.

TFX's Evaluator takes the function by name (tfx/components/evaluator/executor.py: the
``custom_eval_shared_model`` execution property, read by udf_utils.try_get_fn):
components/serving_baseline.py EvaluatorExecutor sets it.
"""
from __future__ import annotations

from typing import Any, Callable

FUNCTION = __name__ + ".custom_eval_shared_model"


class WithInferenceOps:
    """A TFMA model loader's construct_fn that registers the decision-forest ops before it loads."""

    def __init__(self, construct_fn: Callable[[], Any]):
        self.construct_fn = construct_fn

    def __call__(self):
        from tfxline.trainer import trees_ops

        trees_ops.load_inference_ops()
        return self.construct_fn()


def custom_eval_shared_model(eval_saved_model_path, model_name, eval_config, **kwargs):
    """TFMA's default shared model, its loader registering the inference ops first."""
    import tensorflow_model_analysis as tfma

    from tfxline.trainer import trees_ops

    trees_ops.load_inference_ops()  # this process: TFMA may load the model here too
    shared = tfma.default_eval_shared_model(eval_saved_model_path=eval_saved_model_path, model_name=model_name,
                                            eval_config=eval_config, **kwargs)
    shared.model_loader.construct_fn = WithInferenceOps(shared.model_loader.construct_fn)
    return shared
