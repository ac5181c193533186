"""Each task type's contract (task_types/), without a pipeline: the registry, the label's rules,
the head, the serving output's shape, the metrics and gates, TFLite parity's numbers and the
predict columns. The TensorFlow parts (transform_label, loss_and_metrics on real Keras) run in
test_preprocessing.py, test_model.py and test_log_label.py."""
import types

import numpy as np
import pytest

from tfxline import task_types
from tfxline.components import gates, task_metrics
from tfxline.pipeline.config import EvaluationConfig
from tfxline.pipeline.data.labels import LabelError, LabelValues, infer_task
from tfxline.transforms import features as F

ALL = task_types.REGISTERED  # the contract tests: every registered task type, a new one included
# the built-in three, whose own values some tests pin
BUILT_IN = tuple(task_types.get(n) for n in ("binary", "multiclass", "regression"))


def values_of(cells, column="y"):
    values = LabelValues(column)
    for cell in cells:
        values.add(cell)
    return values


def never():
    raise AssertionError("read although the task type needs nothing")


@pytest.mark.parametrize("task", ALL, ids=lambda t: t.name)
def test_every_task_type_fills_the_interface(task):
    assert task_types.get(task.name) is task and task.name in task_types.NAMES
    assert task.label_transforms and set(task.label_fields) == set(task.label_transforms)
    assert task.column_transform in task.label_transforms
    assert all(task_types.for_label_transform(t) is task for t in task.label_transforms)
    assert task.output_key in ("probabilities", "predictions") and task.activation
    assert task.main_metric in task.headline and task.default_gate in gates.GATES
    view = task.view
    assert (view.task, view.main, view.higher_is_better, view.headline) == (
        task.name, task.main_metric, task.higher_is_better, task.headline)
    assert task_metrics.view(task.name) == view == task_metrics.VIEWS[task.name]
    assert gates.DEFAULT_GATE[task.name] == task.default_gate


def test_the_registry_is_the_old_vocabulary_in_its_order():
    assert task_types.NAMES[:3] == ("binary", "multiclass", "regression")  # a new task type goes after them
    assert (task_types.TASK_BINARY, task_types.TASK_MULTICLASS, task_types.TASK_REGRESSION) == task_types.NAMES
    assert F.LABEL_TRANSFORMS == ("ratio_threshold", "binary", "class_vocabulary", "regression")
    assert F.TASK_BINARY == "binary" and F.LABEL_VOCABULARY == "__label_vocab"


def test_an_unknown_task_or_label_transform_is_refused_by_name():
    with pytest.raises(task_types.UnknownTask, match=r"^unknown task 'ordinal'; use one of binary, multiclass, "
                                                     r"regression$"):
        task_types.get("ordinal")
    assert task_types.find("ordinal") is None and task_types.find("") is None
    with pytest.raises(task_types.UnknownTask) as refused:
        task_types.for_label_transform("ordinal")
    with pytest.raises(F.FeatureSpecError) as existing:  # the feature spec's own message, word for word
        F.FeatureSpec.from_dict({"label": {"name": "y", "transform": "ordinal"}, "inputs": [{"name": "x",
                                                                                             "transform": "zscore"}]})
    assert str(refused.value) == str(existing.value)


def test_the_label_transform_decides_the_task():
    for transform, task in [("ratio_threshold", "binary"), ("binary", "binary"), ("class_vocabulary", "multiclass"),
                            ("regression", "regression")]:
        assert F.Label("y", transform, numerator="a", denominator="b").task == task


def test_the_head_units_and_fields():
    binary, multiclass, regression = BUILT_IN
    assert [t.units(5) for t in BUILT_IN] == [1, 5, 1]
    assert binary.head_fields(never, never) == {}
    assert multiclass.head_fields(lambda: 4, never) == {"num_classes": 4}
    assert regression.head_fields(never, None) == {}
    assert regression.head_fields(never, lambda: (30.0, 0.0)) == {"label_mean": 30.0, "label_scale": 1.0}
    assert regression.head_fields(never, lambda: (30.0, 2.5)) == {"label_mean": 30.0, "label_scale": 2.5}
    assert [t.activation for t in BUILT_IN] == ["sigmoid", "softmax", "linear"]


