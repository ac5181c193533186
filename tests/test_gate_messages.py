"""Every not-blessed run says why in one line: the metric, its value, the limit and, for a change
threshold, the serving model's value (components/tfma_results.py), for each task's gates as
pipeline/eval_config.py builds them."""
from tensorflow_model_analysis.proto import config_pb2, metrics_for_slice_pb2, validation_result_pb2

from components.tfma_results import describe_failure, not_blessed_reasons
from pipeline.config import EvaluationConfig
from pipeline.eval_config import TASK_GATES

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


def test_multiclass_accuracy_below_the_serving_model_names_both_values_and_the_allowance():
    t = gate("multiclass", "accuracy", min_accuracy=0.1)
    assert t.value_threshold.lower_bound.value == 0.1 and t.change_threshold.direction == HIGHER
    assert describe_failure(failure("accuracy", -0.6, t, diff=True), "overall", {}, {"accuracy": 0.356}) == (
        "accuracy 0.3560 is 0.6000 below the serving model's 0.9560 (allowed drop 0.01)")


def test_multiclass_without_a_floor_still_has_a_change_threshold():
    t = gate("multiclass", "accuracy")
    assert not t.value_threshold.HasField("lower_bound")
    assert t.change_threshold.absolute.value == -0.01


def test_regression_gates_need_no_domain_number_by_default():
    r2 = gate("regression", "RSquared")
    assert r2.value_threshold.lower_bound.value == 0.0
    assert describe_failure(failure("r2", -2.5, r2), "overall", {}) == (
        "r2 -2.5000 is below the minimum 0 (no better than always predicting the mean)")
    rmse = gate("regression", "RootMeanSquaredError")
    assert not rmse.value_threshold.HasField("upper_bound")  # no ceiling unless max_rmse is set
    assert rmse.change_threshold.direction == LOWER and rmse.change_threshold.relative.value == 0.1
    assert describe_failure(failure("rmse", 0.07, rmse, diff=True), "overall", {}, {"rmse": 0.152}) == (
        "rmse 0.1520 is 85.4% above the serving model's 0.0820 (allowed increase 10%)")
    with_ceilings = gate("regression", "mae", max_mae=30.0)
    assert describe_failure(failure("mae", 41.5, with_ceilings), "overall", {}) == "mae 41.5000 is above the maximum 30"
    assert gate("regression", "RootMeanSquaredError", max_rmse=50.0).value_threshold.upper_bound.value == 50.0


def test_binary_gate_is_unchanged_and_worded():
    auc = gate("binary", "AUC")
    assert auc.value_threshold.lower_bound.value == 0.75 and auc.change_threshold.absolute.value == -0.01
    assert describe_failure(failure("auc", -0.2, auc, diff=True), "overall", {}, {"auc": 0.71}) == (
        "auc 0.7100 is 0.2000 below the serving model's 0.9100 (allowed drop 0.01)")
    assert describe_failure(failure("auc", 0.6, auc), "payment_type=Cash", {}) == (
        "auc 0.6000 is below the minimum 0.75 on payment_type=Cash")


def test_a_refusal_without_a_failed_threshold_still_says_why():
    no_thresholds = validation_result_pb2.ValidationResult(validation_ok=False, missing_thresholds=True)
    assert not_blessed_reasons(no_thresholds, {}, {}) == [
        "the evaluation config gates no metric (TFMA blesses nothing without a threshold); "
        "set the task's thresholds in the evaluation section"]
    missing = validation_result_pb2.ValidationResult(validation_ok=False, missing_slices=[
        config_pb2.SlicingSpec(feature_keys=["payment_type"])])
    assert not_blessed_reasons(missing, {}, {}) == ["no eval rows in the gated slice(s) payment_type"]
    assert not_blessed_reasons(validation_result_pb2.ValidationResult(validation_ok=True), {}, {}) == []
