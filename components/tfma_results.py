"""What a TFMA output directory (a ModelEvaluation artifact) says: the metrics of every slice,
the thresholds that failed, described in words, and the metrics that are undefined on the data.

Read by the run summary, the report and the console, and by the SafePusher, which records the
pushed model's metrics beside it; so it lives with the components, below the orchestrator."""
from __future__ import annotations

import math
import os
from typing import Any, Dict, List, Optional, Sequence, Tuple

from tfxline.components import gates


def read_evaluation(uri: str, model_dir: str = ""):
    """(overall metrics, {slice: metrics}, why the model was not blessed, in words) of a TFMA
    output dir; the last is empty when it validated. Multi-class: the overall metrics include
    each class's recall, named by the label vocabulary in ``model_dir`` (the evaluated
    SavedModel's assets) when given, else by class index."""
    import tensorflow_model_analysis as tfma

    slices = load_slice_metrics(uri)
    overall = slices.pop("overall", {})
    overall.update(class_recall(confusion_matrix(uri), label_classes(model_dir)))
    return overall, slices, not_blessed_reasons(tfma.load_validation_result(uri), overall, slices)


def confusion_matrix(uri: str) -> Dict[Tuple[int, int], float]:
    """{(actual class, predicted class): examples} of the overall slice, from TFMA's
    MultiClassConfusionMatrixPlot (multi-class runs); {} when the evaluation has none."""
    import tensorflow_model_analysis as tfma

    for plots in tfma.load_plots(uri):
        if slice_name(plots.slice_key) != "overall":
            continue
        for kv in plots.plot_keys_and_values:
            if kv.key.model_name not in ("", "candidate"):
                continue
            matrices = kv.value.multi_class_confusion_matrix_at_thresholds.matrices
            if matrices:
                return {(e.actual_class_id, e.predicted_class_id): e.num_weighted_examples
                        for e in matrices[0].entries}
    return {}


def prediction_sample(uri: str) -> Dict[str, List[float]]:
    """{'label': [...], 'prediction': [...]}: the regression metric ``prediction_sample`` of the
    overall slice (components/tfma_metrics.py); empty lists when the evaluation has none."""
    import tensorflow_model_analysis as tfma

    from tfxline.components.tfma_metrics import PREDICTION_SAMPLE, read_sample

    for per_slice in tfma.load_metrics(uri):
        if slice_name(per_slice.slice_key) != "overall":
            continue
        for kv in per_slice.metric_keys_and_values:
            if kv.key.name == PREDICTION_SAMPLE and kv.key.model_name in ("", "candidate") and not kv.key.is_diff:
                return read_sample(kv.value.bytes_value)
    return read_sample(None)


def class_recall(matrix: Dict[Tuple[int, int], float], classes: Sequence[str] = ()) -> Dict[str, float]:
    """{'recall[<class>]': recall} per actual class of a confusion matrix, in class order."""
    from tfxline.components.task_metrics import CLASS_RECALL

    actual = sorted({a for a, _ in matrix})
    out = {}
    for a in actual:
        total = sum(n for (x, _), n in matrix.items() if x == a)
        name = classes[a] if 0 <= a < len(classes) else str(a)
        out[CLASS_RECALL.format(name)] = matrix.get((a, a), 0.0) / total if total else float("nan")
    return out


def label_classes(model_dir: str) -> List[str]:
    """The class names of a multi-class SavedModel, in class-index order: its copy of the
    Transform's label vocabulary (assets/); [] when it has none."""
    from tfx.dsl.io import fileio

    from tfxline.transforms.features import LABEL_VOCABULARY

    path = os.path.join(model_dir, "assets", LABEL_VOCABULARY) if model_dir else ""
    if not path or not fileio.exists(path):
        return []
    with fileio.open(path) as f:
        return f.read().splitlines()


def not_blessed_reasons(validation, overall: Dict[str, Any], slices: Dict[str, Dict[str, Any]]) -> List[str]:
    """Each failed gate in one line ('accuracy 0.3560 is 0.6000 below the serving model's 0.9560
    (allowed drop 0.01); to bless it anyway raise evaluation.max_accuracy_drop'); when TFMA
    refused without a failed threshold, what it said instead."""
    if validation.validation_ok:
        return []
    failed = []
    for per_slice in validation.metric_validations_per_slice:
        where = slice_name(per_slice.slice_key)
        metrics = overall if where == "overall" else slices.get(where, {})
        undefined = undefined_metrics(metrics)
        failed += [describe_failure(failure, where, undefined, metrics) for failure in per_slice.failures]
    if validation.missing_slices:
        failed.append("no eval rows in the gated slice(s) " + ", ".join(
            slice_spec_name(s) for s in validation.missing_slices))
    if not failed and validation.missing_thresholds:
        failed.append("the evaluation config gates no metric (TFMA blesses nothing without a threshold); "
                      f"set {gates.default_gate_keys(_task_of(overall))}")
    return failed or ["TFMA did not validate the model and named no failed threshold"]


