"""The TFMA EvalConfig, built from the config's ``evaluation`` section and the feature spec."""
from __future__ import annotations

from typing import List

# The config protos from their own module: TFMA 0.47 (TFX 1.16) also re-exports them as
# tfma.EvalConfig etc., TFMA 0.52 (TFX 1.21) no longer does (its __all__ still lists them).
from tensorflow_model_analysis.proto import config_pb2 as tfma_pb2
from google.protobuf.wrappers_pb2 import BoolValue

from pipeline.config import EvaluationConfig
from trainer.export import SERVING_SIGNATURE, TRANSFORM_SIGNATURE, output_key
from transforms import features as F


def _metric(class_name: str, threshold=None, **kwargs) -> tfma_pb2.MetricConfig:
    """A metric; its threshold gates the overall slice only (slices are reported, not gated:
    a small slice's AUC is too noisy to block a release)."""
    metric = tfma_pb2.MetricConfig(class_name=class_name, **kwargs)
    if threshold is not None:
        metric.per_slice_thresholds.append(
            tfma_pb2.PerSliceMetricThreshold(slicing_specs=[tfma_pb2.SlicingSpec()], threshold=threshold))
    return metric


def _lower_bound(value: float) -> tfma_pb2.MetricThreshold:
    return tfma_pb2.MetricThreshold(value_threshold=tfma_pb2.GenericValueThreshold(lower_bound={"value": value}))


def binary_metrics(ev: EvaluationConfig) -> List[tfma_pb2.MetricConfig]:
    auc_threshold = _lower_bound(ev.min_auc)
    # Change threshold against the baseline (the model serving now, components/serving_baseline.py).
    # TFMA skips it when there is no baseline, so the first run is judged on values alone.
    auc_threshold.change_threshold.CopyFrom(tfma_pb2.GenericChangeThreshold(
        direction=tfma_pb2.MetricDirection.HIGHER_IS_BETTER, absolute={"value": -ev.max_auc_drop}))
    metrics = [
        _metric("ExampleCount"),
        _metric("AUC", threshold=auc_threshold),
        _metric("AUCPrecisionRecall", config='{"name": "pr_auc"}'),
        _metric("BinaryAccuracy", threshold=_lower_bound(ev.min_accuracy) if ev.min_accuracy else None),
        _metric("Precision"),
        _metric("Recall"),
        _metric("Calibration"),
        _metric("MeanLabel"),  # tells one-class slices (AUC undefined) apart in reports
        _metric("BinaryCrossentropy", config='{"name": "loss"}'),
    ]
    return metrics


def multiclass_metrics(ev: EvaluationConfig) -> List[tfma_pb2.MetricConfig]:
    return [
        _metric("ExampleCount"),
        _metric("SparseCategoricalAccuracy", config='{"name": "accuracy"}',
                threshold=_lower_bound(ev.min_accuracy) if ev.min_accuracy else None),
        _metric("SparseCategoricalCrossentropy", config='{"name": "loss"}'),
    ]


def regression_metrics(ev: EvaluationConfig) -> List[tfma_pb2.MetricConfig]:
    return [_metric("ExampleCount"), _metric("MeanSquaredError", config='{"name": "loss"}'),
            _metric("MeanAbsoluteError")]


def build_eval_config(ev: EvaluationConfig, spec: F.FeatureSpec) -> tfma_pb2.EvalConfig:
    metrics = {F.TASK_BINARY: binary_metrics, F.TASK_MULTICLASS: multiclass_metrics,
               F.TASK_REGRESSION: regression_metrics}[spec.task](ev)
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
        metrics_specs=[tfma_pb2.MetricsSpec(metrics=metrics)],
        # Not the model's compiled Keras metrics on top: they repeat the metrics listed here,
        # and computing them makes TFMA revive the SavedModel as a Keras model in every
        # metrics combiner (29 s of a 64 s Evaluator on the taxi data, py-spy profile).
        options=tfma_pb2.Options(include_default_metrics=BoolValue(value=False)),
    )
