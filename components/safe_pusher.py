"""SafePusher: TFX's Pusher contract (push only a blessed model, record a PushedModel
artifact with ``pushed`` / ``pushed_destination``), with the atomic, versioned, pruned
pushes of ``serving.push`` and a metadata file per version.

A model artifact that is already in the serving directory (a cached re-run) is not
pushed a second time; the artifact points at the existing version. Unless serving.tflite asks
for a TFLite model that version lacks (turned on, or another mode): then it is pushed again, as a
new version with its model.tflite.

With serving.tflite on, the version also holds ``model.tflite``, built and checked against the
SavedModel here (serving/tflite.py); a TFLite model that fails its check refuses
the whole push (``refused`` on the PushedModel says why), as an unblessed model does.

In a compiled run (Kubeflow / Vertex AI / run-compiled) the Pusher is the run's last task: with a
``pushgateway_url`` (the pipeline parameter) it pushes the run's metrics from its container when it
ends, pushed or not, and when it fails (components/run_metrics.py). A local run's runner pushes
them itself, with the per-component times only it has; both assemble them with
components/metric_samples.assemble.
"""
from __future__ import annotations

import json
import logging
import time
from typing import Any, Dict, List, Optional

from tfx import types
from tfx.components.util import model_utils
from tfx.dsl.components.base import base_component, base_executor, executor_spec
from tfx.types import standard_artifacts
from tfx.types.component_spec import ChannelParameter, ExecutionParameter
from tfx.utils import path_utils

from tfxline.components import metric_samples, run_metrics
from tfxline.components.spans import span_of, version_of
from tfxline.components.tfma_results import overall_diff, read_evaluation
from tfxline.serving import batch_latency
from tfxline.serving import push as serving_push
from tfxline.serving import release as serving_release
from tfxline.serving import tflite as tflite_export
from tfxline.trainer import decision as trainer_decision
from tfxline.transforms import features as F
from tfxline.transforms.analyzers import AnalyzerValuesError

MODEL_KEY, BLESSING_KEY, EVALUATION_KEY, EXAMPLES_KEY = "model", "model_blessing", "evaluation", "examples"
STATISTICS_KEY = "statistics"
TRANSFORM_GRAPH_KEY = "transform_graph"
DRIFT_KEY = "drift_anomalies"
PUSHED_MODEL_KEY = "pushed_model"


