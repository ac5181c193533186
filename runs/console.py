"""What a run prints on the console: the end-of-run summary of `tfxline run` and
`run-compiled`, and of a recorded run in `tfxline runs show` (the HTML report is
runs/report/)."""
from __future__ import annotations

from typing import List, Optional

from tfxline.components import task_metrics
from tfxline.components.tfma_results import both_classes, undefined_metrics
from tfxline.runs import tuning
from tfxline.runs.history import UNRECORDED
from tfxline.runs.summary import RunSummary, cached_from, describe_drift, describe_spans, earlier_run, failed_component
from tfxline.trainer.tuning_settings import PROGRESS, TUNING_RUN_FILE, shown, summary_line, trees_summary_line

WORST_SLICES = 3
MIN_SLICE_EXAMPLES = 20


def worst_slices(summary: RunSummary, n: int = WORST_SLICES) -> List[tuple]:
    """The n worst slices by the task's main metric, among slices big enough (and, for AUC,
    with both classes: it is undefined on a slice whose labels are all 0 or all 1)."""
    view = task_metrics.view(summary.task, summary.metrics)
    rows = [(name, m[view.main], m.get("example_count", 0.0)) for name, m in summary.slice_metrics.items()
            if m.get(view.main) is not None and m.get("example_count", 0.0) >= MIN_SLICE_EXAMPLES
            and (view.main != "auc" or both_classes(m))]
    return sorted(rows, key=lambda r: r[1] if view.higher_is_better else -r[1])[:n]


def format_metrics(metrics, task: str = "") -> str:
    """The task's headline metrics: 'auc 0.9512, binary_accuracy 0.8953, ...'; 'rmse 0.0910,
    mae 0.0723, r2 0.8245, ...'; 'accuracy 0.9516, ..., recall[Adelie] 0.9630, ...'. An
    undefined metric reads 'auc undefined (the eval data holds only label 0)', never as a number."""
    undefined = undefined_metrics(metrics)
    shown = task_metrics.view(task, metrics).headline_metrics(metrics)
    return ", ".join(f"{k} undefined ({undefined[k]})" if k in undefined else f"{k} {_number(k, v)}"
                     for k, v in shown.items())


def _number(name: str, value: float) -> str:
    return f"{value:.0f}" if name == "example_count" else f"{value:.4f}"


def blessing_line(blessed, failed) -> str:
    """'  blessing: ...': BLESSED, or NOT blessed with every failed gate in words."""
    if blessed is None:
        return "  blessing: the Evaluator did not run"
    if blessed:
        return "  blessing: BLESSED (all thresholds passed)"
    return "  blessing: NOT blessed: " + ("; ".join(failed) or "the Evaluator did not bless the model")


def drift_line(compared_with: str, cached_from: Optional[str] = None) -> str:
    """The summary line for the DriftGate's ``compared_with``: 'drift: none vs <references>' when
    it compared and passed, else what it says (nothing to compare with, not checked); a gate
    served from cache names the run whose check it reuses (``describe_drift``)."""
    return "  drift: " + describe_drift(compared_with, cached_from)


def baseline_line(summary: RunSummary) -> str:
    """'  baseline: serving version N' or none; a ServingBaseline served from cache (with the
    candidate it was resolved for) is the baseline of the run that resolved it, and says so."""
    text = (f"serving version {summary.baseline_version}" if summary.baseline_version
            else "none (nothing serving yet): judged on the value thresholds")
    cached = cached_from(summary, "ServingBaseline")
    if cached is not None:
        text = f"as resolved in {earlier_run(cached)} (served from cache): {text}"
    return "  baseline: " + text


def failure_lines(summary: RunSummary) -> List[str]:
    """A failed run's first lines: the component that failed, then the error line the run
    recorded (what the RunFailed page sends the on-call person to read); none for a run that
    did not fail."""
    failed = failed_component(summary)
    lines = [f"  failed: {failed}"] if failed else []
    if summary.error:
        lines.append(f"  error: {summary.error}")
    elif failed:
        lines.append(f"  error: not recorded ({UNRECORDED})")
    return lines


def wall_time(seconds: Optional[float]) -> str:
    """'wall time 12s'; 'wall time unknown' when the run recorded none (MLMD does not hold it:
    a run read back from MLMD alone must not claim 0s)."""
    return "wall time unknown" if seconds is None else f"wall time {seconds:.0f}s"


def component_seconds_line(summary: RunSummary) -> str:
    """'  seconds: CsvExampleGen 2.1, Transform 18.0 (cached), ...': where a run's time went (the
    RunSlow alert's first question), in the order the components ran."""
    return "  seconds: " + ", ".join(f"{c.node_id} {c.seconds:.1f}" + (" (cached)" if c.state == "cached" else "")
                                     for c in summary.components)