def _task_of(metrics: Dict[str, Any]) -> Optional[str]:
    """The task whose main metric the metrics hold; None when they hold none."""
    from tfxline.components.task_metrics import VIEWS

    return next((task for task, v in VIEWS.items() if v.main in metrics), None)


# Metrics that are a ratio over one class or over positive predictions: undefined (TFMA reports
# 0 or NaN) when the data has no such examples.
ONE_CLASS_METRICS = ("auc", "pr_auc")
NAN_CAUSES = {"precision": "the model predicted no positives",
              "recall": "the data holds no positive labels"}


def undefined_metrics(metrics: Dict[str, Any]) -> Dict[str, str]:
    """{metric: cause} for the metrics of one slice that are undefined on its data, e.g.
    {'auc': 'the eval data holds only label 0'} (AUC needs both classes)."""
    causes: Dict[str, str] = {}
    if "mean_label" in metrics and not both_classes(metrics):
        label = int(round(metrics["mean_label"] or 0.0))
        causes.update({m: f"the eval data holds only label {label}" for m in ONE_CLASS_METRICS if m in metrics})
    for name, value in metrics.items():
        if isinstance(value, float) and math.isnan(value):
            causes.setdefault(name, NAN_CAUSES.get(name, "not computable on this data"))
    return causes


def describe_failure(failure, where: str, undefined: Optional[Dict[str, str]] = None,
                     metrics: Optional[Dict[str, Any]] = None) -> str:
    """One failed threshold in words, with the value, the limit, for a change threshold the
    serving model's value, and the config key that would let the model through
    (components/gates.py):
      'auc 0.5120 is below the minimum 0.55; to bless it anyway lower evaluation.min_auc'
      'accuracy_lift -0.0200 is not above 0 (no better than always predicting the commonest
       class); to bless it anyway lower evaluation.min_accuracy_lift'
      'accuracy 0.3560 is 0.6000 below the serving model's 0.9560 (allowed drop 0.01); to bless
       it anyway raise evaluation.max_accuracy_drop'
      'rmse 0.1520 is 85.4% above the serving model's 0.0820 (allowed increase 10%); to bless it
       anyway raise evaluation.max_error_increase'
    A metric undefined on the slice's data is named as such, with the cause and the key of its
    gate. Gates judge the overall slice; another slice is named before the key."""
    name = failure.metric_key.name
    suffix = "" if where == "overall" else f" on {where}"
    t = failure.metric_threshold
    kind = "change" if failure.metric_key.is_diff else "floor"
    if undefined and name in undefined:
        gate = gates.GATES.get(name)
        key = gate and (gate.change_key if kind == "change" else gate.value_key)
        return (f"{name} is undefined{suffix or ' on the eval data'}: {undefined[name]}, so its threshold"
                f"{f' ({key})' if key else ''} cannot pass")
    value = failure.metric_value.double_value.value if failure.metric_value.HasField("double_value") else None
    if value is None:
        return f"{name} failed{suffix}: {failure.message.strip() or 'no value'}"
    if name == "predicted_positive_rate" and kind != "change":
        return gates.one_class(value, (metrics or {}).get("decision_threshold")) + suffix
    if kind == "change":
        return _describe_change(name, value, t.change_threshold, (metrics or {}).get(name)) + suffix + gates.remedy(
            name, "change")
    bounds = t.value_threshold
    if bounds.HasField("lower_bound") and value < bounds.lower_bound.value:
        limit = gates.floor(name, bounds.lower_bound.value)
        gate = gates.GATES.get(name, gates.Gate())
        why = f" ({gate.trivial})" if gate.trivial and limit == 0 else ""
        below = f"is not above {limit:g}" if gate.exclusive else f"is below the minimum {limit:g}"
        look = f"; {gates.LOOK_AT}" if where == "overall" and gates.learnt_nothing(name, value) else ""
        return f"{name} {value:.4f} {below}{why}{suffix}{look}{gates.remedy(name, 'floor')}"
    if bounds.HasField("upper_bound") and value > bounds.upper_bound.value:
        return (f"{name} {value:.4f} is above the maximum {bounds.upper_bound.value:g}{suffix}"
                f"{gates.remedy(name, 'ceiling')}")
    return f"{name} {value:.4f} failed{suffix}: {failure.message.strip() or 'outside its threshold'}"