def _metadata(input_dict: Dict[str, List[types.Artifact]], run_id: str, task: str) -> Dict[str, Any]:
    model = input_dict[MODEL_KEY][0]
    meta: Dict[str, Any] = {"model_uri": model.uri, "pipeline_run_id": run_id, "task": task,
                            "pushed_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    chosen = trainer_decision.read(path_utils.serving_model_path(model.uri))
    if chosen:  # binary: the decision threshold serving_default's predicted_class applies, and why
        meta["decision"] = {k: chosen[k] for k in ("threshold", "objective", "why")}
    if input_dict.get(EVALUATION_KEY):  # the task's metrics on eval (multi-class: per-class recall too)
        overall, _, _ = read_evaluation(input_dict[EVALUATION_KEY][0].uri, path_utils.serving_model_path(model.uri))
        meta["metrics"] = overall
    if input_dict.get(EXAMPLES_KEY):  # the training data: today's span, or the window of spans
        examples = sorted(input_dict[EXAMPLES_KEY], key=span_of)
        newest = examples[-1]
        meta["data"] = {"examples_uri": newest.uri, "span": span_of(newest), "version": version_of(newest),
                        "spans": [span_of(e) for e in examples], "examples_uris": [e.uri for e in examples]}
    if input_dict.get(STATISTICS_KEY):  # the reference of the next runs' drift check
        meta.setdefault("data", {})["statistics_uri"] = input_dict[STATISTICS_KEY][0].uri
    return meta


class Executor(base_executor.BaseExecutor):
    def Do(self, input_dict: Dict[str, List[types.Artifact]], output_dict: Dict[str, List[types.Artifact]],
           exec_properties: Dict[str, Any]) -> None:
        failed = True
        try:
            self._push(input_dict, output_dict, exec_properties)
            failed = False
        finally:  # pushed, not pushed, or failed: Prometheus hears of the run (a compiled run's)
            if exec_properties.get("pushgateway_url"):
                _publish_run_metrics(input_dict, output_dict[PUSHED_MODEL_KEY][0], exec_properties, failed)

    def _push(self, input_dict: Dict[str, List[types.Artifact]], output_dict: Dict[str, List[types.Artifact]],
              exec_properties: Dict[str, Any]) -> None:
        pushed = output_dict[PUSHED_MODEL_KEY][0]
        serving_dir = exec_properties["serving_dir"]
        model = input_dict[MODEL_KEY][0]
        if not model_utils.is_model_blessed(input_dict[BLESSING_KEY][0]):
            pushed.set_int_custom_property("pushed", 0)
            return
        tflite_mode = exec_properties.get("tflite") or tflite_export.OFF
        version = serving_push.find_pushed(serving_dir, model.uri)
        if version is not None and tflite_mode != tflite_export.OFF and tflite_mode != (
                serving_push.read_metadata(serving_dir, version).get("tflite") or {}).get("mode"):
            version = None  # the same model, now with serving.tflite on (or another mode): a new version
        if version is None:
            run_id = getattr(self._context, "pipeline_run_id", None) or ""
            model_dir = path_utils.serving_model_path(model.uri)
            meta = _metadata(input_dict, run_id, exec_properties.get("task") or "")
            newest_uri = (meta.get("data") or {}).get("examples_uri")  # the newest span's examples
            if newest_uri:  # TF Serving's batching settings are chosen from this
                try:
                    meta["batching"] = batch_latency.measure(model_dir, batch_latency.eval_records(newest_uri))
                except Exception as e:  # noqa: BLE001 - a measurement never blocks a blessed model's push
                    logging.warning("batch latency not measured (%s); batching_parameters.txt uses TF Serving's "
                                    "usual starting values", str(e).splitlines()[0] if str(e) else type(e).__name__)
            extra_files = {}
            if tflite_mode != tflite_export.OFF:
                try:
                    exported = _tflite(input_dict, exec_properties, model_dir, meta)
                except (tflite_export.TFLiteError, AnalyzerValuesError) as e:
                    # the TFLite model is gated like the model: refused, nothing pushed, the run says why
                    logging.error("push refused: %s", e)
                    pushed.set_int_custom_property("pushed", 0)
                    pushed.set_string_custom_property("refused", str(e))
                    return
                meta["tflite"] = exported.metadata()
                extra_files[tflite_export.FILE] = exported.content
                pushed.set_string_custom_property("tflite", tflite_export.summary_line(meta["tflite"]))
            version = serving_push.push(model_dir, serving_dir, meta, int(exec_properties["keep_versions"]),
                                        protect=serving_release.read(serving_dir).labelled, extra_files=extra_files)
            release = serving_release.on_push(
                serving_dir, version, exec_properties.get("release") or serving_release.STABLE,
                int(exec_properties.get("canary_percent") or 10),
                serving_release.Settings.from_properties(exec_properties))
            # stable or canary, and the label move TF Serving still needs ('tfxline serving settle')
            pushed.set_string_custom_property("release", serving_release.push_summary(release, version))
        else:
            pushed.set_int_custom_property("already_pushed", 1)
        pushed.set_int_custom_property("pushed", 1)
        pushed.set_string_custom_property("pushed_destination", f"{serving_dir.rstrip('/')}/{version}")
        pushed.set_string_custom_property("pushed_version", str(version))


def _tflite(input_dict: Dict[str, List[types.Artifact]], exec_properties: Dict[str, Any], model_dir: str,
            meta: Dict[str, Any]) -> tflite_export.Export:
    """The TFLite model of ``model_dir``, checked on the newest span's eval rows."""
    if not input_dict.get(TRANSFORM_GRAPH_KEY) or not (meta.get("data") or {}).get("examples_uri"):
        raise tflite_export.TFLiteError("serving.tflite needs the Transform graph and the examples wired to the "
                                        "Pusher; fix: build the pipeline with pipeline/factory.py")
    examples_uri = meta["data"]["examples_uri"]
    spec = F.FeatureSpec.from_dict(json.loads(exec_properties["features"]))
    return tflite_export.export(
        model_dir, input_dict[TRANSFORM_GRAPH_KEY][0].uri, spec, exec_properties["tflite"],
        batch_latency.eval_records(examples_uri, tflite_export.PARITY_ROWS),
        batch_latency.eval_records(examples_uri, tflite_export.CALIBRATION_ROWS, split="train"),
        float(exec_properties.get("tflite_tolerance") or 0.0))


def run_samples(input_dict: Dict[str, List[types.Artifact]], pushed: types.Artifact,
                exec_properties: Dict[str, Any], failed: bool) -> List[run_metrics.Sample]:
    """A compiled run's metrics, as its last task sees them: every upstream task succeeded (the
    Pusher runs only then, so nothing drifted), the evaluation, the data, the push. Start time,
    duration and per-component seconds are the platform's (the Vertex AI job / KFP run records
    them); no task sees them."""
    blessed = model_utils.is_model_blessed(input_dict[BLESSING_KEY][0])
    pushed_now = pushed.get_int_custom_property("pushed") == 1
    reason = "failed" if failed else metric_samples.completed_reason(
        blessed, pushed_now, pushed.get_string_custom_property("refused"))
    head = metric_samples.task_outcome_samples(exec_properties, reason, "Pusher" if failed else "")
    metrics = baseline_diff = None
    if input_dict.get(EVALUATION_KEY):
        uri = input_dict[EVALUATION_KEY][0].uri
        metrics, _, _ = read_evaluation(uri, path_utils.serving_model_path(input_dict[MODEL_KEY][0].uri))
        baseline_diff = overall_diff(uri)
    return metric_samples.assemble(
        head, exec_properties["serving_dir"],
        span=max(span_of(e) for e in input_dict[EXAMPLES_KEY]) if input_dict.get(EXAMPLES_KEY) else None,
        task=exec_properties.get("task") or "", metrics=metrics, baseline_diff=baseline_diff, blessed=blessed,
        pushed=pushed_now,
        examples=(metric_samples.statistics_examples(input_dict[STATISTICS_KEY][0])
                  if input_dict.get(STATISTICS_KEY) else None),
        drift=metric_samples.drift_samples(input_dict[DRIFT_KEY][0].uri) if input_dict.get(DRIFT_KEY) else ())


def _publish_run_metrics(input_dict, pushed, exec_properties: Dict[str, Any], failed: bool) -> None:
    """Never raises: a gateway that is down is one warning in the task's log."""
    try:
        samples = run_samples(input_dict, pushed, exec_properties, failed)
    except Exception as e:  # noqa: BLE001 - monitoring never changes a run's result
        logging.warning("run metrics not collected (%s); the run's result stands", run_metrics.first_line(e))
        return
    run_metrics.publish_from_task(exec_properties, samples)


class SafePusherSpec(types.ComponentSpec):
    PARAMETERS = {"serving_dir": ExecutionParameter(type=str), "keep_versions": ExecutionParameter(type=int),
                  "task": ExecutionParameter(type=str, optional=True),  # the feature spec's, for the metadata
                  # the release (serving/release.py): what a push does to the labels, and
                  # how the TF Serving / KServe files are rendered (the serving config section)
                  "release": ExecutionParameter(type=str, optional=True),
                  "canary_percent": ExecutionParameter(type=int, optional=True),
                  "model_name": ExecutionParameter(type=str, optional=True),
                  "tf_serving_base_path": ExecutionParameter(type=str, optional=True),
                  "kserve_storage_uri": ExecutionParameter(type=str, optional=True),
                  "batch_threads": ExecutionParameter(type=int, optional=True),
                  # serving.tflite (serving/tflite.py): the mode, its tolerance, the feature spec
                  "tflite": ExecutionParameter(type=str, optional=True),
                  "tflite_tolerance": ExecutionParameter(type=float, optional=True),
                  "features": ExecutionParameter(type=str, optional=True),
                  # a compiled run's metrics (components/run_metrics.py): where, as which group
                  **run_metrics.task_parameters()}
    INPUTS = {
        MODEL_KEY: ChannelParameter(type=standard_artifacts.Model),
        BLESSING_KEY: ChannelParameter(type=standard_artifacts.ModelBlessing),
        EVALUATION_KEY: ChannelParameter(type=standard_artifacts.ModelEvaluation, optional=True),
        EXAMPLES_KEY: ChannelParameter(type=standard_artifacts.Examples, optional=True),  # any number
        STATISTICS_KEY: ChannelParameter(type=standard_artifacts.ExampleStatistics, optional=True),
        TRANSFORM_GRAPH_KEY: ChannelParameter(type=standard_artifacts.TransformGraph, optional=True),  # TFLite
        DRIFT_KEY: ChannelParameter(type=standard_artifacts.ExampleAnomalies, optional=True),  # run metrics
    }
    OUTPUTS = {PUSHED_MODEL_KEY: ChannelParameter(type=standard_artifacts.PushedModel)}


class SafePusher(base_component.BaseComponent):
    SPEC_CLASS = SafePusherSpec
    EXECUTOR_SPEC = executor_spec.ExecutorClassSpec(Executor)

    def __init__(self, model, model_blessing, serving_dir: str, keep_versions: int = 5,
                 evaluation=None, examples=None, statistics=None, task: str = "",
                 release: Optional[Dict[str, Any]] = None,
                 transform_graph=None, tflite: Optional[Dict[str, Any]] = None, drift_anomalies=None,
                 monitoring: Optional[Dict[str, Any]] = None):
        super().__init__(spec=SafePusherSpec(
            model=model, model_blessing=model_blessing, evaluation=evaluation, examples=examples,
            statistics=statistics, transform_graph=transform_graph, drift_anomalies=drift_anomalies,
            serving_dir=serving_dir, keep_versions=keep_versions, task=task, **(release or {}), **(tflite or {}),
            **(monitoring or {}),
            pushed_model=types.Channel(type=standard_artifacts.PushedModel)))
