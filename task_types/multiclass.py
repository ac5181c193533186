"""Multi-class classification: the label is a class index; the model serves every class's
probability as ``probabilities`` [batch, classes].

Label transform ``class_vocabulary``: each distinct value (string or whole number, also written
as a float such as ``3.0``) is a class, numbered by the Transform's label vocabulary
(``LABEL_VOCABULARY``, which the SavedModel carries: predict and the report name classes by it).

Gates: ``accuracy_lift`` (accuracy minus the eval split's commonest-class share,
components/tfma_metrics.py) above ``min_accuracy_lift`` (default 0: strictly better than always
predicting the commonest class); accuracy >= ``min_accuracy`` when set and no more than
``max_accuracy_drop`` below the serving model's. Per-class recall comes from the confusion matrix
(a plot, not gated).
"""
from __future__ import annotations

import collections
from typing import Any, Dict, List, Optional, Sequence

from tfxline.task_types.base import LabelError, TaskType

NAME = "multiclass"
LABEL_VOCABULARY = "__label_vocab"   # the tft vocabulary file of the classes (Transform and Trainer)
MULTICLASS_MAX_NUMBERS = 10  # whole numbers with at most this many values: classes, not a quantity
MIN_ROWS_PER_CLASS = 10      # fewer labelled rows a class on average: too few to learn (or to see in every split)


class Multiclass(TaskType):
    name = NAME
    label_transforms = ("class_vocabulary",)
    label_fields = {"class_vocabulary": ()}
    column_transform = "class_vocabulary"
    activation = "softmax"
    output_key = "probabilities"
    main_metric, higher_is_better = "accuracy", True
    headline = ("accuracy", "accuracy_lift", "loss", "example_count")
    default_gate = "accuracy_lift"

    def transform_label(self, label, inputs, columns):
        import tensorflow as tf
        import tensorflow_transform as tft

        x = inputs[label.source]
        # whole-number classes written as floats (81.0, as pandas writes integers beside empty
        # cells) are their integers (check_label refuses fractional classes)
        x = columns.as_int(x) if x.dtype.is_floating else x
        dense = columns.to_dense(x, columns.missing_default(x))
        if dense.dtype.is_integer:
            dense = tf.cast(dense, tf.int64)
        return tft.compute_and_apply_vocabulary(
            dense, num_oov_buckets=0, default_value=0, vocab_filename=LABEL_VOCABULARY)

    def suggested_by(self, values) -> Optional[str]:
        """Text (pipeline/data/labels.py refuses text with too many values first), or a few whole numbers."""
        n = len(values.counts)
        if not values.numeric:
            return f"{n} text values (classes)"
        if values.integral and not values.many and n <= MULTICLASS_MAX_NUMBERS:
            return f"{n} whole-number values (classes; --task regression if they are amounts)"
        return None

    def check_label(self, label, values, where: str) -> None:
        n = len(values.counts)
        if n < 2 and not values.many:
            raise LabelError(f"{where} holds one class ({values.shown()}): a multi-class model needs two or more; "
                             "add rows of other classes, or pick another label column")
        if values.many or n * MIN_ROWS_PER_CLASS > values.present:
            raise LabelError(f"{where} holds {'over ' + str(values.DISTINCT_KEPT) if values.many else n} classes in "
                             f"{values.present} labelled rows, under {MIN_ROWS_PER_CLASS} rows a class: too few to "
                             "learn each (a class missing from the train split cannot be predicted); pick a label with "
                             "fewer classes, or make it regression if the values are amounts")
        if values.numeric and not values.integral:
            raise LabelError(f"{where} is a class label (class_vocabulary) but holds fractional numbers (e.g. "
                             f"{values.shown(2)}); make it transform: regression, or write classes as words or "
                             "whole numbers")

    def flag_problem(self, column: str, values) -> Optional[str]:
        if values.numeric and not values.integral:
            return f"column {column!r} holds fractional numbers ({values.shown(2)})"
        return None

    def units(self, num_classes: int) -> int:
        return num_classes

    def head_fields(self, classes, label_moments) -> Dict[str, Any]:
        """Sized by the label vocabulary."""
        return {"num_classes": classes()}

    def tuning_space(self):
        """The shared space, and whether each class weighs the same in the loss (a rare class's
        recall against overall accuracy: the objective decides)."""
        return dict(super().tuning_space(), class_weight=("none", "balanced"))

    def loss_and_metrics(self, keras):
        return (keras.losses.SparseCategoricalCrossentropy(),
                [keras.metrics.SparseCategoricalAccuracy(name="accuracy")])

    def flat_output(self, outputs):
        return outputs  # one probability per class

    def tfma_metrics(self, ev, tfma) -> List[Any]:
        return [
            tfma.metric("ExampleCount"),
            tfma.metric("SparseCategoricalAccuracy", tfma.threshold(
                lower=tfma.optional(ev.min_accuracy), direction=tfma.HIGHER, absolute=-ev.max_accuracy_drop),
                name="accuracy"),
            tfma.metric("AccuracyLift", tfma.threshold(lower=tfma.lower_bound("accuracy_lift", ev.min_accuracy_lift)),
                        module=tfma.METRICS_MODULE),
            tfma.metric("SparseCategoricalCrossentropy", name="loss"),
            tfma.metric("MultiClassConfusionMatrixPlot"),  # per-class recall and the report's matrix
        ]

    def main_metric_value(self, outputs, labels) -> float:
        import numpy as np
        return float(np.mean(np.argmax(outputs, axis=1) == labels))

    def prediction_columns(self, values, classes: Sequence[str] = (), decided=None) -> List[Dict[str, Any]]:
        """``predicted_class`` (the label value, from the model's label vocabulary), its
        ``probability`` and every class's, as JSON keyed by class."""
        import numpy as np
        names = [classes[i] if i < len(classes) else str(i) for i in range(values.shape[-1])] if len(values) else []
        return [{"predicted_class": names[int(np.argmax(v))], "probability": float(np.max(v)),
                 "probabilities": {n: round(float(x), 6) for n, x in zip(names, v)}}
                for v in values]

    def describe_predictions(self, rows: List[Dict[str, Any]]) -> str:
        counts = collections.Counter(r["predicted_class"] for r in rows)
        return "predicted classes: " + ", ".join(f"{name} {n}" for name, n in counts.most_common())


TASK = Multiclass()
