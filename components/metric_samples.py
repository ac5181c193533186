"""The samples each part of a run yields, in the names of components/run_metrics.py: its outcome,
the evaluation, the data, the DriftGate's scores, what serves; ``assemble`` puts a run's together,
the same kinds in the same order whoever reports it (a local run's runner, local/monitoring.py; a
compiled run's Pusher, components/safe_pusher.py), and ``report_stop`` is a compiled run's gate
reporting the stop it makes."""
from __future__ import annotations

import logging
from typing import Any, Dict, List, Mapping, Optional, Sequence

from tfxline.components import run_metrics, task_metrics
from tfxline.components.anomalies_files import drift_anomalies_path
from tfxline.components.run_metrics import COMPLETED, REASONS, Sample
from tfxline.serving import push as serving_push


def outcome_samples(reason: str, ended: float, component: str = "", no_run_hours: float = 0.0,
                    no_push_hours: float = 0.0) -> List[Sample]:
    """What every run pushes, refused, failed or complete: its result and why (``reason``, one of
    REASONS; ``component``: the one that stopped it), when it ended, whether the DriftGate
    stopped it, and the alert limits of its config (the rules read them, so each pipeline's
    schedule is its own: monitoring/alerts.yml)."""
    if reason not in REASONS:
        raise ValueError(f"unknown run reason {reason!r}; use one of {', '.join(REASONS)}")
    out = [Sample("tfxline_run_success", 1.0 if reason in COMPLETED else 0.0,
                  {"reason": reason, "component": component if reason not in COMPLETED else ""}),
           Sample("tfxline_last_run_timestamp_seconds", ended),
           Sample("tfxline_drift_stopped_run", 1.0 if reason == "drift" else 0.0)]
    if no_run_hours:
        out.append(Sample("tfxline_no_run_alert_seconds", no_run_hours * 3600.0))
    if no_push_hours:
        out.append(Sample("tfxline_no_push_alert_seconds", no_push_hours * 3600.0))
    return out


def task_outcome_samples(exec_properties: Mapping[str, Any], reason: str, component: str = "") -> List[Sample]:
    """outcome_samples for a compiled run's task, its limits from its exec properties."""
    import time

    return outcome_samples(reason, time.time(), component, float(exec_properties.get("max_hours_without_run") or 0),
                           float(exec_properties.get("max_hours_without_push") or 0))


def report_stop(exec_properties: Mapping[str, Any], reason: str, component: str,
                extra: Sequence[Sample] = ()) -> None:
    """A compiled run's gate that stops the run reports it (nothing after it runs, the Pusher
    neither): why, its measurements (``extra``), and what serves. Never raises."""
    try:
        samples = task_outcome_samples(exec_properties, reason, component) + list(extra)
        if exec_properties.get("serving_dir"):
            samples += serving_samples(exec_properties["serving_dir"])
    except Exception as e:  # noqa: BLE001 - monitoring never changes a run's result
        logging.warning("run metrics not collected (%s); the run's result stands", run_metrics.first_line(e))
        return
    run_metrics.publish_from_task(exec_properties, samples)


def completed_reason(blessed: Optional[bool], pushed: Optional[bool], push_refused: str) -> str:
    """A completed run's reason: pushed, refused by the gate, or its TFLite model refused."""
    if pushed:
        return "pushed"
    return "push_refused" if blessed and push_refused else "gate_refused"


EXAMPLE_COUNT = "example_count"  # TFMA's: a count, pushed apart from the quality metrics


def evaluation_samples(task: str, metrics: Mapping[str, Any],
                       baseline_diff: Optional[Mapping[str, Any]]) -> List[Sample]:
    """The candidate's gate metrics (the task's headline ones, counts apart); the serving
    model's, from TFMA's diff against it (candidate - baseline); the main metric's gain, signed so
    positive is better; the examples judged."""
    view = task_metrics.view(task, metrics)
    headline = {k: float(v) for k, v in view.headline_metrics(metrics).items() if _number(v)}
    count = headline.pop(EXAMPLE_COUNT, None)
    baseline = {k: headline[k] - float(d) for k, d in (baseline_diff or {}).items() if k in headline and _number(d)}
    out = [Sample("tfxline_candidate_metric", v, {"metric": k}) for k, v in headline.items()]
    out += [Sample("tfxline_baseline_metric", v, {"metric": k}) for k, v in baseline.items()]
    if view.main in baseline:
        gain = headline[view.main] - baseline[view.main]
        out.append(Sample("tfxline_main_metric_gain", gain if view.higher_is_better else -gain, {"metric": view.main}))
    if count is not None:
        out.append(Sample("tfxline_eval_examples", count))
    return out


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and v == v  # not NaN