def format_summary(summary: RunSummary, tf_serving_url: str = "") -> str:
    """The run's summary; ``tf_serving_url``: serving.tf_serving_url, where a TF Serving reads the
    release (a push then says how its labels move there)."""
    lines = [f"run {summary.run_id}:"] + failure_lines(summary)
    cached = sum(c.state == "cached" for c in summary.components)
    stopped = sum(c.state == "canceled" for c in summary.components)  # a Ctrl-C or SIGTERM stopped them
    lines.append(f"  components: {len(summary.components) - cached - stopped} ran, {cached} served from cache"
                 + (f", {stopped} stopped" if stopped else "") + "; " + wall_time(summary.wall_seconds))
    spans = describe_spans(summary.spans)
    if spans:
        lines.append(f"  data: {spans}")
    if summary.image_files:
        lines.append(f"  data: {summary.image_files}")
    if summary.rows_without_label:
        lines.append(f"  data: {summary.rows_without_label} rows without a label left out of training and evaluation "
                     "(data.missing_labels: drop)")
    lines += tuning_lines(summary)
    if summary.step_profile:
        lines.append("  trainer step profile: " + summary.step_profile)
    if summary.training:
        lines.append("  training: " + summary.training)
    if summary.model_family:
        lines.append("  model: " + summary.model_family)
    if summary.metrics:
        lines.append("  eval (overall): " + format_metrics(summary.metrics, summary.task))
    worst = worst_slices(summary)
    if worst:
        lines.append(f"  worst slices by {task_metrics.view(summary.task, summary.metrics).main}: " + "; ".join(
            f"{name} {value:.3f} (n={int(count)})" for name, value, count in worst))
    if summary.drift:
        lines.append(drift_line(summary.drift, cached_from(summary, "DriftGate")))
    if summary.blessed is not None:
        lines.append(baseline_line(summary))
    lines += [f"  WARNING: {w}" for w in summary.warnings]
    lines.append(blessing_line(summary.blessed, summary.failed_thresholds))
    return "\n".join(lines + push_lines(summary, tf_serving_url))


def tuning_lines(summary: RunSummary) -> List[str]:
    """Where the Trainer's hyperparameters came from: the Tuner's summary line ('  tuning: 3 trials
    in 41s, best val_auc 0.9431: learning_rate=0.0042 ...'), a Tuner served from cache naming the run
    whose search it reuses, or the saved values tuning.reuse fed it; then the best_hyperparameters.txt
    (what tuning.reuse names to train on them again). Nothing for an untuned run, nor for a Tuner
    that did not finish (the failure lines name it)."""
    t = summary.tuning
    where = [f"  best hyperparameters: {t['hyperparameters']}"] if t.get("hyperparameters") else []
    if t.get("how") == tuning.REUSED:
        origin = f"the best values of {earlier_run(t['tuned_in'])}'s search" if t.get("tuned_in") else "saved values"
        values = shown(t.get("values") or {}) or "none: the config's own values (no trial beat them)"
        return [f"  tuning: not searched: reused {origin} (tuning.reuse): {values}"] + where
    tuner = summary.component(tuning.TUNER_ID)
    if not t or tuner is None or tuner.state not in ("complete", "cached"):
        return []
    record = t.get("record")
    text = (summary_line(record)[len(PROGRESS):] if record else
            f"its record ({TUNING_RUN_FILE}) is missing; best values {shown(t.get('values') or {}) or '?'}")
    cached = cached_from(summary, tuning.TUNER_ID)
    if cached is not None:
        text = f"as searched in {earlier_run(cached)} (Tuner served from cache): {text}"
    trees = trees_summary_line((record or {}).get("trees"))  # model.family trees or auto: the trees' search
    return ["  tuning: " + text] + (["  tuning " + trees] if trees else []) + where


def push_lines(summary: RunSummary, tf_serving_url: str = "") -> List[str]:
    """'  pushed to: <dir>/<version> (stable: predict and the next run's baseline use it)': where
    the model went and what reads it now, in one line (the Pusher's release words); where a TF
    Serving reads the release, a second line says how its labels move there; else nothing pushed
    and why."""
    pusher_cached = cached_from(summary, "Pusher")
    if summary.pushed and pusher_cached is not None:
        return [f"  pushed to: {summary.pushed_to} by {earlier_run(pusher_cached)} (Pusher served from cache: nothing "
                "new pushed)"] + ([f"  tflite: {summary.tflite}"] if summary.tflite else [])
    if summary.pushed:
        lines = [f"  pushed to: {summary.pushed_to}" + (f" ({summary.release})" if summary.release else "")]
        if summary.release and tf_serving_url:
            lines.append(f"  tf serving: loads version {summary.pushed_to.rstrip('/').rsplit('/', 1)[-1]} now; its "
                         f"labels move with 'tfxline serving settle' once TF Serving at {tf_serving_url} has loaded it")
        return lines + ([f"  tflite: {summary.tflite}"] if summary.tflite else [])
    if summary.push_refused:
        return [f"  pushed: nothing (refused: {summary.push_refused})"]
    return [f"  pushed: nothing ({no_push_reason(summary)})"]


def no_push_reason(summary: RunSummary) -> str:
    """Why a run pushed nothing, when no push refusal says it: not blessed, or failed before
    the Pusher."""
    if summary.blessed is False:
        return "model not blessed"
    failed = failed_component(summary)
    return f"the run failed at {failed}" if failed else "no push"
