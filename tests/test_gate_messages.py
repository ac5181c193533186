"""Every not-blessed run says why in one line: the metric, its value, the limit, for a change
threshold the serving model's value, and the config key that would let it through
(components/tfma_results.py, components/gates.py), for each task's gates as
pipeline/eval_config.py builds them; and every task is gated by default."""
import dataclasses
import importlib
import json
import math

import pytest
import tensorflow_model_analysis.metrics as tfma_metric_classes
from tensorflow_model_analysis.proto import config_pb2, metrics_for_slice_pb2, validation_result_pb2

from tfxline.components import gates
from tfxline.components.gates import LOOK_AT
from tfxline.components.tfma_results import describe_failure, not_blessed_reasons
from tfxline.pipeline.config import EvaluationConfig
from tfxline.pipeline.eval_config import TASK_GATES

LOWER, HIGHER = config_pb2.MetricDirection.LOWER_IS_BETTER, config_pb2.MetricDirection.HIGHER_IS_BETTER


def gate(task, metric_name, **evaluation):
    """The overall-slice threshold the task's EvalConfig sets on ``metric_name``."""
    for metric in TASK_GATES[task](EvaluationConfig(**evaluation)):
        name = metric.config and metric.config.split('"')[3]
        if metric_name in (name, metric.class_name) and metric.per_slice_thresholds:
            return metric.per_slice_thresholds[0].threshold
    raise KeyError(metric_name)


def failure(name, value, threshold, diff=False):
    return validation_result_pb2.ValidationFailure(
        metric_key=metrics_for_slice_pb2.MetricKey(name=name, is_diff=diff),
        metric_value=metrics_for_slice_pb2.MetricValue(double_value={"value": value}),
        metric_threshold=threshold)


def metric_name(metric):
    """The name TFMA gives a MetricConfig's metric: its config's, else its class's default."""
    if metric.config:
        return json.loads(metric.config)["name"]
    module = importlib.import_module(metric.module) if metric.module else tfma_metric_classes
    return getattr(module, metric.class_name)().name


def thresholds(task, evaluation):
    return {metric_name(m): m.per_slice_thresholds[0].threshold
            for m in TASK_GATES[task](evaluation) if m.per_slice_thresholds}


def test_multiclass_accuracy_below_the_serving_model_names_both_values_the_allowance_and_the_key():
    t = gate("multiclass", "accuracy", min_accuracy=0.1)
    assert t.value_threshold.lower_bound.value == 0.1 and t.change_threshold.direction == HIGHER
    assert describe_failure(failure("accuracy", -0.6, t, diff=True), "overall", {}, {"accuracy": 0.356}) == (
        "accuracy 0.3560 is 0.6000 below the serving model's 0.9560 (allowed drop 0.01); "
        "to bless it anyway raise evaluation.max_accuracy_drop")
    assert describe_failure(failure("accuracy", 0.05, t), "overall", {}) == (
        "accuracy 0.0500 is below the minimum 0.1; to bless it anyway lower evaluation.min_accuracy")


def test_multiclass_is_gated_on_beating_the_commonest_class_by_default():
    t = gate("multiclass", "AccuracyLift")
    assert t.value_threshold.lower_bound.value == math.nextafter(0.0, 1.0)  # strictly above 0
    assert describe_failure(failure("accuracy_lift", 0.0, t), "overall", {}) == (
        "accuracy_lift 0.0000 is not above 0 (no better than always predicting the commonest class); "
        f"{LOOK_AT}; to bless it anyway lower evaluation.min_accuracy_lift")
    assert describe_failure(failure("accuracy_lift", 0.02, gate("multiclass", "AccuracyLift", min_accuracy_lift=0.05)),
                            "overall", {}) == (
        "accuracy_lift 0.0200 is not above 0.05; to bless it anyway lower evaluation.min_accuracy_lift")
    # Without a floor on accuracy the change threshold is still there (skipped while nothing serves).
    accuracy = gate("multiclass", "accuracy")
    assert not accuracy.value_threshold.HasField("lower_bound") and accuracy.change_threshold.absolute.value == -0.01


def test_regression_gates_need_no_domain_number_by_default():
    r2 = gate("regression", "RSquared")
    assert r2.value_threshold.lower_bound.value == math.nextafter(0.0, 1.0)  # strictly above 0
    assert describe_failure(failure("r2", -2.5, r2), "overall", {}) == (
        "r2 -2.5000 is not above 0 (no better than always predicting the mean); to bless it anyway lower evaluation.min_r2")
    assert describe_failure(failure("r2", 0.0, r2), "overall", {}).startswith("r2 0.0000 is not above 0 ")
    rmse = gate("regression", "RootMeanSquaredError")
    assert not rmse.value_threshold.HasField("upper_bound")  # no ceiling unless max_rmse is set
    assert rmse.change_threshold.direction == LOWER and rmse.change_threshold.relative.value == 0.1
    assert describe_failure(failure("rmse", 0.07, rmse, diff=True), "overall", {}, {"rmse": 0.152}) == (
        "rmse 0.1520 is 85.4% above the serving model's 0.0820 (allowed increase 10%); "
        "to bless it anyway raise evaluation.max_error_increase")
    with_ceilings = gate("regression", "mae", max_mae=30.0)
    assert describe_failure(failure("mae", 41.5, with_ceilings), "overall", {}) == (
        "mae 41.5000 is above the maximum 30; to bless it anyway raise evaluation.max_mae")
    assert gate("regression", "RootMeanSquaredError", max_rmse=50.0).value_threshold.upper_bound.value == 50.0


