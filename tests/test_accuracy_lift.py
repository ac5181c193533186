"""The multi-class gate's metric (components/tfma_metrics.py ``accuracy_lift``): accuracy minus the
commonest true class's share, through TFMA's own metric plumbing, against TFMA's
SparseCategoricalAccuracy on the same rows; and the gate the default config puts on it."""
import math
import random

import numpy as np
import pytest
from tensorflow_model_analysis.metrics import metric_specs, metric_types
from tensorflow_model_analysis.proto import config_pb2

from tfxline.components import gates, tfma_metrics
from tfxline.pipeline.config import EvaluationConfig
from tfxline.pipeline.eval_config import task_metrics


def eval_config(*metrics):
    return config_pb2.EvalConfig(model_specs=[config_pb2.ModelSpec(label_key="species")],
                                 metrics_specs=[config_pb2.MetricsSpec(metrics=list(metrics))])


STOCK = config_pb2.MetricConfig(class_name="SparseCategoricalAccuracy", config='{"name": "accuracy"}')
LIFT = config_pb2.MetricConfig(class_name="AccuracyLift", module=tfma_metrics.MODULE)


def evaluate(config, rows, partitions=3):
    """TFMA's evaluator in miniature: each per-example combiner over ``rows`` (sparse class id,
    [n_classes] probabilities) split into ``partitions`` accumulators and merged, as Beam does."""
    out = {}
    for c in metric_specs.to_computations(list(config.metrics_specs), eval_config=config):
        if isinstance(c, metric_types.DerivedMetricComputation):
            continue
        fn = c.combiner
        fn.setup()
        accs = []
        for part in range(partitions):
            acc = fn.create_accumulator()
            for label, probabilities in rows[part::partitions]:
                acc = fn.add_input(acc, metric_types.StandardMetricInputs(
                    labels=np.array([label]), predictions=np.array(probabilities, dtype=np.float32),
                    example_weights=np.array([1.0])))
            accs.append(acc)
        out.update(fn.extract_output(fn.merge_accumulators(accs)))
    return {k.name: v for k, v in out.items() if not k.name.startswith("_")}


def softmax_rows(n, n_classes, seed, label_weights=None):
    rng = random.Random(seed)
    rows = []
    for _ in range(n):
        label = rng.choices(range(n_classes), weights=label_weights)[0]
        logits = [rng.gauss(0, 1) + (1.5 if k == label else 0) for k in range(n_classes)]
        exp = [math.exp(x) for x in logits]
        rows.append((label, [e / sum(exp) for e in exp]))
    return rows


ROWS = {
    "random": softmax_rows(1500, 3, seed=1, label_weights=[0.44, 0.36, 0.2]),
    "many classes": softmax_rows(700, 7, seed=2),
    # every row the same class: the commonest share is 1, so the lift is accuracy - 1
    "one class": [(2, p) for _, p in softmax_rows(200, 3, seed=3)],
    # tied probabilities: the first of the highest wins, as in Keras's argmax (every tie below
    # is right that way and wrong the other way)
    "ties": [(0, [0.4, 0.4, 0.2]), (0, [1 / 3] * 3), (1, [0.2, 0.4, 0.4]), (0, [0.5, 0.0, 0.5]),
             (2, [0.1, 0.1, 0.8]), (1, [0.3, 0.6, 0.1])],
}


def majority_share(rows):
    labels = [y for y, _ in rows]
    return max(labels.count(c) for c in set(labels)) / len(labels)


@pytest.mark.parametrize("case", sorted(ROWS))
def test_lift_is_tfmas_accuracy_minus_the_commonest_class_share(case):
    rows = ROWS[case]
    values = evaluate(eval_config(STOCK, LIFT), rows)
    assert values["accuracy_lift"] == pytest.approx(values["accuracy"] - majority_share(rows), abs=1e-6)
    # split differently, the same value
    assert evaluate(eval_config(LIFT), rows, partitions=1)["accuracy_lift"] == pytest.approx(
        values["accuracy_lift"], abs=1e-12)