def test_loss_and_metrics_name_the_keras_parts():
    made = lambda kind: (lambda name=None: (kind, name))  # noqa: E731
    keras = types.SimpleNamespace(
        losses=types.SimpleNamespace(**{n: made(n) for n in (
            "BinaryCrossentropy", "SparseCategoricalCrossentropy", "MeanSquaredError")}),
        metrics=types.SimpleNamespace(**{n: made(n) for n in (
            "AUC", "BinaryAccuracy", "SparseCategoricalAccuracy", "RootMeanSquaredError")}))
    assert [t.loss_and_metrics(keras) for t in BUILT_IN] == [
        (("BinaryCrossentropy", None), [("AUC", "auc"), ("BinaryAccuracy", "accuracy")]),
        (("SparseCategoricalCrossentropy", None), [("SparseCategoricalAccuracy", "accuracy")]),
        (("MeanSquaredError", None), [("RootMeanSquaredError", "rmse")])]


def test_early_stopping_watches_auc_unless_the_validation_rows_hold_one_class():
    binary, multiclass, regression = BUILT_IN
    assert binary.early_stopping(lambda: ({0.0, 1.0}, 40)) == ("val_auc", "")
    monitor, why = binary.early_stopping(lambda: ({0.0}, 40))
    assert monitor == "val_loss" and why.startswith("the 40 validation rows hold only label 0, where AUC is undefined")
    assert multiclass.early_stopping(never) == regression.early_stopping(never) == ("val_loss", "")


class Builder:
    """A stand-in for pipeline.eval_config.MetricBuilder that records what a task type asks for."""
    HIGHER, LOWER, HISTOGRAM_MODULE, METRICS_MODULE = "higher", "lower", "histogram", "ours"

    @staticmethod
    def metric(class_name, threshold=None, name="", module=""):
        return {"class": class_name, "name": name, "module": module, "threshold": threshold}

    @staticmethod
    def threshold(**bounds):
        bounds = {k: v for k, v in bounds.items() if v is not None and k != "direction"}
        return bounds or None

    optional = staticmethod(lambda v: v or None)
    lower_bound = staticmethod(lambda metric, v: ("above", metric, v))


def test_each_task_gates_its_default_metric_with_no_number_set():
    gated = {t.name: [m for m in t.tfma_metrics(EvaluationConfig(), Builder) if m["threshold"]] for t in ALL}
    assert {m["class"] for m in gated["binary"]} == {"AUC", "HistogramPredictedPositiveRate"}  # ranks; predicts both classes
    assert {m["class"] for m in gated["multiclass"]} == {"SparseCategoricalAccuracy", "AccuracyLift"}
    assert [m["threshold"] for m in gated["multiclass"] if m["class"] == "AccuracyLift"] == [
        {"lower": ("above", "accuracy_lift", 0.0)}]
    assert [m["threshold"] for m in gated["regression"] if m["class"] == "RSquared"] == [
        {"lower": ("above", "r2", 0.0)}]


def test_the_main_metric_and_the_output_difference_tflite_parity_reads():
    binary, multiclass, regression = BUILT_IN
    assert binary.main_metric_value(np.array([0.1, 0.9, 0.2]), np.array([0, 1, 0])) == 1.0
    assert np.isnan(binary.main_metric_value(np.array([0.1, 0.9]), np.array([1, 1])))
    probabilities = np.array([[0.7, 0.3], [0.2, 0.8], [0.6, 0.4]])
    assert multiclass.main_metric_value(probabilities, np.array([0, 1, 1])) == pytest.approx(2 / 3)
    assert regression.main_metric_value(np.array([1.0, 3.0]), np.array([1.0, 1.0])) == pytest.approx(np.sqrt(2))
    saved = np.array([0.0, 2.0, 4.0])
    assert binary.output_difference(saved, saved + 0.5).tolist() == [0.5] * 3 and binary.difference_unit == ""
    assert regression.output_difference(saved, saved + 0.5) == pytest.approx([0.5 / np.std(saved)] * 3)
    assert regression.difference_unit == " prediction standard deviations"


