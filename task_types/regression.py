"""Regression: the label is a number; the model serves it as ``predictions``.

Label transform ``regression``: a numeric target, used as is; with ``log: true``, the model
learns log(1 + max(y, 0)) and serves exp(.) - 1, in the label's own unit (for non-negative
skewed targets such as prices and wages). The network learns the label standardised (the train
split's mean and standard deviation) and its head scales it back, whatever the label's unit. The
output is clipped to the train split's label range widened by 10% of its width on each side (in
log space for a log label, before exp), so an input far outside the data cannot blow it up.

Gates: R² above ``min_r2`` (default 0: strictly better than predicting the mean), RMSE <=
``max_rmse`` and MAE <= ``max_mae`` when set, and RMSE no more than ``max_error_increase``
(relative) above the serving model's.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence

from tfxline.task_types.base import LabelError, TaskType

NAME = "regression"


class Regression(TaskType):
    name = NAME
    label_transforms = ("regression",)
    label_fields = {"regression": ()}
    column_transform = "regression"
    log_label = True
    predicts_classes = False
    activation = "linear"
    output_key = "predictions"
    main_metric, higher_is_better = "rmse", False
    headline = ("rmse", "mae", "r2", "mean_label", "mean_prediction", "example_count")
    default_gate = "r2"
    difference_unit = " prediction standard deviations"

    def transform_label(self, label, inputs, columns):
        import tensorflow as tf

        dense = columns.to_dense(columns.as_float(inputs[label.source]), 0.0)
        return tf.math.log1p(tf.maximum(dense, 0.0)) if label.log else dense

    def label_in_its_unit(self, label, values):
        """A log label (``log: true``) back in the label's own unit, what serving returns and
        evaluation compares (exp(x) - 1, not expm1: TFLite has no Expm1 builtin)."""
        import tensorflow as tf
        return tf.exp(values) - 1.0 if label.log else values

    def suggested_by(self, values) -> Optional[str]:
        if not values.numeric:
            return None
        return "numbers with " + ("many" if values.many else str(len(values.counts))) + " distinct values"

    def check_label(self, label, values, where: str) -> None:
        if not values.numeric:
            raise LabelError(f"{where} is a regression label but holds text, {values.first_text!r}; make it "
                             "transform: class_vocabulary (classes) or binary, or fix the values")

    def flag_problem(self, column: str, values) -> Optional[str]:
        if not values.numeric:
            return f"column {column!r} holds text ({values.first_text!r})"
        return None

    def label_as_numbers(self, cells: Sequence[str], positive: Any = None) -> Optional[List[float]]:
        return [float(c) for c in cells]

    def head_fields(self, classes, label_moments) -> Dict[str, Any]:
        """At the train split's label scale, so the network learns a standardised target; with
        the split's label range (min, max after the moments), the output bounded to it, widened."""
        if label_moments is None:
            return {}
        mean, std, *label_range = label_moments()
        fields: Dict[str, Any] = {"label_mean": mean, "label_scale": std if std > 0 else 1.0}
        if len(label_range) == 2 and None not in label_range:
            fields.update(label_min=label_range[0], label_max=label_range[1])
        return fields

    def loss_and_metrics(self, keras):
        return (keras.losses.MeanSquaredError(), [keras.metrics.RootMeanSquaredError(name="rmse")])

    def tfma_metrics(self, ev, tfma) -> List[Any]:
        module = tfma.METRICS_MODULE
        return [
            tfma.metric("ExampleCount"),
            tfma.metric("RootMeanSquaredError", tfma.threshold(
                upper=tfma.optional(ev.max_rmse), direction=tfma.LOWER, relative=ev.max_error_increase), module=module),
            tfma.metric("MeanAbsoluteError", tfma.threshold(upper=tfma.optional(ev.max_mae)), name="mae"),
            tfma.metric("RSquared", tfma.threshold(lower=tfma.lower_bound("r2", ev.min_r2)), module=module),
            tfma.metric("MeanLabel"),
            tfma.metric("MeanPrediction"),
            tfma.metric("PredictionSample", module=module),  # the report's predicted-vs-actual chart
        ]

    def main_metric_value(self, outputs, labels) -> float:
        import numpy as np
        return float(np.sqrt(np.mean((outputs - labels) ** 2)))

    def output_difference(self, saved, tflite):
        """In standard deviations of the SavedModel's predictions (the label's unit is arbitrary)."""
        import numpy as np
        return super().output_difference(saved, tflite) / max(float(np.std(saved)), 1e-12)

    def prediction_columns(self, values, classes: Sequence[str] = (), decided=None) -> List[Dict[str, Any]]:
        return [{"prediction": float(v)} for v in values]

    def describe_predictions(self, rows: List[Dict[str, Any]]) -> str:
        import numpy as np
        p = np.array([r["prediction"] for r in rows])
        return f"predictions mean {_g(p.mean())}, min {_g(p.min())}, max {_g(p.max())}"


def _g(x: float) -> str:
    """A number in one format: 23890.5 -> '23,890', 0.01234 -> '0.01234'."""
    return f"{x:,.0f}" if abs(x) >= 1000 else f"{x:.4g}"


TASK = Regression()
