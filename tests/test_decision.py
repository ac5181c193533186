"""A binary model's decision threshold (task_types/decision.py, trainer/decision.py,
components/decision_threshold.py): chosen on validation for an objective, measured by the
Evaluator at each model's own threshold, gated so a one-class model is not blessed.

ISLR's Caravan (6 % positives) was blessed and pushed with recall 0: AUC 0.715, no positive
predicted at 0.5."""
import json

import numpy as np
import pytest
from tensorflow_model_analysis.proto import validation_result_pb2

from tfxline.components import decision_threshold, gates, histogram_metrics, tfma_results
from tfxline.pipeline.config.load import config_from_dict, load_config
from tfxline.typed_config.read import ConfigError
from tfxline.pipeline.eval_config import build_eval_config
from tfxline.task_types.decision import choose_threshold, measures, parse_objective
from tests.test_histogram_metrics import evaluate


def rare_positives(n=6000, rate=0.06, seed=0):
    """Scores that rank well (AUC ~0.75) for a rare class, all of them below 0.5."""
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < rate).astype(float)
    p = 1 / (1 + np.exp(-(rng.normal(size=n) + 1.2 * y - 3.2)))
    return p, y


def test_a_rare_class_gets_a_threshold_that_predicts_it():
    p, y = rare_positives()
    at_half = measures(p, y, 0.5)
    assert at_half["recall"] < 0.05  # what 0.5 gave: nearly no positive found
    chosen = choose_threshold(p, y, "f1")
    assert chosen["recall"] >= 0.2 and 0 < chosen["predicted_positive_rate"] < 1
    assert chosen["threshold"] < 0.5 and round(chosen["threshold"] * 10_000, 6) == round(chosen["threshold"] * 10_000)
    assert chosen["f1"] == pytest.approx(max(measures(p, y, t / 100)["f1"] or 0 for t in range(1, 100)), abs=0.02)


@pytest.mark.parametrize("objective, check", [
    ("recall:0.6", lambda m: m["recall"] >= 0.6),
    ("precision:0.3", lambda m: m["precision"] >= 0.3),
    ("0.25", lambda m: m["threshold"] == 0.25),
])
def test_each_objective_holds_on_the_validation_rows(objective, check):
    p, y = rare_positives(seed=1)
    chosen = choose_threshold(p, y, objective)
    assert check(chosen), chosen
    assert chosen == dict(chosen, **measures(p, y, chosen["threshold"]))  # its figures are at its threshold


def test_one_class_validation_keeps_half():
    chosen = choose_threshold(np.array([0.2, 0.7]), np.array([0.0, 0.0]))
    assert chosen["threshold"] == 0.5 and "one class" in chosen["why"]


@pytest.mark.parametrize("bad", ["f2", "recall", "recall:0", "precision:1.5", "1.2", "0", "auc:0.5"])
def test_a_bad_objective_is_refused_in_one_line_naming_the_forms(bad):
    with pytest.raises(ValueError, match="use f1, recall:R"):
        parse_objective(bad)
    raw = {"features": load_config("taxi").features.to_dict(), "evaluation": {"threshold": bad}}
    with pytest.raises(ConfigError, match="evaluation.threshold"):
        config_from_dict(raw)


def test_the_metrics_at_a_threshold_are_measured_there():
    p, y = rare_positives(n=2000)
    rows = list(zip(y.tolist(), p.tolist()))
    cfg = load_config("taxi")
    base = build_eval_config(cfg.evaluation, cfg.features)
    for t in (0.5, 0.1234):
        config = decision_threshold.with_thresholds(base, {decision_threshold.CANDIDATE: t})
        got = evaluate(config, rows)
        want = measures(p, y, t)
        assert got["decision_threshold"] == t
        assert got["recall"] == pytest.approx(want["recall"]) and got["predicted_positive_rate"] == pytest.approx(
            want["predicted_positive_rate"])


def test_each_model_gets_its_own_threshold_and_only_the_candidate_is_gated():
    cfg = load_config("taxi")
    base = build_eval_config(cfg.evaluation, cfg.features)
    out = decision_threshold.with_thresholds(base, {"candidate": 0.2, "baseline": None})
    per_model = {tuple(s.model_names): s for s in out.metrics_specs if s.model_names}
    assert set(per_model) == {("candidate",), ("baseline",)}
    names = {m.class_name for m in per_model[("candidate",)].metrics}
    assert names == set(histogram_metrics.AT_THRESHOLD)
    for spec, want in ((per_model[("candidate",)], 0.2), (per_model[("baseline",)], 0.5)):
        assert {json.loads(m.config)["threshold"] for m in spec.metrics} == {want}
    assert any(m.per_slice_thresholds for m in per_model[("candidate",)].metrics)
    assert not any(m.per_slice_thresholds for m in per_model[("baseline",)].metrics)
    shared = [s for s in out.metrics_specs if not s.model_names]
    assert shared and not {m.class_name for s in shared for m in s.metrics} & set(histogram_metrics.AT_THRESHOLD)


def test_a_model_that_predicts_one_class_is_refused_naming_the_key():
    failure = validation_result_pb2.ValidationResult().metric_validations_per_slice.add().failures.add()
    failure.metric_key.name = "predicted_positive_rate"
    failure.metric_value.double_value.value = 0.0
    failure.metric_threshold.value_threshold.lower_bound.value = gates.lower_bound("predicted_positive_rate", 0.0)
    line = tfma_results.describe_failure(failure, "overall", {}, {"decision_threshold": 0.5})
    assert "calls no row positive at its threshold 0.5" in line and "evaluation.threshold" in line


def test_the_report_draws_the_confusion_matrix_at_the_models_threshold():
    from tfxline.runs.report.model import binary_confusion

    overall = {"example_count": 1000.0, "mean_label": 0.06, "predicted_positive_rate": 0.1, "recall": 0.5,
               "decision_threshold": 0.1379, "auc": 0.7}
    matrix = binary_confusion(overall)
    assert matrix["counts"] == [[870, 70], [30, 30]] and "threshold 0.1379" in matrix["title"]
    assert binary_confusion({"auc": 0.7})["classes"] == []  # a model from before thresholds: no matrix
