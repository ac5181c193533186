"""What a pipeline run did, read back from the MLMD store and the TFMA outputs."""
from __future__ import annotations

import dataclasses
import json
from typing import Any, Dict, List, Optional

from ml_metadata.metadata_store.metadata_store import MetadataStore
from ml_metadata.proto import metadata_store_pb2

from tfxline.components.tfma_results import overall_diff, read_evaluation, undefined_metrics
from tfxline.runs import files
from tfxline.runs import tuning as tuning_lib
from tfxline.runs.store import (
    INPUT_EVENTS,
    cached_from_run,
    describe_store,
    execution_artifacts,
    latest_run_id,
    node_id_of,
    open_store,
    spans_of,
)
from tfxline.runs.training_notes import budget_note, family_line, step_profile_line, training_length_note
from tfxline.serving import storage
from tfxline.trainer.settings import TRAINING_RUN_FILE
from tfxline.transforms.features import FeatureSpec, FeatureSpecError

# components/csv_example_gen.DROPPED: the examples' count of rows left out for an empty label (a
# literal here: that module imports Beam and TFX, and summaries are read without them)
ROWS_WITHOUT_LABEL = "rows_without_label"
# how the error line of a run a Ctrl-C or SIGTERM stopped begins (local/outcome.interrupted_message)
INTERRUPTED = "interrupted"
STATE_NAMES = {
    metadata_store_pb2.Execution.COMPLETE: "complete",
    metadata_store_pb2.Execution.CACHED: "cached",
    metadata_store_pb2.Execution.FAILED: "failed",
    metadata_store_pb2.Execution.RUNNING: "running",
    metadata_store_pb2.Execution.CANCELED: "canceled",
    metadata_store_pb2.Execution.NEW: "new",
}


@dataclasses.dataclass
class ComponentRun:
    node_id: str
    state: str
    seconds: float
    outputs: Dict[str, List[str]] = dataclasses.field(default_factory=dict)
    execution_id: int = 0
    cached_from: str = ""  # served from cache: the run whose execution made the outputs it reuses


@dataclasses.dataclass
class RunSummary:
    run_id: str
    components: List[ComponentRun]
    task: str = ""               # the feature spec's task (binary, multiclass, regression)
    error: str = ""
    report_path: str = ""
    report_error: str = ""       # why report.html could not be written (the run's log has the traceback)
    created_ms: int = 0          # when MLMD registered the run
    blessed: Optional[bool] = None
    metrics: Dict[str, float] = dataclasses.field(default_factory=dict)
    slice_metrics: Dict[str, Dict[str, float]] = dataclasses.field(default_factory=dict)
    failed_thresholds: List[str] = dataclasses.field(default_factory=list)
    baseline_diff: Dict[str, float] = dataclasses.field(default_factory=dict)  # candidate - serving model, overall
    pushed: Optional[bool] = None
    pushed_to: str = ""
    push_refused: str = ""   # why a blessed model was not pushed (its TFLite model failed its check)
    release: str = ""        # what the push did to the release (stable or canary; a pending label move)
    tflite: str = ""         # the pushed model.tflite in one line (serving.tflite)
    model_uri: str = ""
    baseline_version: Optional[int] = None  # the serving version the candidate was judged against
    spans: List[int] = dataclasses.field(default_factory=list)  # the spans trained on (else ExampleGen's)
    rows_without_label: Optional[int] = None  # rows ExampleGen left out, their label empty (data.missing_labels: drop)
    image_files: str = ""  # a class folder's files left out: other files ignored, images that do not decode
    drift: str = ""               # what the DriftGate compared the data with (or why it could not)
    undefined: Dict[str, str] = dataclasses.field(default_factory=dict)  # overall metric -> why undefined
    wall_seconds: Optional[float] = 0.0  # None: read back from MLMD with no recording of it (runs/history.py)
    step_profile: str = ""        # runtime.profile_steps: the Trainer's traced steps, in one line
    model_family: str = ""        # model.family trees or auto: what trained and which was kept, in one line
    no_network: bool = False      # model.family trees: no network trained (no TensorBoard logs)
    training: str = ""            # its time budget (budget_note); cut short at its cap while still improving
    leans_on: List[List[Any]] = dataclasses.field(default_factory=list)  # [column, loss without it], the Trainer's
    tuning: Dict[str, Any] = dataclasses.field(default_factory=dict)  # runs/tuning.tuning_of
    warnings: List[str] = dataclasses.field(default_factory=list)  # what the numbers may not mean (runs/warnings.py)

    def component(self, node_id: str) -> Optional[ComponentRun]:
        return next((c for c in self.components if c.node_id == node_id), None)

    def to_dict(self) -> Dict[str, Any]:
        return dataclasses.asdict(self)


