"""TFMA metrics that TFMA lacks, for the multi-class and regression gates and the report
(``pipeline/eval_config.py`` names them by ``module``, so TFMA imports this module wherever the
Evaluator's Beam job runs):

``accuracy_lift``      multi-class accuracy minus the share of the commonest true class in the
                       evaluated rows: 0 for always predicting that class, negative for worse.
                       Both come from one pass (a per-class label count and the correct
                       count), so the default gate ``accuracy_lift > 0`` needs no domain number.
                       The predicted class is the first highest probability (as Keras's and
                       TFMA's SparseCategoricalAccuracy take it).
``rmse``               root mean squared error, in the label's unit.
``r2``                 the coefficient of determination, 1 - SSE / SST over the evaluated rows:
                       0 for always predicting their mean, negative for worse, 1 for perfect.
                       (TFMA's SquaredPearsonCorrelation is not it: a biased model can correlate
                       perfectly.) The gate's default ``r2 > 0`` needs no domain number.
``prediction_sample``  up to ``SAMPLE_SIZE`` (label, prediction) pairs for the report's
                       predicted-vs-actual and residual charts, as JSON bytes (TFMA neither diffs
                       nor thresholds a bytes value). The rows kept are the smallest hashes of
                       the pair: the same rows whatever the Beam partitioning.
"""
from __future__ import annotations

import hashlib
import heapq
import json
import math
import struct
from typing import Any, Dict, Iterable, List, Optional, Tuple

import apache_beam as beam
import numpy as np
from tensorflow_model_analysis.metrics import metric_types, metric_util

ACCURACY_LIFT, RMSE, R2, PREDICTION_SAMPLE = "accuracy_lift", "rmse", "r2", "prediction_sample"
SAMPLE_SIZE = 400
MODULE = __name__


def _label_predictions(element, combiner) -> Iterable[Tuple[float, float, float]]:
    for label, prediction, weight in metric_util.to_label_prediction_example_weight(
            element, eval_config=combiner.eval_config, model_name=combiner.key.model_name,
            output_name=combiner.key.output_name, example_weighted=combiner.key.example_weighted,
            flatten=True):
        # Scalars on TFMA 0.47, one-element arrays on 0.52.
        weight = float(np.ravel(weight)[0])
        for y, p in zip(np.ravel(label), np.ravel(prediction)):
            yield float(y), float(p), weight


class _Combiner(beam.CombineFn):
    def __init__(self, key: metric_types.MetricKey, eval_config):
        self.key, self.eval_config = key, eval_config


class _Moments(_Combiner):
    """Weighted sums that RMSE and R² are made of: [n, sum y, sum y², sum (y - p)²]."""

    def create_accumulator(self) -> List[float]:
        return [0.0, 0.0, 0.0, 0.0]

    def add_input(self, acc: List[float], element) -> List[float]:
        for label, prediction, weight in _label_predictions(element, self):
            acc[0] += weight
            acc[1] += weight * label
            acc[2] += weight * label * label
            acc[3] += weight * (label - prediction) ** 2
        return acc

    def merge_accumulators(self, accumulators: Iterable[List[float]]) -> List[float]:
        out = self.create_accumulator()
        for acc in accumulators:
            out = [a + b for a, b in zip(out, acc)]
        return out


class _RmseCombiner(_Moments):
    def extract_output(self, acc: List[float]) -> Dict[metric_types.MetricKey, float]:
        n, _, _, sse = acc
        return {self.key: math.sqrt(sse / n) if n > 0 else float("nan")}


class _R2Combiner(_Moments):
    def extract_output(self, acc: List[float]) -> Dict[metric_types.MetricKey, float]:
        return {self.key: r_squared(*acc)}


def r_squared(n: float, sum_y: float, sum_y2: float, sse: float) -> float:
    """1 - SSE / SST; NaN when the labels do not vary (SST = 0) or there are none."""
    if n <= 0:
        return float("nan")
    sst = sum_y2 - sum_y * sum_y / n
    if sst <= 1e-12 * max(1.0, sum_y2):
        return float("nan")
    return 1.0 - sse / sst


def _class_predictions(element, combiner) -> Iterable[Tuple[int, int, float]]:
    """(true class, predicted class, weight) per row: sparse class-id labels (one-hot ones are
    read by their highest value) and [n_classes] probabilities, one row or a batch of them."""
    for label, prediction, weight in metric_util.to_label_prediction_example_weight(
            element, eval_config=combiner.eval_config, model_name=combiner.key.model_name,
            output_name=combiner.key.output_name, example_weighted=combiner.key.example_weighted,
            flatten=False):
        prediction = np.asarray(prediction, dtype=np.float64)
        n_classes = prediction.shape[-1] if prediction.ndim else 1
        prediction = prediction.reshape(-1, n_classes)
        rows = prediction.shape[0]
        label = np.asarray(label).reshape(-1)
        if label.size == rows * n_classes and n_classes > 1:
            label = label.reshape(rows, n_classes).argmax(axis=1)
        if label.size != rows:
            raise ValueError(f"accuracy_lift needs one class id per row: got labels of shape "
                             f"{np.shape(label)} for predictions of shape {prediction.shape}; "
                             f"the label must be the Transform's class id (a class_vocabulary label)")
        weight = np.broadcast_to(np.asarray(weight, dtype=np.float64).reshape(-1), (rows,))
        for y, p, w in zip(label, prediction.argmax(axis=1), weight):
            yield int(y), int(p), float(w)


