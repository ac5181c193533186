"""The regression metrics TFMA lacks (components/tfma_metrics.py), through TFMA's own metric
plumbing: R² against its definition, RMSE, and a sample that does not depend on how Beam splits
the rows."""
import math
import random

import numpy as np
import pytest
from tensorflow_model_analysis.metrics import metric_types

from tfxline.components import tfma_metrics


def combiner(metric):
    (computation,) = metric.computations(eval_config=None)
    return computation.combiner


def inputs(label, prediction):
    return metric_types.StandardMetricInputs(labels=np.array([label]), predictions=np.array([prediction]),
                                             example_weights=np.array([1.0]))


def run(metric, rows, partitions=1):
    c = combiner(metric)
    accs = []
    for part in range(partitions):
        acc = c.create_accumulator()
        for label, prediction in rows[part::partitions]:
            acc = c.add_input(acc, inputs(label, prediction))
        accs.append(acc)
    return next(iter(c.extract_output(c.merge_accumulators(accs)).values()))


ROWS = [(float(y), float(y) + random.Random(i).gauss(0, 0.5)) for i, y in enumerate(np.linspace(0, 10, 200))]


def test_r2_is_one_minus_sse_over_sst_and_zero_for_the_mean():
    labels = np.array([r[0] for r in ROWS])
    predictions = np.array([r[1] for r in ROWS])
    expected = 1 - np.sum((labels - predictions) ** 2) / np.sum((labels - labels.mean()) ** 2)
    assert run(tfma_metrics.RSquared(), ROWS, partitions=3) == pytest.approx(expected, rel=1e-9)
    assert run(tfma_metrics.RSquared(), [(y, labels.mean()) for y, _ in ROWS]) == pytest.approx(0.0, abs=1e-9)
    assert run(tfma_metrics.RSquared(), [(y, -y) for y, _ in ROWS]) < 0  # worse than the mean
    assert math.isnan(run(tfma_metrics.RSquared(), [(1.0, 2.0), (1.0, 0.0)]))  # labels that do not vary


def test_rmse():
    labels = np.array([r[0] for r in ROWS])
    predictions = np.array([r[1] for r in ROWS])
    assert run(tfma_metrics.RootMeanSquaredError(), ROWS, partitions=4) == pytest.approx(
        np.sqrt(np.mean((labels - predictions) ** 2)), rel=1e-9)


def test_the_sample_is_bounded_and_the_same_however_the_rows_are_split(monkeypatch):
    monkeypatch.setattr(tfma_metrics, "SAMPLE_SIZE", 50)
    whole = tfma_metrics.read_sample(run(tfma_metrics.PredictionSample(), ROWS))
    split = tfma_metrics.read_sample(run(tfma_metrics.PredictionSample(), ROWS, partitions=7))
    assert whole == split and len(whole["label"]) == 50
    assert set(zip(whole["label"], whole["prediction"])) <= set(ROWS)
    small = tfma_metrics.read_sample(run(tfma_metrics.PredictionSample(), ROWS[:10]))
    assert sorted(zip(small["label"], small["prediction"])) == sorted(ROWS[:10])