def collect_run(metadata_store: Any, pipeline_name: str, run_id: Optional[str] = None,
                store: Optional[MetadataStore] = None) -> RunSummary:
    """One run's summary; ``metadata_store`` as in ``PipelineConfig.metadata_store``."""
    store = store or open_store(metadata_store)
    run_id = run_id or latest_run_id(store, pipeline_name)
    if run_id is None:
        raise LookupError(f"no run of pipeline {pipeline_name!r} in {describe_store(metadata_store)}")
    run_ctx = store.get_context_by_type_and_name("pipeline_run", run_id)
    if run_ctx is None:
        raise LookupError(f"run {run_id!r} is not in the MLMD store {describe_store(metadata_store)}")
    executions = sorted(store.get_executions_by_context(run_ctx.id),
                        key=lambda e: (e.create_time_since_epoch, e.id))
    summary = RunSummary(run_id=run_id, components=[], created_ms=run_ctx.create_time_since_epoch)
    for execution in executions:
        node_id = node_id_of(store, execution)
        outputs = execution_artifacts(store, execution.id)
        summary.components.append(ComponentRun(
            node_id=node_id,
            state=STATE_NAMES.get(execution.last_known_state, "unknown"),
            seconds=max(0.0, (execution.last_update_time_since_epoch
                              - execution.create_time_since_epoch) / 1000.0),
            outputs={k: [a.uri for a in v] for k, v in outputs.items()},
            execution_id=execution.id,
            cached_from=(cached_from_run(store, execution)
                         if execution.last_known_state == metadata_store_pb2.Execution.CACHED else ""),
        ))
        if not summary.task:
            summary.task = _task_of(execution)
        if node_id.endswith("ExampleGen") and outputs.get("examples") and not summary.spans:
            summary.spans = spans_of(outputs["examples"])
        if node_id.endswith("ExampleGen") and outputs.get("examples"):
            dropped = outputs["examples"][0].custom_properties.get(ROWS_WITHOUT_LABEL)
            summary.rows_without_label = dropped.int_value if dropped is not None else None
            summary.image_files = image_files_line(outputs["examples"][0].custom_properties)
        if node_id == "Transform":  # what the model trains on: today's span or the window
            read = execution_artifacts(store, execution.id, INPUT_EVENTS).get("examples")
            summary.spans = spans_of(read) if read else summary.spans
        if node_id == "DriftGate" and outputs.get("drift_anomalies"):
            summary.drift = _str_prop(outputs["drift_anomalies"][0], "compared_with")
        if node_id in (tuning_lib.TUNER_ID, tuning_lib.REUSED_ID):
            summary.tuning = tuning_lib.tuning_of(store, node_id, outputs)
        if node_id == "Trainer" and outputs.get("model"):
            summary.model_uri = outputs["model"][0].uri
        if node_id == "Trainer" and outputs.get("model_run"):
            info = training_run(outputs["model_run"][0].uri)
            summary.step_profile = step_profile_line(info)
            summary.training = "; ".join(x for x in (budget_note(info), training_length_note(info)) if x)
            summary.leans_on = info.get("leans_on") or []
            summary.model_family = family_line(info)
            family = info.get("family") or {}  # a trees-only training wrote no TensorBoard logs
            summary.no_network = bool(family) and "network" not in (family.get("seconds") or {})
        if node_id == "ServingBaseline" and outputs.get("baseline_model"):
            # from MLMD, not the artifact's baseline.json: retention may have deleted the copy
            version = _str_prop(outputs["baseline_model"][0], "serving_version")
            summary.baseline_version = int(version) if version else None
        if node_id == "Evaluator":
            _read_evaluation(summary, outputs, model_dir=summary.model_uri)
        if node_id == "Pusher" and outputs.get("pushed_model"):
            pushed = outputs["pushed_model"][0]
            summary.pushed = bool(_int_prop(pushed, "pushed"))
            summary.pushed_to = _str_prop(pushed, "pushed_destination")
            summary.push_refused = _str_prop(pushed, "refused")
            summary.tflite = _str_prop(pushed, "tflite")
            summary.release = _str_prop(pushed, "release")
    return summary


def training_run(model_run_uri: str) -> Dict[str, Any]:
    """The Trainer's training_run.json (trainer/run.py training_info); {} when it wrote none (it failed)."""
    path = storage.join(model_run_uri, TRAINING_RUN_FILE)
    return storage.read_json(path) if storage.isfile(path) else {}


def describe_drift(compared_with: str, cached_from: Optional[str] = None) -> str:
    """The DriftGate's ``compared_with`` in words: 'none vs <references>' when it compared and
    passed, else what it says (nothing to compare with, not checked). A DriftGate served from
    cache (``cached_from``: not None) checked nothing in this run: its result is the one of the
    run that made it, and says so ('as checked in run <id> (DriftGate served from cache): ...')."""
    compared = compared_with.startswith(("serving version", "the previous span"))
    text = f"none vs {compared_with}" if compared else compared_with
    if cached_from is not None:
        return f"as checked in {earlier_run(cached_from)} (DriftGate served from cache): {text}"
    return text