def _describe_change(name: str, diff: float, change, candidate: Optional[float]) -> str:
    """A failed change threshold: TFMA's failure holds the difference (candidate - baseline)."""
    from tensorflow_model_analysis.proto import config_pb2

    lower_is_better = change.direction == config_pb2.MetricDirection.LOWER_IS_BETTER
    worse = "above" if lower_is_better else "below"
    if candidate is None:
        return f"{name} changed by {diff:+.4f} vs the serving model's"
    baseline = candidate - diff
    if change.HasField("relative") and baseline and abs(diff / baseline) > abs(change.relative.value):
        allowed = f"allowed {'increase' if lower_is_better else 'drop'} {abs(change.relative.value):.0%}"
        return (f"{name} {candidate:.4f} is {abs(diff / baseline):.1%} {worse} the serving model's "
                f"{baseline:.4f} ({allowed})")
    allowed = f"allowed {'increase' if lower_is_better else 'drop'} {abs(change.absolute.value):g}"
    return f"{name} {candidate:.4f} is {abs(diff):.4f} {worse} the serving model's {baseline:.4f} ({allowed})"


def both_classes(metrics: Dict[str, Any]) -> bool:
    """Whether a slice's labels have both classes (AUC is undefined otherwise; TFMA reports
    0 there). Needs the MeanLabel metric, which the binary EvalConfig always computes."""
    mean_label = metrics.get("mean_label", 0.5)
    return mean_label is not None and 0.0 < mean_label < 1.0


def slice_spec_name(spec) -> str:
    """A SlicingSpec in words: 'overall', 'payment_type', 'payment_type=Cash'."""
    parts = list(spec.feature_keys) + [f"{k}={v}" for k, v in spec.feature_values.items()]
    return ", ".join(parts) or "overall"


def slice_name(slice_key) -> str:
    parts = [f"{c.column}={_single_value(c)}" for c in slice_key.single_slice_keys]
    return ", ".join(parts) or "overall"


def _single_value(c) -> str:
    which = c.WhichOneof("kind")
    value = getattr(c, which) if which else ""
    return value.decode() if isinstance(value, bytes) else str(value)


def load_slice_metrics(evaluation_uri: str) -> Dict[str, Dict[str, float]]:
    """{'overall' | 'feature=value': {metric: value}} from a ModelEvaluation artifact."""
    import logging

    import tensorflow_model_analysis as tfma

    # an evaluation with a baseline has plots of 'candidate' and 'baseline', and TFMA's loader
    # warns once per slice that it finds none for the unnamed model (it reads no plots here)
    absl = logging.getLogger("absl")
    level = absl.level
    absl.setLevel(logging.ERROR)
    try:
        return _slice_metrics(tfma.load_eval_result(evaluation_uri))
    finally:
        absl.setLevel(level)


def _slice_metrics(eval_result) -> Dict[str, Dict[str, float]]:
    out: Dict[str, Dict[str, float]] = {}
    for slice_key, by_output in eval_result.slicing_metrics:
        name = ", ".join(f"{k}={v.decode() if isinstance(v, bytes) else v}" for k, v in slice_key) or "overall"
        values: Dict[str, float] = {}
        for sub_keys in by_output.values():
            for metrics in sub_keys.values():
                for metric, value in metrics.items():
                    if "doubleValue" in value:
                        values[metric] = float(value["doubleValue"])
        out[name] = values
    return out


def load_metrics(evaluation_uri: str) -> Dict[str, Dict[str, Dict[str, Optional[float]]]]:
    """{slice: {'value': {metric: v}, 'diff': {metric: candidate - baseline}}} for the
    candidate model, from TFMA's metrics output."""
    import tensorflow_model_analysis as tfma

    out: Dict[str, Dict[str, Dict[str, Optional[float]]]] = {}  # None: NaN (undefined on the slice)
    for per_slice in tfma.load_metrics(evaluation_uri):
        name = slice_name(per_slice.slice_key)
        entry = out.setdefault(name, {"value": {}, "diff": {}})
        for kv in per_slice.metric_keys_and_values:
            key = kv.key
            if key.model_name and key.model_name != "candidate":
                continue
            if kv.value.WhichOneof("type") != "double_value":
                continue
            value = kv.value.double_value.value
            entry["diff" if key.is_diff else "value"][key.name] = None if math.isnan(value) else value
    return out


def overall_diff(evaluation_uri: str) -> Dict[str, float]:
    """{metric: candidate - baseline} on the whole eval split (empty without a baseline)."""
    return {k: v for k, v in load_metrics(evaluation_uri).get("overall", {}).get("diff", {}).items() if v is not None}
