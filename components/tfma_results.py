"""What a TFMA output directory (a ModelEvaluation artifact) says: the metrics of every slice,
the thresholds that failed, described in words, and the metrics that are undefined on the data.

Read by the run summary, the report and the console, and by the SafePusher, which records the
pushed model's metrics beside it; so it lives with the components, below the orchestrator."""
from __future__ import annotations

import math
from typing import Any, Dict, Optional


def read_evaluation(uri: str):
    """(overall metrics, {slice: metrics}, failed thresholds described) of a TFMA output dir."""
    import tensorflow_model_analysis as tfma

    slices = load_slice_metrics(uri)
    overall = slices.pop("overall", {})
    failed = []
    for per_slice in tfma.load_validation_result(uri).metric_validations_per_slice:
        where = slice_name(per_slice.slice_key)
        undefined = undefined_metrics(overall if where == "overall" else slices.get(where, {}))
        failed += [describe_failure(failure, where, undefined) for failure in per_slice.failures]
    return overall, slices, failed


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


def describe_failure(failure, where: str, undefined: Optional[Dict[str, str]] = None) -> str:
    """e.g. 'auc 0.712 < 0.75 (value threshold) on overall'; a metric that is undefined on
    the slice's data is named as such, with the cause."""
    name = failure.metric_key.name
    if name in (undefined or {}):
        return f"{name} is undefined on {where}: {undefined[name]}, so its threshold cannot pass"
    value = failure.metric_value.double_value.value if failure.metric_value.HasField("double_value") else None
    t = failure.metric_threshold
    shown = f"{name} {value:.4f}" if value is not None else name
    if failure.metric_key.is_diff:
        limit = t.change_threshold.absolute.value
        return f"{name} changed by {value:+.4f} vs the baseline, allowed {limit:+.4f} (change threshold) on {where}"
    if t.value_threshold.HasField("lower_bound"):
        return f"{shown} < {t.value_threshold.lower_bound.value:g} (value threshold) on {where}"
    if t.value_threshold.HasField("upper_bound"):
        return f"{shown} > {t.value_threshold.upper_bound.value:g} (value threshold) on {where}"
    return f"{shown} failed on {where}: {failure.message}"


def both_classes(metrics: Dict[str, Any]) -> bool:
    """Whether a slice's labels have both classes (AUC is undefined otherwise; TFMA reports
    0 there). Needs the MeanLabel metric, which the binary EvalConfig always computes."""
    mean_label = metrics.get("mean_label", 0.5)
    return mean_label is not None and 0.0 < mean_label < 1.0


def slice_name(slice_key) -> str:
    parts = [f"{c.column}={_single_value(c)}" for c in slice_key.single_slice_keys]
    return ", ".join(parts) or "overall"


def _single_value(c) -> str:
    which = c.WhichOneof("kind")
    value = getattr(c, which) if which else ""
    return value.decode() if isinstance(value, bytes) else str(value)


def load_slice_metrics(evaluation_uri: str) -> Dict[str, Dict[str, float]]:
    """{'overall' | 'feature=value': {metric: value}} from a ModelEvaluation artifact."""
    import tensorflow_model_analysis as tfma

    return _slice_metrics(tfma.load_eval_result(evaluation_uri))


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
