"""The TFMA EvalConfig, built from the config's ``evaluation`` section and the feature spec.

Each task gets its own metrics and gates: its task type lists them (``tfma_metrics`` in
task_types/binary.py, multiclass.py, regression.py, whose docstrings state the gates), built
with ``MetricBuilder``. Every task has a value gate on by default that refuses a model no better
than the trivial one, so a config that sets no number blesses a reasonable first model
(docs/your-data.md).

"Above" floors are exclusive: TFMA's bounds are inclusive, so they are set one double above the
number (components/gates.py, which also names each gate's config key for the refusal message).
Change thresholds compare with the model serving now (components/serving_baseline.py); TFMA
skips them when nothing serves yet, so the first model is judged on its value thresholds alone.
"""
from __future__ import annotations

import functools
from typing import Callable, Dict, List, Optional

from google.protobuf.wrappers_pb2 import BoolValue

# The config protos from their own module: TFMA 0.47 (TFX 1.16) also re-exports them as
# tfma.EvalConfig etc., TFMA 0.52 (TFX 1.21) no longer does (its __all__ still lists them).
from tensorflow_model_analysis.proto import config_pb2 as tfma_pb2

from tfxline import task_types
from tfxline.components import histogram_metrics, tfma_metrics
from tfxline.components.gates import lower_bound
from tfxline.pipeline.config import EvaluationConfig
from tfxline.trainer.export import SERVING_SIGNATURE, TRANSFORM_SIGNATURE
from tfxline.transforms import features as F

HIGHER, LOWER = tfma_pb2.MetricDirection.HIGHER_IS_BETTER, tfma_pb2.MetricDirection.LOWER_IS_BETTER


def _metric(class_name: str, threshold: Optional[tfma_pb2.MetricThreshold] = None, name: str = "",
            module: str = "") -> tfma_pb2.MetricConfig:
    """A metric; its threshold gates the overall slice only (slices are reported, not gated:
    a small slice's metric is too noisy to block a release)."""
    metric = tfma_pb2.MetricConfig(class_name=class_name, module=module,
                                   config=f'{{"name": "{name}"}}' if name else "")
    if threshold is not None:
        metric.per_slice_thresholds.append(
            tfma_pb2.PerSliceMetricThreshold(slicing_specs=[tfma_pb2.SlicingSpec()], threshold=threshold))
    return metric


def _threshold(lower: Optional[float] = None, upper: Optional[float] = None,
               direction: Optional[int] = None, absolute: Optional[float] = None,
               relative: Optional[float] = None) -> Optional[tfma_pb2.MetricThreshold]:
    """A value threshold (lower / upper bound; None: no bound) and a change threshold against
    the baseline (absolute / relative; None: none); None when nothing is set."""
    t = tfma_pb2.MetricThreshold()
    if lower is not None:
        t.value_threshold.lower_bound.value = lower
    if upper is not None:
        t.value_threshold.upper_bound.value = upper
    if absolute is not None or relative is not None:
        if direction is None:
            raise ValueError("a change threshold needs its direction (HIGHER or LOWER)")
        t.change_threshold.direction = direction
        if absolute is not None:
            t.change_threshold.absolute.value = absolute
        if relative is not None:
            t.change_threshold.relative.value = relative
    return t if t.ByteSize() else None


def _set(value: float) -> Optional[float]:
    """A threshold knob: 0 means off."""
    return value or None


class MetricBuilder:
    """What a task type's ``tfma_metrics`` builds its list with (task_types/base.py)."""
    HIGHER, LOWER = HIGHER, LOWER
    HISTOGRAM_MODULE = histogram_metrics.MODULE  # the metrics computed off AUC's histogram
    METRICS_MODULE = tfma_metrics.MODULE         # tfxline's own TFMA metrics
    metric = staticmethod(_metric)
    threshold = staticmethod(_threshold)
    optional = staticmethod(_set)
    lower_bound = staticmethod(lower_bound)


def task_metrics(task: str, ev: EvaluationConfig) -> List[tfma_pb2.MetricConfig]:
    """The metrics and gates of ``task``, from its task type."""
    return task_types.get(task).tfma_metrics(ev, MetricBuilder)


# task -> its metrics for an evaluation section
TASK_GATES: Dict[str, Callable[[EvaluationConfig], List[tfma_pb2.MetricConfig]]] = {
    name: functools.partial(task_metrics, name) for name in task_types.NAMES}


def build_eval_config(ev: EvaluationConfig, spec: F.FeatureSpec) -> tfma_pb2.EvalConfig:
    return tfma_pb2.EvalConfig(
        model_specs=[tfma_pb2.ModelSpec(
            signature_name=SERVING_SIGNATURE,
            model_type="tf_generic",
            prediction_key=task_types.get(spec.task).output_key,
            # The label is derived by the Transform graph (e.g. tips > 20% of fare), so TFMA
            # runs the model's transform_features signature to get it.
            preprocessing_function_names=[TRANSFORM_SIGNATURE],
            label_key=spec.label.name,
        )],
        slicing_specs=[tfma_pb2.SlicingSpec()] + [tfma_pb2.SlicingSpec(feature_keys=[s]) for s in ev.slices],
        metrics_specs=[tfma_pb2.MetricsSpec(metrics=task_metrics(spec.task, ev))],
        # Not the model's compiled Keras metrics on top: they repeat the metrics listed here,
        # and computing them makes TFMA revive the SavedModel as a Keras model in every
        # metrics combiner (29 s of a 64 s Evaluator on the taxi data, py-spy profile).
        options=tfma_pb2.Options(include_default_metrics=BoolValue(value=False)),
    )
