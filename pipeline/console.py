"""What a run prints on the console: the end-of-run summary of `tfxline run` and
`run-compiled` (the HTML report is pipeline/report/)."""
from __future__ import annotations

from typing import List

from components.tfma_results import both_classes, undefined_metrics
from pipeline.summary import RunSummary, describe_spans

HEADLINE_METRICS = ("auc", "accuracy", "binary_accuracy", "pr_auc", "precision", "recall",
                    "loss", "example_count", "mean_absolute_error")
WORST_SLICES = 3
MIN_SLICE_EXAMPLES = 20


def worst_slices(summary: RunSummary, metric: str = "auc", n: int = WORST_SLICES) -> List[tuple]:
    """The n lowest slices by `metric`, among slices big enough and with both classes
    (AUC is undefined on a slice whose labels are all 0 or all 1)."""
    rows = [(name, m[metric], m.get("example_count", 0.0)) for name, m in summary.slice_metrics.items()
            if metric in m and m.get("example_count", 0.0) >= MIN_SLICE_EXAMPLES
            and both_classes(m)]
    return sorted(rows, key=lambda r: r[1])[:n]


def format_metrics(metrics) -> str:
    """'auc 0.9512, binary_accuracy 0.8953, ...'; an undefined metric reads 'auc undefined
    (the eval data holds only label 0)', never as a number."""
    undefined = undefined_metrics(metrics)
    return ", ".join(f"{k} undefined ({undefined[k]})" if k in undefined else f"{k} {metrics[k]:.4f}"
                     for k in HEADLINE_METRICS if k in metrics)


def drift_line(compared_with: str) -> str:
    """The summary line for the DriftGate's ``compared_with``: 'drift: none vs <references>' when
    it compared and passed, else what it says (nothing to compare with, not checked)."""
    compared = compared_with.startswith(("serving version", "the previous span"))
    return "  drift: " + (f"none vs {compared_with}" if compared else compared_with)


def format_summary(summary: RunSummary) -> str:
    lines = [f"run {summary.run_id}:"]
    cached = sum(c.state == "cached" for c in summary.components)
    lines.append(f"  components: {len(summary.components)} ran, {cached} served from cache; "
                 f"wall time {summary.wall_seconds:.0f}s")
    spans = describe_spans(summary.spans)
    if spans:
        lines.append(f"  data: {spans}")
    if summary.step_profile:
        lines.append("  trainer step profile: " + summary.step_profile)
    if summary.metrics:
        lines.append("  eval (overall): " + format_metrics(summary.metrics))
    worst = worst_slices(summary)
    if worst:
        lines.append("  worst slices by AUC: " + "; ".join(
            f"{name} {value:.3f} (n={int(count)})" for name, value, count in worst))
    if summary.drift:
        lines.append(drift_line(summary.drift))
    if summary.blessed is not None:
        lines.append("  baseline: " + (f"serving version {summary.baseline_version}" if summary.baseline_version
                                       else "none (nothing serving yet): judged on the value thresholds"))
    if summary.blessed is None:
        lines.append("  blessing: the Evaluator did not run")
    elif summary.blessed:
        lines.append("  blessing: BLESSED (all thresholds passed)")
    else:
        lines.append("  blessing: NOT blessed; failed: " + ("; ".join(summary.failed_thresholds) or "see the Evaluator output"))
    if summary.pushed:
        lines.append(f"  pushed to: {summary.pushed_to}")
    else:
        lines.append("  pushed: nothing (" + ("model not blessed" if summary.blessed is False else "no push") + ")")
    return "\n".join(lines)