def cached_from(summary: "RunSummary", node_id: str) -> Optional[str]:
    """None unless this run served the node from cache; then the run whose result it reused
    ('' when that run is not known)."""
    component = summary.component(node_id)
    return component.cached_from if component is not None and component.state == "cached" else None


def earlier_run(run_id: str) -> str:
    return f"run {run_id}" if run_id else "an earlier run"


def describe_spans(spans: List[int]) -> str:
    """'span 3', 'spans 2, 3'; '' for data without spans (everything is span 0)."""
    if not spans or spans == [0]:
        return ""
    return ("span " if len(spans) == 1 else "spans ") + ", ".join(map(str, spans))


def _int_prop(artifact, name: str) -> int:
    return artifact.custom_properties[name].int_value if name in artifact.custom_properties else 0


def image_files_line(props) -> str:
    """'' or what a class folder's ExampleGen left out (components/folder_example_gen.py)."""
    ignored, bad, kind = props.get("ignored_files"), props.get("bad_images"), props.get("folder_files")
    parts = []
    if bad is not None and bad.int_value:
        named = props["bad_image_files"].string_value.splitlines() if "bad_image_files" in props else []
        parts.append(f"{bad.int_value} image(s) that do not decode left out ({', '.join(named)}"
                     f"{' ...' if bad.int_value > len(named) else ''}; data.bad_images: fail refuses them)")
    if ignored is not None and ignored.int_value:
        parts.append(f"{ignored.int_value} file(s) that are not {kind.string_value if kind else 'images'} ignored")
    return "; ".join(parts)


def _str_prop(artifact, name: str) -> str:
    return artifact.custom_properties[name].string_value if name in artifact.custom_properties else ""


def serving_model_dir(model_uri: str) -> str:
    """The SavedModel inside a TFX Model artifact (``Format-Serving/``, as TFX's
    path_utils.serving_model_path finds it, without importing TFX here)."""
    serving = storage.join(model_uri, "Format-Serving")
    return serving if storage.isdir(serving) else model_uri


def _task_of(execution) -> str:
    """The task of the feature spec that Transform and the Trainer ran with (their
    custom_config, an MLMD exec property); '' for other executions."""
    if "custom_config" not in execution.custom_properties:
        return ""
    try:
        config = json.loads(execution.custom_properties["custom_config"].string_value)
        features = config.get("features") if isinstance(config, dict) else None  # TFX's examples: null
        return FeatureSpec.from_dict(features).task if features else ""
    except (ValueError, FeatureSpecError):
        return ""


def _read_evaluation(summary: RunSummary, outputs: Dict[str, list], model_dir: str = "") -> None:
    if outputs.get("blessing"):
        summary.blessed = bool(_int_prop(outputs["blessing"][0], "blessed"))
    if outputs.get("evaluation"):
        serving_model = serving_model_dir(model_dir) if model_dir else ""
        summary.metrics, summary.slice_metrics, summary.failed_thresholds = read_evaluation(
            outputs["evaluation"][0].uri, serving_model)
        summary.undefined = undefined_metrics(summary.metrics)
        summary.baseline_diff = overall_diff(outputs["evaluation"][0].uri)


def write_summary(summary: RunSummary, path: str) -> None:
    files.write_json_atomic(path, summary.to_dict())


def failed_component(summary: RunSummary) -> str:
    """The component MLMD recorded as failed ('' when none did: the run failed outside one, or
    did not fail): what the on-call person looks at first."""
    return next((c.node_id for c in summary.components if c.state == "failed"), "")


def stopped_component(summary: RunSummary) -> str:
    """The component a Ctrl-C or SIGTERM stopped (CANCELED in MLMD: local/outcome.cancel_unfinished),
    '' when none was."""
    return next((c.node_id for c in summary.components if c.state == "canceled"), "")


def status_of(summary: RunSummary) -> str:
    """'complete', 'running', 'interrupted: <component>' (a Ctrl-C or SIGTERM stopped it: CANCELED in
    MLMD, local/outcome.cancel_unfinished) or 'failed: <component>' ('failed' alone when no
    component failed in MLMD but the run recorded an error)."""
    states = {c.state for c in summary.components}
    if "canceled" in states:
        return "interrupted: " + stopped_component(summary)
    if summary.error.startswith(INTERRUPTED + " ("):  # stopped between two components
        return "interrupted"
    if "failed" in states or summary.error:
        failed = failed_component(summary)
        return f"failed: {failed}" if failed else "failed"
    if states & {"running", "new"}:
        return "running"
    return "complete"
