"""Binary classification: the label is 0 or 1; the model serves P(positive) as ``probabilities``.

Label transforms:

``ratio_threshold``  ``numerator > threshold * denominator``. A non-positive denominator gives 0
                     (the ratio is undefined); a CSV row with either cell empty is left out
                     (``data.missing_labels: drop``), else 0.
``binary``           a column of two values, ``positive`` naming the positive one as the data
                     writes it (``"yes"``, ``"malignant"``, ``2``); without it the column must hold
                     0 and 1. The pre-flight check refuses a column with other values or without
                     the positive one (``check_label``).

The decision: the model serves P(positive) and ``predicted_class`` (1 where P >= its threshold).
The Trainer chooses the threshold on the validation split for ``evaluation.threshold``'s objective
(``choose_threshold``: best F1 by default), so a rare positive class is still predicted; the
Evaluator measures accuracy, precision and recall at each model's own threshold.

Gates: AUC >= ``min_auc`` (default 0.55: chance ranks at 0.5) and no more than ``max_auc_drop``
below the serving model's; accuracy >= ``min_accuracy`` when set; and the model predicts both
classes on the eval split at its threshold (``predicted_positive_rate`` strictly between 0 and 1).
"""
from __future__ import annotations

import math
from typing import Any, Dict, List, Optional, Sequence, Tuple

from tfxline.task_types.base import LabelError, TaskType, count_text
from tfxline.task_types.decision import PREDICTED_CLASS, choose_threshold

NAME = "binary"