def examples_samples(examples: Mapping[str, int]) -> List[Sample]:
    return [Sample("tfxline_examples", float(n), {"split": split}) for split, n in sorted(examples.items())]


def statistics_examples_at(uri: str) -> Dict[str, int]:
    """{split: examples} of the StatisticsGen output at ``uri`` (its Split-* folders): what a run's
    summary records of it."""
    from tfx.types import artifact_utils, standard_artifacts

    from tfxline.serving import storage

    if not uri or not storage.isdir(uri):
        return {}
    statistics = standard_artifacts.ExampleStatistics()
    statistics.uri = uri
    statistics.split_names = artifact_utils.encode_split_names(
        sorted(name[len("Split-"):] for name in storage.listdir(uri) if name.startswith("Split-")))
    return statistics_examples(statistics)


def statistics_examples(statistics) -> Dict[str, int]:
    """{split: examples} of a StatisticsGen output artifact."""
    from tfx.components.statistics_gen import stats_artifact_utils
    from tfx.types import artifact_utils

    out = {}
    for split in artifact_utils.decode_split_names(statistics.split_names):
        datasets = stats_artifact_utils.load_statistics(statistics, split).proto().datasets
        out[split] = int(datasets[0].num_examples) if datasets else 0
    return out


def drift_samples(drift_anomalies_uri: str) -> List[Sample]:
    """Every drift measurement the DriftGate recorded (nothing when it compared nothing); a
    feature compared with two references reports the larger."""
    from tfxline.serving import storage

    path = drift_anomalies_path(drift_anomalies_uri) if drift_anomalies_uri else ""
    if not path or not storage.isfile(path):
        return []
    from tensorflow_metadata.proto.v0 import anomalies_pb2
    return drift_samples_of(anomalies_pb2.Anomalies.FromString(storage.read_bytes(path)))


def drift_samples_of(anomalies) -> List[Sample]:
    """The drift measurements of a TFDV Anomalies proto, the larger per feature."""
    worst: Dict[str, tuple] = {}  # feature -> (value, threshold)
    for info in anomalies.drift_skew_info:
        feature = ".".join(info.path.step)
        for m in info.drift_measurements:
            if feature not in worst or m.value > worst[feature][0]:
                worst[feature] = (m.value, m.threshold)
    out = []
    for feature, (value, threshold) in sorted(worst.items()):
        out += [Sample("tfxline_drift_score", value, {"feature": feature}),
                Sample("tfxline_drift_threshold", threshold, {"feature": feature})]
    return out


def serving_samples(serving_dir: str) -> List[Sample]:
    """The stable version after the run and when the newest version was pushed."""
    from tfxline.serving import release as serving_release

    versions = serving_push.versions(serving_dir)
    if not versions:
        return []
    stable = serving_release.read(serving_dir).stable or versions[-1]
    out = [Sample("tfxline_serving_version", float(stable))]
    pushed_at = serving_push.read_metadata(serving_dir, versions[-1]).get("pushed_at")
    if pushed_at:
        import calendar
        import time
        out.append(Sample("tfxline_last_successful_push_timestamp_seconds",
                          float(calendar.timegm(time.strptime(pushed_at, "%Y-%m-%dT%H:%M:%SZ")))))
    return out


def assemble(head: Sequence[Sample], serving_dir: str, *, span: Optional[int] = None, task: str = "",
             metrics: Optional[Mapping[str, Any]] = None, baseline_diff: Optional[Mapping[str, Any]] = None,
             blessed: Optional[bool] = None, pushed: Optional[bool] = None,
             examples: Optional[Mapping[str, int]] = None, durations: Sequence[Sample] = (),
             drift: Sequence[Sample] = ()) -> List[Sample]:
    """A run's samples from what its reporter has: ``head`` (the outcome, and what only that
    reporter sees), the newest ``span``, the evaluation (``metrics``: the candidate's, None when
    nothing was evaluated; ``baseline_diff``: TFMA's diff against the serving model), ``blessed``
    and ``pushed``, the ``examples`` per split (None: no statistics), ``durations``, the
    DriftGate's scores (``drift``) and what serves in ``serving_dir``. None reports nothing."""
    out = list(head)
    if span is not None:
        out.append(Sample("tfxline_span", float(span)))
    if metrics is not None:
        out += evaluation_samples(task, metrics, baseline_diff)
    if blessed is not None:
        out.append(Sample("tfxline_blessed", 1.0 if blessed else 0.0))
    if pushed is not None:
        out.append(Sample("tfxline_pushed", 1.0 if pushed else 0.0))
    if examples is not None:
        out += examples_samples(examples)
    return out + list(durations) + list(drift) + serving_samples(serving_dir)