class _AccuracyLiftCombiner(_Combiner):
    """[correct weight, {true class: weight}]: accuracy and the commonest class's share."""

    def create_accumulator(self):
        return [0.0, {}]

    def add_input(self, acc, element):
        for label, predicted, weight in _class_predictions(element, self):
            acc[0] += weight * (label == predicted)
            acc[1][label] = acc[1].get(label, 0.0) + weight
        return acc

    def merge_accumulators(self, accumulators):
        out = self.create_accumulator()
        for correct, counts in accumulators:
            out[0] += correct
            for label, weight in counts.items():
                out[1][label] = out[1].get(label, 0.0) + weight
        return out

    def extract_output(self, acc) -> Dict[metric_types.MetricKey, float]:
        return {self.key: accuracy_lift(acc[0], acc[1].values())}


def accuracy_lift(correct: float, class_weights: Iterable[float]) -> float:
    """(correct - the commonest class's weight) / all: accuracy minus the commonest class's
    share, exactly 0 for a model that always predicts it; NaN without rows."""
    class_weights = list(class_weights)
    total = sum(class_weights)
    return (correct - max(class_weights)) / total if total > 0 else float("nan")


class _SampleCombiner(_Combiner):
    """The SAMPLE_SIZE pairs with the smallest hash (a bottom-k sample: mergeable, deterministic)."""

    def create_accumulator(self) -> List[Tuple[int, float, float]]:
        return []

    def add_input(self, acc, element):
        for label, prediction, _ in _label_predictions(element, self):
            item = (-_hash(label, prediction), label, prediction)  # a max-heap on the hash
            if len(acc) < SAMPLE_SIZE:
                heapq.heappush(acc, item)
            elif item > acc[0]:
                heapq.heapreplace(acc, item)
        return acc

    def merge_accumulators(self, accumulators):
        merged: List[Tuple[int, float, float]] = []
        for acc in accumulators:
            for item in acc:
                if len(merged) < SAMPLE_SIZE:
                    heapq.heappush(merged, item)
                elif item > merged[0]:
                    heapq.heapreplace(merged, item)
        return merged

    def extract_output(self, acc) -> Dict[metric_types.MetricKey, bytes]:
        pairs = sorted((label, prediction) for _, label, prediction in acc)
        return {self.key: json.dumps({"label": [p[0] for p in pairs],
                                      "prediction": [p[1] for p in pairs]}).encode()}


def _hash(label: float, prediction: float) -> int:
    return int.from_bytes(hashlib.blake2b(struct.pack("<dd", label, prediction), digest_size=8).digest(), "big")


def _computations(combiner_class):
    def computations(name: str, eval_config=None, model_name: str = "", output_name: str = "",
                     example_weighted: bool = False, sub_key=None, **_: Any) -> metric_types.MetricComputations:
        key = metric_types.MetricKey(name=name, model_name=model_name, output_name=output_name,
                                     sub_key=sub_key, example_weighted=example_weighted)
        return [metric_types.MetricComputation(keys=[key], preprocessors=None,
                                               combiner=combiner_class(key, eval_config))]
    return computations


class AccuracyLift(metric_types.Metric):
    def __init__(self, name: str = ACCURACY_LIFT):
        super().__init__(metric_util.merge_per_key_computations(_computations(_AccuracyLiftCombiner)), name=name)


class RootMeanSquaredError(metric_types.Metric):
    def __init__(self, name: str = RMSE):
        super().__init__(metric_util.merge_per_key_computations(_computations(_RmseCombiner)), name=name)


class RSquared(metric_types.Metric):
    def __init__(self, name: str = R2):
        super().__init__(metric_util.merge_per_key_computations(_computations(_R2Combiner)), name=name)


class PredictionSample(metric_types.Metric):
    def __init__(self, name: str = PREDICTION_SAMPLE):
        super().__init__(metric_util.merge_per_key_computations(_computations(_SampleCombiner)), name=name)


def read_sample(value: Optional[bytes]) -> Dict[str, List[float]]:
    """The {label, prediction} lists of a ``prediction_sample`` value (empty when absent)."""
    if not value:
        return {"label": [], "prediction": []}
    return json.loads(value.decode() if isinstance(value, bytes) else value)