class Binary(TaskType):
    name = NAME
    label_transforms = ("ratio_threshold", "binary")
    label_fields = {"ratio_threshold": ("numerator", "denominator"), "binary": ()}
    column_transform = "binary"
    positive_label = True
    decides = True
    activation = "sigmoid"
    output_key = "probabilities"
    early_stopping_metric = "val_auc"
    main_metric, higher_is_better = "auc", True
    headline = ("auc", "accuracy", "binary_accuracy", "pr_auc", "precision", "recall", "decision_threshold", "loss",
                "example_count")
    default_gate = "auc"

    def transform_label(self, label, inputs, columns):
        import tensorflow as tf

        if label.transform == "ratio_threshold":
            numerator = columns.to_dense(columns.as_float(inputs[label.numerator]), 0.0)
            denominator = columns.to_dense(columns.as_float(inputs[label.denominator]), 0.0)
            positive = tf.logical_and(denominator > 0, numerator > label.threshold * denominator)
            return tf.cast(positive, tf.int64)
        x = inputs[label.source]
        dense = columns.to_dense(x, columns.missing_default(x))
        if dense.dtype == tf.string:
            return tf.cast(tf.equal(dense, "1" if label.positive is None else str(label.positive)), tf.int64)
        if label.positive is not None:  # a numeric label with its positive value named (check_label)
            return tf.cast(tf.equal(tf.cast(dense, tf.float64), float(label.positive)), tf.int64)
        return tf.cast(dense > 0, tf.int64)

    def suggested_by(self, values) -> Optional[str]:
        if len(values.counts) == 2 and not values.many:
            return f"two values, {values.shown()}"
        return None

    def check_label(self, label, values, where: str) -> None:
        if label.transform != "binary":  # a ratio_threshold label is computed: any numbers do
            return
        n = len(values.counts)
        positive = positive_value(label, values)
        if values.many or n > 2:
            raise LabelError(f"{where} is a binary label but holds {count_text(values)} values "
                             f"({values.shown()}); keep two values, or make it transform: class_vocabulary "
                             "(multi-class) or regression")
        if positive not in values.counts:
            others = "the values " + values.shown() if n > 1 else "only " + values.shown()
            fix = (f"set features.label.positive to the positive one (e.g. --set "
                   f"'features.label.positive=\"{values.distinct[0]}\"')"
                   if label.positive is None else "set features.label.positive to a value the column holds")
            raise LabelError(f"{where} holds {others}, none of them the positive value {positive!r}"
                             f"{'' if label.positive is not None else ' (the default with no positive: set)'}; {fix}")
        if n < 2:
            raise LabelError(f"{where} holds only {values.shown()}: a binary model needs both classes; add rows of "
                             "the other class")
        if values.numeric and label.positive is None and {float(v) for v in values.counts} != {0.0, 1.0}:
            raise LabelError(f"{where} holds {values.shown()}, not 0 and 1; say which is positive: set "
                             f"features.label.positive (e.g. --set 'features.label.positive=\"{values.distinct[0]}\"')")

    def flag_problem(self, column: str, values) -> Optional[str]:
        if values.many or len(values.counts) > 2:
            return f"column {column!r} holds {count_text(values)} values ({values.shown()}), a binary label two"
        return None

    def label_as_numbers(self, cells: Sequence[str], positive: Any = None) -> Optional[List[float]]:
        wanted = str(positive) if positive is not None else "1"
        return [1.0 if c == wanted or _same_number(c, wanted) else 0.0 for c in cells]

    def loss_and_metrics(self, keras):
        return (keras.losses.BinaryCrossentropy(),
                [keras.metrics.AUC(name="auc"), keras.metrics.BinaryAccuracy(name="accuracy")])

    def early_stopping(self, classes_seen) -> Tuple[str, str]:
        """``val_auc``, but ``val_loss`` when the validation rows hold one class only: AUC is
        undefined there (Keras reports 0 every epoch, so early stopping would keep the first
        epoch's weights, silently)."""
        classes, rows = classes_seen()
        if len(classes) > 1:
            return self.early_stopping_metric, ""
        only = ", ".join(f"{c:g}" for c in sorted(classes))
        return "val_loss", (f"the {rows} validation rows hold only label {only}, where AUC is undefined; "
                            "more validation rows (data.validation_buckets) bring back val_auc")

    def serving_outputs(self, label, outputs: Any, threshold: Optional[float] = None) -> Dict[str, Any]:
        """P(positive), and with a threshold ``predicted_class``: 1 where P >= threshold."""
        import tensorflow as tf

        served = super().serving_outputs(label, outputs)
        if threshold is not None:
            served[PREDICTED_CLASS] = tf.cast(served[self.output_key] >= threshold, tf.int64)
        return served

    def decision(self, probabilities, labels, objective: str) -> Optional[Dict[str, Any]]:
        return choose_threshold(probabilities, labels, objective)

    def tfma_metrics(self, ev, tfma) -> List[Any]:
        # Counts, accuracy, precision, recall and calibration come off AUC's histogram: one
        # per-example combiner instead of four (components/histogram_metrics.py). Those at a
        # threshold are measured at each model's own (the Evaluator sets it per model).
        histogram = tfma.HISTOGRAM_MODULE
        return [
            tfma.metric("HistogramExampleCount", module=histogram),
            tfma.metric("AUC", tfma.threshold(lower=ev.min_auc, direction=tfma.HIGHER, absolute=-ev.max_auc_drop)),
            tfma.metric("AUCPrecisionRecall", name="pr_auc"),
            tfma.metric("HistogramBinaryAccuracy", tfma.threshold(lower=tfma.optional(ev.min_accuracy)),
                        module=histogram),
            tfma.metric("HistogramPrecision", module=histogram),
            tfma.metric("HistogramRecall", module=histogram),
            tfma.metric("HistogramDecisionThreshold", module=histogram),
            # a model that calls every eval row one class at its threshold is no classifier
            tfma.metric("HistogramPredictedPositiveRate", tfma.threshold(
                lower=tfma.lower_bound("predicted_positive_rate", 0.0), upper=math.nextafter(1.0, 0.0)),
                module=histogram),
            tfma.metric("HistogramCalibration", module=histogram),
            # tells one-class slices (AUC undefined) apart in reports
            tfma.metric("HistogramMeanLabel", module=histogram),
            tfma.metric("BinaryCrossentropy", name="loss"),
        ]

    def metric_noise(self, metric, score, labels):
        """AUC's standard error from its class counts (Hanley & McNeil, 1982): a rare class's few
        rows make it far larger than a proportion's on all the rows."""
        if metric != "auc":
            return super().metric_noise(metric, score, labels)
        import math

        import numpy as np

        positives = int(np.sum(np.asarray(labels).ravel() >= 0.5))
        negatives = len(np.asarray(labels).ravel()) - positives
        if not positives or not negatives:
            return super().metric_noise(metric, score, labels)
        a = min(max(score, 1e-6), 1 - 1e-6)
        q1, q2 = a / (2 - a), 2 * a * a / (1 + a)
        return math.sqrt((a * (1 - a) + (positives - 1) * (q1 - a * a) + (negatives - 1) * (q2 - a * a))
                         / (positives * negatives))

    def main_metric_value(self, outputs, labels) -> float:
        from sklearn.metrics import roc_auc_score
        return float(roc_auc_score(labels, outputs)) if len(set(labels.tolist())) > 1 else float("nan")

    def prediction_columns(self, values, classes: Sequence[str] = (), decided=None) -> List[Dict[str, Any]]:
        """``probability``: of the positive class; ``predicted_class``: 1 or 0 at the model's
        threshold (``decided``, serving_default's predicted_class; absent from older models)."""
        if decided is None:
            return [{"probability": float(v)} for v in values]
        return [{"probability": float(v), PREDICTED_CLASS: int(c)} for v, c in zip(values, decided)]

    def describe_predictions(self, rows: List[Dict[str, Any]]) -> str:
        import numpy as np
        p = np.array([r["probability"] for r in rows])
        if PREDICTED_CLASS not in rows[0]:
            return f"mean probability {p.mean():.4f}, {np.mean(p > 0.5):.1%} above 0.5"
        share = np.mean([r[PREDICTED_CLASS] for r in rows])
        return f"mean probability {p.mean():.4f}, {share:.1%} predicted positive at the model's threshold"


def positive_value(label, values) -> str:
    """The positive value of a binary label as it is written in the data: ``positive`` when
    set (a number matched by value, so 1 finds '1.0'), else '1'."""
    wanted = "1" if label.positive is None else str(label.positive)
    if wanted in values.counts:
        return wanted
    if values.numeric:
        try:
            number = float(wanted)
        except ValueError:
            return wanted
        for value in values.counts:
            if float(value) == number:
                return value
    return wanted


def _same_number(a: str, b: str) -> bool:
    try:
        return float(a) == float(b)
    except ValueError:
        return False


TASK = Binary()