def test_binary_gate_asks_for_better_than_chance_by_default_and_is_worded():
    auc = gate("binary", "AUC")
    assert auc.value_threshold.lower_bound.value == 0.55 and auc.change_threshold.absolute.value == -0.01
    assert describe_failure(failure("auc", -0.2, auc, diff=True), "overall", {}, {"auc": 0.71}) == (
        "auc 0.7100 is 0.2000 below the serving model's 0.9100 (allowed drop 0.01); "
        "to bless it anyway raise evaluation.max_auc_drop")
    assert describe_failure(failure("auc", 0.5, auc), "payment_type=Cash", {}) == (
        "auc 0.5000 is below the minimum 0.55 on payment_type=Cash; to bless it anyway lower evaluation.min_auc")
    # a coin flip overall (a review table's text read as a vocabulary: holdout AUC 0.503): the line
    # says where to look before how to let it through
    assert describe_failure(failure("auc", 0.503, auc), "overall", {}) == (
        f"auc 0.5030 is below the minimum 0.55; {LOOK_AT}; to bless it anyway lower evaluation.min_auc")
    assert LOOK_AT.startswith("it learnt next to nothing from its inputs: look at the report's training curves")
    assert describe_failure(failure("auc", 0.54, gate("binary", "AUC", min_auc=0.6)), "overall", {}).count(LOOK_AT) == 1
    assert LOOK_AT not in describe_failure(failure("auc", 0.7, gate("binary", "AUC", min_auc=0.8)), "overall", {})


@pytest.mark.parametrize("task", sorted(TASK_GATES))
def test_every_task_gates_its_first_model_by_default(task):
    """With no number set and nothing serving (change thresholds skipped), a value threshold
    remains: TFMA has something to bless on, and a model no better than the trivial one fails it."""
    value_gated = {name for name, t in thresholds(task, EvaluationConfig()).items() if t.HasField("value_threshold")}
    assert gates.DEFAULT_GATE[task] in value_gated


@pytest.mark.parametrize("task", sorted(TASK_GATES))
def test_every_gate_names_the_key_that_moves_it(task):
    """components/gates.py's keys are the ones pipeline/eval_config.py builds each threshold from:
    changing the named key moves that threshold, and an exclusive floor is one double above it."""
    every_gate_on = EvaluationConfig(min_accuracy=0.3, max_rmse=10.0, max_mae=10.0)  # the 0-is-off ones set
    gated = thresholds(task, every_gate_on)
    # binary: auc, binary_accuracy and predicted_positive_rate (both classes predicted; no key moves it)
    assert len(gated) == {"binary": 3, "multiclass": 2, "regression": 3}[task], sorted(gated)
    for name in gated:
        gate_of = gates.GATES[name]
        for key, kind in ((gate_of.value_key, "value"), (gate_of.change_key, "change")):
            if not key:
                continue
            field = key.split(".", 1)[1]
            moved = thresholds(task, dataclasses.replace(every_gate_on, **{field: 0.123}))[name]
            if kind == "change":
                change = moved.change_threshold
                assert 0.123 in (abs(change.absolute.value), change.relative.value), (name, key)
            elif moved.value_threshold.HasField("upper_bound"):
                assert moved.value_threshold.upper_bound.value == 0.123, (name, key)
            else:
                bound = moved.value_threshold.lower_bound.value
                assert bound == (math.nextafter(0.123, 1) if gate_of.exclusive else 0.123), (name, key)
                assert gates.floor(name, bound) == 0.123
            assert f"evaluation.{field}" in describe_failure(
                failure(name, -9.0 if kind == "value" and not moved.value_threshold.HasField("upper_bound") else 9e9,
                        moved, diff=kind == "change"), "overall", {}, {name: 1.0}), (name, key)


def test_the_report_states_each_rule_as_the_config_reads():
    assert gates.value_rule("r2", gate("regression", "RSquared").value_threshold) == "> 0"
    assert gates.value_rule("accuracy_lift", gate("multiclass", "AccuracyLift").value_threshold) == "> 0"
    assert gates.value_rule("auc", gate("binary", "AUC").value_threshold) == ">= 0.55"
    assert gates.value_rule("mae", gate("regression", "mae", max_mae=30.0).value_threshold) == "<= 30"
    # a bound one float step off a number is a strict one (the report showed '>= 4.94066e-324 and <= 1')
    assert gates.value_rule("HistogramPredictedPositiveRate", gate("binary", "HistogramPredictedPositiveRate")
                            .value_threshold) == "> 0 and < 1"


def test_a_refusal_without_a_failed_threshold_still_says_why_and_names_the_key():
    no_thresholds = validation_result_pb2.ValidationResult(validation_ok=False, missing_thresholds=True)
    assert not_blessed_reasons(no_thresholds, {"accuracy": 0.9, "recall[0]": 1.0}, {}) == [
        "the evaluation config gates no metric (TFMA blesses nothing without a threshold); "
        "set evaluation.min_accuracy_lift"]
    assert not_blessed_reasons(no_thresholds, {"rmse": 3.0}, {})[0].endswith("; set evaluation.min_r2")
    assert not_blessed_reasons(no_thresholds, {"auc": 0.6}, {})[0].endswith("; set evaluation.min_auc")
    assert not_blessed_reasons(no_thresholds, {}, {}) == [
        "the evaluation config gates no metric (TFMA blesses nothing without a threshold); "
        "set evaluation.min_auc (binary), evaluation.min_accuracy_lift (multiclass) "
        "or evaluation.min_r2 (regression)"]
    missing = validation_result_pb2.ValidationResult(validation_ok=False, missing_slices=[
        config_pb2.SlicingSpec(feature_keys=["payment_type"])])
    assert not_blessed_reasons(missing, {}, {}) == ["no eval rows in the gated slice(s) payment_type"]
    assert not_blessed_reasons(validation_result_pb2.ValidationResult(validation_ok=True), {}, {}) == []