def test_predict_columns_and_their_line():
    binary, multiclass, regression = BUILT_IN
    rows = binary.prediction_columns(np.array([0.25, 0.75], np.float32))
    assert rows == [{"probability": 0.25}, {"probability": 0.75}]
    assert binary.describe_predictions(rows) == "mean probability 0.5000, 50.0% above 0.5"
    rows = multiclass.prediction_columns(np.array([[0.1, 0.9], [0.8, 0.2]]), ["cat", "dog"])
    assert rows[0] == {"predicted_class": "dog", "probability": 0.9, "probabilities": {"cat": 0.1, "dog": 0.9}}
    assert multiclass.describe_predictions(rows) == "predicted classes: dog 1, cat 1"
    rows = regression.prediction_columns(np.array([23890.5, 1.5]))
    assert regression.describe_predictions(rows) == "predictions mean 11,946, min 1.5, max 23,890"


def test_which_task_a_labels_values_suggest_in_registry_order():
    assert infer_task(values_of(["yes", "no"] * 10)) == ("binary", "two values, 'yes', 'no'")
    assert infer_task(values_of(["a", "b", "c"] * 10))[0] == "multiclass"
    assert infer_task(values_of(["1", "2", "3"] * 10))[0] == "multiclass"
    assert infer_task(values_of([str(i / 7) for i in range(30)]))[0] == "regression"
    assert [t.suggested_by(values_of(["1.5", "2.5", "3.5"])) is not None for t in BUILT_IN] == [False, False, True]


def test_the_label_checks_each_task_makes():
    binary, multiclass, regression = BUILT_IN
    where = "label column 'y'"
    with pytest.raises(LabelError, match="is a binary label but holds 3 values"):
        binary.check_label(F.Label("y", "binary"), values_of(["0", "1", "2"] * 10), where)
    binary.check_label(F.Label("y", "ratio_threshold", numerator="a", denominator="b"), values_of(["5"]), where)
    with pytest.raises(LabelError, match="holds one class"):
        multiclass.check_label(F.Label("y", "class_vocabulary"), values_of(["a"] * 20), where)
    with pytest.raises(LabelError, match="is a regression label but holds text, 'n/a'"):
        regression.check_label(F.Label("y", "regression"), values_of(["1.5", "n/a"]), where)
    regression.check_label(F.Label("y", "regression"), values_of(["1.5", "2"]), where)


def test_what_tfxline_init_asks_of_a_task_type():
    binary, multiclass, regression = BUILT_IN
    assert binary.flag_problem("y", values_of(["a", "b", "c"])) == (
        "column 'y' holds 3 values ('a', 'b', 'c'), a binary label two")
    assert multiclass.flag_problem("y", values_of(["1.5", "2"])) == "column 'y' holds fractional numbers ('1.5', '2')"
    assert regression.flag_problem("y", values_of(["x"])) == "column 'y' holds text ('x')"
    assert all(t.flag_problem("y", values_of(["1", "0"])) is None for t in ALL)
    assert binary.label_as_numbers(["yes", "no", "yes"], "yes") == [1.0, 0.0, 1.0]
    assert binary.label_as_numbers(["1.0", "0"]) == [1.0, 0.0]
    assert multiclass.label_as_numbers(["a"]) is None and regression.label_as_numbers(["2.5"]) == [2.5]
    assert [(t.positive_label, t.log_label, t.predicts_classes) for t in BUILT_IN] == [
        (True, False, True), (False, False, True), (False, True, False)]


def test_a_new_task_type_inherits_the_defaults():
    class Ordinal(task_types.TaskType):
        name, main_metric, headline = "ordinal", "mae", ("mae",)

    task = Ordinal()
    assert task.units(4) == 1 and task.head_fields(never, never) == {}
    assert task.early_stopping(never) == ("val_loss", "")
    assert task.suggested_by(values_of(["1", "2"])) is None and task.view.main == "mae"
    with pytest.raises(NotImplementedError):
        task.tfma_metrics(EvaluationConfig(), Builder)
