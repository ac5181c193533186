"""Binary metrics read off the calibration histogram that TFMA's AUC builds anyway.

TFMA gives every metric family its own per-example combiner: AUC and PR-AUC one histogram,
accuracy / precision / recall an exact confusion matrix, Calibration and MeanLabel a sum of
labels and predictions, ExampleCount a count. The Evaluator runs each of them in Python for
every example of every slice: at 200k eval rows and 3 slice keys that per-example work was
most of its time (docs/scale.md). The histogram (10,000 prediction buckets, each holding the
sum of labels, of predictions and of examples in it) already holds what these metrics need,
so here they are derived from it, through the same computation as AUC's: TFMA runs it once.

The values are TFMA's, with one edge: accuracy, precision and recall count a prediction of
exactly the threshold as positive (the histogram's buckets start at their lower edge), where
TFMA's exact matrix counts it negative; the served ``predicted_class`` (p >= threshold) counts
it positive too. A threshold is read on the buckets' grid (1/10,000): the Trainer chooses its
threshold on that grid (task_types/binary.py), so serving and these metrics draw the same line.
Each metric takes ``threshold`` (default 0.5), the model's own decision threshold.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, Iterable, Optional, Tuple

from tensorflow_model_analysis.metrics import calibration_histogram, metric_types, metric_util

MODULE = __name__
THRESHOLD = 0.5

# (weighted labels, weighted predictions, weighted examples) summed over some buckets.
Sums = Tuple[float, float, float]


def split_sums(histogram: Iterable[Any], num_buckets: int = calibration_histogram.DEFAULT_NUM_BUCKETS,
               threshold: float = THRESHOLD) -> Tuple[Sums, Sums]:
    """(positives, all): the (weighted labels, predictions, examples) of the buckets at or above
    ``threshold`` and of every bucket. Bucket 0 holds predictions below 0, bucket k (1..n) those
    in [(k-1)/n, k/n), bucket n+1 those at or above 1 (calibration_histogram's layout)."""
    first_positive = int(round(threshold * num_buckets)) + 1
    pos, total = [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]
    for bucket in histogram:
        values = (bucket.weighted_labels, bucket.weighted_predictions, bucket.weighted_examples)
        for i, v in enumerate(values):
            total[i] += v
            if bucket.bucket_id >= first_positive:
                pos[i] += v
    return (pos[0], pos[1], pos[2]), (total[0], total[1], total[2])


def _ratio(numerator: float, denominator: float) -> float:
    return numerator / denominator if denominator else float("nan")


def _accuracy(pos: Sums, total: Sums) -> float:
    tp, fp = pos[0], pos[2] - pos[0]
    tn = (total[2] - total[0]) - fp
    return _ratio(tp + tn, total[2])


def _positive_rate(pos: Sums, total: Sums) -> float:
    return _ratio(pos[2], total[2])


DERIVED: Dict[str, Callable[[Sums, Sums], float]] = {
    "example_count": lambda pos, total: total[2],
    "mean_label": lambda pos, total: _ratio(total[0], total[2]),
    "calibration": lambda pos, total: _ratio(total[1], total[0]),
    "binary_accuracy": _accuracy,
    "precision": lambda pos, total: _ratio(pos[0], pos[2]),
    "recall": lambda pos, total: _ratio(pos[0], total[0]),
    "predicted_positive_rate": _positive_rate,  # the share of rows the model calls positive
}
# The metrics that depend on the decision threshold: the Evaluator gives each model its own
# (components/decision_threshold.py); "decision_threshold" reports the one used.
AT_THRESHOLD = ("HistogramBinaryAccuracy", "HistogramPrecision", "HistogramRecall",
                "HistogramPredictedPositiveRate", "HistogramDecisionThreshold")


def _computations(derive: Optional[Callable[[Sums, Sums], float]], threshold: float):
    def computations(name: str, eval_config=None, model_name: str = "", output_name: str = "",
                     sub_key: Optional[metric_types.SubKey] = None, aggregation_type=None,
                     class_weights=None, example_weighted: bool = False, **_: Any):
        key = metric_types.MetricKey(name=name, model_name=model_name, output_name=output_name,
                                     sub_key=sub_key, example_weighted=example_weighted)
        # The arguments TFMA's AUC passes: the same histogram key, so the one combiner serves both.
        histogram = calibration_histogram.calibration_histogram(
            eval_config=eval_config, model_name=model_name, output_name=output_name, sub_key=sub_key,
            aggregation_type=aggregation_type, class_weights=class_weights,
            example_weighted=example_weighted)
        histogram_key = histogram[-1].keys[-1]

        def result(metrics: Dict[metric_types.MetricKey, Any]) -> Dict[metric_types.MetricKey, float]:
            if derive is None:  # HistogramDecisionThreshold: the threshold itself
                return {key: float(threshold)}
            return {key: derive(*split_sums(metrics[histogram_key], threshold=threshold))}

        return histogram + [metric_types.DerivedMetricComputation(keys=[key], result=result)]
    return computations


def _metric(class_name: str, metric_name: str) -> type:
    def __init__(self, name: str = metric_name, threshold: float = THRESHOLD):
        metric_types.Metric.__init__(
            self, metric_util.merge_per_key_computations(_computations(DERIVED.get(metric_name), threshold)),
            name=name, threshold=threshold)
    return type(class_name, (metric_types.Metric,), {"__init__": __init__, "__module__": MODULE})


# TFMA's metric names; the class names differ from TFMA's, which TFMA would look up first.
HistogramExampleCount = _metric("HistogramExampleCount", "example_count")
HistogramMeanLabel = _metric("HistogramMeanLabel", "mean_label")
HistogramCalibration = _metric("HistogramCalibration", "calibration")
HistogramBinaryAccuracy = _metric("HistogramBinaryAccuracy", "binary_accuracy")
HistogramPrecision = _metric("HistogramPrecision", "precision")
HistogramRecall = _metric("HistogramRecall", "recall")
HistogramPredictedPositiveRate = _metric("HistogramPredictedPositiveRate", "predicted_positive_rate")
HistogramDecisionThreshold = _metric("HistogramDecisionThreshold", "decision_threshold")
