"""The TFMA EvalConfig, built from the config's ``evaluation`` section and the feature spec.

Each task gets its own metrics and gates (``TASK_GATES``, keyed by the feature spec's task).
Every task has a value gate on by default that refuses a model no better than the trivial one,
so a config that sets no number blesses a reasonable first model (docs/your-data.md):

- binary: AUC >= ``min_auc`` (default 0.55: chance ranks at 0.5) and no more than
  ``max_auc_drop`` below the serving model's; accuracy >= ``min_accuracy`` when set.
- multiclass: ``accuracy_lift`` (accuracy minus the eval split's commonest-class share,
  components/tfma_metrics.py) above ``min_accuracy_lift`` (default 0: strictly better than always
  predicting the commonest class); accuracy >= ``min_accuracy`` when set and no more than
  ``max_accuracy_drop`` below the serving model's. Per-class recall comes from the confusion
  matrix (a plot, not gated).
- regression: R² above ``min_r2`` (default 0: strictly better than predicting the mean),
  RMSE <= ``max_rmse`` and MAE <= ``max_mae`` when set, and RMSE no more than
  ``max_error_increase`` (relative) above the serving model's.

"Above" floors are exclusive: TFMA's bounds are inclusive, so they are set one double above the
number (components/gates.py, which also names each gate's config key for the refusal message).
Change thresholds compare with the model serving now (components/serving_baseline.py); TFMA
skips them when nothing serves yet, so the first model is judged on its value thresholds alone.
"""
from __future__ import annotations

from typing import Callable, Dict, List, Optional

# The config protos from their own module: TFMA 0.47 (TFX 1.16) also re-exports them as
# tfma.EvalConfig etc., TFMA 0.52 (TFX 1.21) no longer does (its __all__ still lists them).
from tensorflow_model_analysis.proto import config_pb2 as tfma_pb2
from google.protobuf.wrappers_pb2 import BoolValue

from components import histogram_metrics, tfma_metrics
from components.gates import lower_bound
from pipeline.config import EvaluationConfig
from trainer.export import SERVING_SIGNATURE, TRANSFORM_SIGNATURE, output_key
from transforms import features as F

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
               direction=None, absolute: Optional[float] = None,
               relative: Optional[float] = None) -> Optional[tfma_pb2.MetricThreshold]:
    """A value threshold (lower / upper bound; None: no bound) and a change threshold against
    the baseline (absolute / relative; None: none); None when nothing is set."""
    t = tfma_pb2.MetricThreshold()
    if lower is not None:
        t.value_threshold.lower_bound.value = lower
    if upper is not None:
        t.value_threshold.upper_bound.value = upper
    if absolute is not None or relative is not None:
        t.change_threshold.direction = direction
        if absolute is not None:
            t.change_threshold.absolute.value = absolute
        if relative is not None:
            t.change_threshold.relative.value = relative
    return t if t.ByteSize() else None


def _set(value: float) -> Optional[float]:
    """A threshold knob: 0 means off."""
    return value or None


def binary_metrics(ev: EvaluationConfig) -> List[tfma_pb2.MetricConfig]:
    # Counts, accuracy, precision, recall and calibration come off AUC's histogram: one
    # per-example combiner instead of four (components/histogram_metrics.py).
    histogram = histogram_metrics.MODULE
    return [
        _metric("HistogramExampleCount", module=histogram),
        _metric("AUC", _threshold(lower=ev.min_auc, direction=HIGHER, absolute=-ev.max_auc_drop)),
        _metric("AUCPrecisionRecall", name="pr_auc"),
        _metric("HistogramBinaryAccuracy", _threshold(lower=_set(ev.min_accuracy)), module=histogram),
        _metric("HistogramPrecision", module=histogram),
        _metric("HistogramRecall", module=histogram),
        _metric("HistogramCalibration", module=histogram),
        _metric("HistogramMeanLabel", module=histogram),  # tells one-class slices (AUC undefined) apart in reports
        _metric("BinaryCrossentropy", name="loss"),
    ]


def multiclass_metrics(ev: EvaluationConfig) -> List[tfma_pb2.MetricConfig]:
    return [
        _metric("ExampleCount"),
        _metric("SparseCategoricalAccuracy", _threshold(
            lower=_set(ev.min_accuracy), direction=HIGHER, absolute=-ev.max_accuracy_drop), name="accuracy"),
        _metric("AccuracyLift", _threshold(lower=lower_bound("accuracy_lift", ev.min_accuracy_lift)),
                module=tfma_metrics.MODULE),
        _metric("SparseCategoricalCrossentropy", name="loss"),
        _metric("MultiClassConfusionMatrixPlot"),  # per-class recall and the report's matrix
    ]


def regression_metrics(ev: EvaluationConfig) -> List[tfma_pb2.MetricConfig]:
    module = tfma_metrics.MODULE
    return [
        _metric("ExampleCount"),
        _metric("RootMeanSquaredError", _threshold(
            upper=_set(ev.max_rmse), direction=LOWER, relative=ev.max_error_increase), module=module),
        _metric("MeanAbsoluteError", _threshold(upper=_set(ev.max_mae)), name="mae"),
        _metric("RSquared", _threshold(lower=lower_bound("r2", ev.min_r2)), module=module),
        _metric("MeanLabel"),
        _metric("MeanPrediction"),
        _metric("PredictionSample", module=module),  # the report's predicted-vs-actual chart
    ]


TASK_GATES: Dict[str, Callable[[EvaluationConfig], List[tfma_pb2.MetricConfig]]] = {
    F.TASK_BINARY: binary_metrics, F.TASK_MULTICLASS: multiclass_metrics, F.TASK_REGRESSION: regression_metrics}


def build_eval_config(ev: EvaluationConfig, spec: F.FeatureSpec) -> tfma_pb2.EvalConfig:
    return tfma_pb2.EvalConfig(
        model_specs=[tfma_pb2.ModelSpec(
            signature_name=SERVING_SIGNATURE,
            model_type="tf_generic",
            prediction_key=output_key(spec.task),
            # The label is derived by the Transform graph (e.g. tips > 20% of fare), so TFMA
            # runs the model's transform_features signature to get it.
            preprocessing_function_names=[TRANSFORM_SIGNATURE],
            label_key=spec.label.name,
        )],
        slicing_specs=[tfma_pb2.SlicingSpec()] + [tfma_pb2.SlicingSpec(feature_keys=[s]) for s in ev.slices],
        metrics_specs=[tfma_pb2.MetricsSpec(metrics=TASK_GATES[spec.task](ev))],
        # Not the model's compiled Keras metrics on top: they repeat the metrics listed here,
        # and computing them makes TFMA revive the SavedModel as a Keras model in every
        # metrics combiner (29 s of a 64 s Evaluator on the taxi data, py-spy profile).
        options=tfma_pb2.Options(include_default_metrics=BoolValue(value=False)),
    )
