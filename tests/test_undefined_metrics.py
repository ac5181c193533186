"""Metrics that are undefined on the eval data are shown as undefined, with the cause, in the
summary, the report and the gate message (never 'auc 0.0000' or 'precision nan')."""
import math

from tensorflow_model_analysis.proto import config_pb2, metrics_for_slice_pb2, validation_result_pb2

from tfxline.runs.console import format_metrics
from tfxline.components.tfma_results import describe_failure, undefined_metrics

ONE_CLASS = {"auc": 0.0, "pr_auc": 0.0, "mean_label": 0.0, "precision": math.nan, "recall": math.nan,
             "binary_accuracy": 1.0, "example_count": 600.0}


def test_one_class_and_nan_metrics_are_undefined_with_their_cause():
    assert undefined_metrics(ONE_CLASS) == {
        "auc": "the eval data holds only label 0", "pr_auc": "the eval data holds only label 0",
        "precision": "the model predicted no positives", "recall": "the data holds no positive labels"}
    assert undefined_metrics({"auc": 0.93, "mean_label": 0.22, "precision": 0.7}) == {}
    assert undefined_metrics({"auc": 0.5, "mean_label": 1.0})["auc"] == "the eval data holds only label 1"


def test_the_summary_line_says_undefined_not_zero_or_nan():
    line = format_metrics(ONE_CLASS)
    assert "auc undefined (the eval data holds only label 0)" in line
    assert "precision undefined (the model predicted no positives)" in line
    assert "binary_accuracy 1.0000" in line
    assert "auc 0.0000" not in line and "nan" not in line


def test_the_gate_message_names_the_cause():
    failure = validation_result_pb2.ValidationFailure(
        metric_key=metrics_for_slice_pb2.MetricKey(name="auc"),
        metric_value=metrics_for_slice_pb2.MetricValue(double_value={"value": 0.0}),
        metric_threshold=config_pb2.MetricThreshold(
            value_threshold=config_pb2.GenericValueThreshold(lower_bound={"value": 0.75})))
    message = describe_failure(failure, "overall", undefined_metrics(ONE_CLASS))
    assert message == ("auc is undefined on the eval data: the eval data holds only label 0, "
                       "so its threshold (evaluation.min_auc) cannot pass")
    assert describe_failure(failure, "overall", {}) == (
        "auc 0.0000 is below the minimum 0.75; to bless it anyway lower evaluation.min_auc")
