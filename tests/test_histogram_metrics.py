"""The binary metrics read off AUC's calibration histogram (components/histogram_metrics.py):
TFMA runs one per-example combiner for all of them, and their values are TFMA's own metrics'."""
import math
import random

import numpy as np
import pytest
from tensorflow_model_analysis.metrics import metric_specs, metric_types
from tensorflow_model_analysis.proto import config_pb2

from tfxline.components import histogram_metrics
from tfxline.pipeline.config.load import load_config
from tfxline.pipeline.eval_config import build_eval_config

STOCK = ["ExampleCount", "BinaryAccuracy", "Precision", "Recall", "Calibration", "MeanLabel"]


def eval_config(class_names, module=""):
    return config_pb2.EvalConfig(
        model_specs=[config_pb2.ModelSpec(label_key="y")],
        metrics_specs=[config_pb2.MetricsSpec(metrics=[config_pb2.MetricConfig(class_name=n, module=module)
                                                       for n in ["AUC"] + class_names])])


def per_example_computations(config):
    """The computations TFMA runs per example, one per key (the evaluator drops repeats)."""
    computations = metric_specs.to_computations(list(config.metrics_specs), eval_config=config)
    unique = {}
    for c in computations:
        if not isinstance(c, metric_types.DerivedMetricComputation):
            unique.setdefault(tuple(c.keys), c)
    return computations, list(unique.values())


def evaluate(config, rows):
    """TFMA's evaluator in miniature: every per-example combiner over ``rows`` split into two
    accumulators and merged (as Beam does), then the derived computations in order."""
    computations, combined = per_example_computations(config)
    out = {}
    for c in combined:
        fn = c.combiner
        fn.setup()
        halves = []
        for part in (rows[::2], rows[1::2]):
            acc = fn.create_accumulator()
            for label, prediction in part:
                acc = fn.add_input(acc, metric_types.StandardMetricInputs(
                    labels=np.array([label]), predictions=np.array([prediction]),
                    example_weights=np.array([1.0])))
            halves.append(acc)
        out.update(fn.extract_output(fn.merge_accumulators(halves)))
    derived = {}
    for c in computations:
        if isinstance(c, metric_types.DerivedMetricComputation):
            derived.setdefault(tuple(c.keys), c)
    for c in derived.values():
        out.update(c.result(out))
    return {k.name: v for k, v in out.items() if not k.name.startswith("_")}


def test_the_taxi_binary_config_runs_one_combiner_besides_the_loss():
    cfg = load_config("taxi")
    _, combined = per_example_computations(build_eval_config(cfg.evaluation, cfg.features))
    names = sorted(type(c.combiner).__name__ for c in combined)
    assert names == ["_CalibrationHistogramCombiner", "_CompilableMetricsCombiner"], names


ROWS = {
    "random": [(float(random.Random(i).random() < 0.3), random.Random(-i).random()) for i in range(3000)],
    # next to the threshold and the histogram's edges: 0.5 +- one bucket, 0, 1, out of range
    "edges": [(y, p) for y in (0.0, 1.0) for p in (0.0, 1.0, 0.49990001, 0.4999999, 0.50000006,
                                                   0.5000999, 0.50011, 1e-9, 1 - 1e-9, -0.1, 1.2)],
    "one class": [(0.0, (p + 0.25) / 100) for p in range(100)],
    "all predicted negative": [(float(i % 2), 0.1) for i in range(50)],
}


@pytest.mark.parametrize("case", sorted(ROWS))
def test_values_equal_tfmas_own_metrics(case):
    rows = ROWS[case]
    stock = evaluate(eval_config(STOCK), rows)
    derived = evaluate(eval_config(["Histogram" + n for n in STOCK], histogram_metrics.MODULE), rows)
    assert set(derived) == set(stock)
    for name, value in stock.items():
        if math.isnan(value):
            assert math.isnan(derived[name]), name
        else:
            assert derived[name] == pytest.approx(value, rel=1e-9, abs=1e-12), name


def test_a_prediction_of_exactly_the_threshold_counts_as_positive():
    # The one documented difference: TFMA's exact matrix counts p > 0.5, the histogram p >= 0.5.
    rows = [(1.0, 0.5), (0.0, 0.2)]
    derived = evaluate(eval_config(["HistogramRecall"], histogram_metrics.MODULE), rows)
    stock = evaluate(eval_config(["Recall"]), rows)
    assert (derived["recall"], stock["recall"]) == (1.0, 0.0)