def test_ties_go_to_the_first_highest_class():
    rows = ROWS["ties"]
    assert sum(int(np.argmax(p)) == y for y, p in rows) == 6  # numpy's argmax: the first highest
    assert sum(len(p) - 1 - int(np.argmax(p[::-1])) == y for y, p in rows) == 2  # the last highest
    assert evaluate(eval_config(LIFT), rows)["accuracy_lift"] == pytest.approx(6 / 6 - 3 / 6, abs=1e-12)


def test_always_predicting_the_commonest_class_scores_exactly_zero_and_is_refused():
    rows = [(y, [0.1, 0.7, 0.2]) for y, _ in ROWS["random"]]  # always class 1
    counts = [sum(y == c for y, _ in rows) for c in range(3)]
    commonest = int(np.argmax(counts))
    constant = [(y, [0.9 if k == commonest else 0.05 for k in range(3)]) for y, _ in rows]
    lift = evaluate(eval_config(LIFT), constant)["accuracy_lift"]
    assert lift == 0.0
    (gate,) = [m for m in task_metrics("multiclass", EvaluationConfig()) if m.class_name == "AccuracyLift"]
    bound = gate.per_slice_thresholds[0].threshold.value_threshold.lower_bound.value
    assert not lift >= bound  # TFMA's own comparison (gates.py): refused
    assert 1 / len(rows) >= bound  # one more right row than the constant model: blessed


def test_the_lift_is_undefined_without_rows_and_weighted_by_example_weight():
    assert math.isnan(tfma_metrics.accuracy_lift(0.0, []))
    # 3 of class 0 (weight 1), 1 of class 1 (weight 5): the commonest by weight is class 1
    assert tfma_metrics.accuracy_lift(correct=5.0, class_weights=[3.0, 5.0]) == 0.0
    assert tfma_metrics.accuracy_lift(correct=8.0, class_weights=[3.0, 5.0]) == pytest.approx(3 / 8)


def test_a_batch_of_rows_and_one_hot_labels_read_the_same_as_single_rows():
    rows = ROWS["random"][:90]
    (computation,) = tfma_metrics.AccuracyLift().computations(eval_config=eval_config(LIFT))
    fn = computation.combiner
    batched = fn.add_input(fn.create_accumulator(), metric_types.StandardMetricInputs(
        labels=np.eye(3)[[y for y, _ in rows]], predictions=np.array([p for _, p in rows]),
        example_weights=np.ones(len(rows))))
    single = evaluate(eval_config(LIFT), rows, partitions=1)["accuracy_lift"]
    assert fn.extract_output(batched)[computation.keys[0]] == pytest.approx(single, abs=1e-12)


def test_labels_that_are_not_one_class_id_per_row_are_refused_naming_the_shapes():
    (computation,) = tfma_metrics.AccuracyLift().computations(eval_config=eval_config(LIFT))
    fn = computation.combiner
    with pytest.raises(ValueError, match=r"one class id per row: got labels of shape \(2,\) for predictions of "
                                         r"shape \(1, 3\)"):
        fn.add_input(fn.create_accumulator(), metric_types.StandardMetricInputs(
            labels=np.array([0, 1]), predictions=np.array([0.2, 0.5, 0.3]), example_weights=np.array([1.0])))


def test_the_exclusive_floor_is_the_next_double_above_the_number():
    assert gates.lower_bound("accuracy_lift", 0.0) > 0.0 and gates.floor("accuracy_lift", gates.lower_bound(
        "accuracy_lift", 0.0)) == 0.0
    assert gates.lower_bound("accuracy_lift", 0.05) == math.nextafter(0.05, 1)
    assert gates.lower_bound("auc", 0.55) == 0.55  # an "at least" floor is the number itself
