"""What the report shows, one function per section, read from a run's artifacts.

Every value comes through the library that wrote it: MLMD (the run, its executions and
artifacts), TFX's artifact utilities and TFDV (statistics, anomalies, schema), TensorBoard's
event reader (the training curves), TFMA (metrics per slice, validation), TensorFlow (the
serving signature). A section whose artifact the run did not produce says so instead.
The result is plain JSON-able data; ``render`` turns it into HTML.
"""
from __future__ import annotations

import base64
import json
import math
import os
from typing import Any, Dict, List, Optional

from pipeline import summary as summary_lib

RUN_INFO_FILE = "run.json"
SCHEMA_FILE = "schema.pbtxt"
TOP_VALUES = 3
SIGNATURE = "serving_default"


def load_run_info(run_dir: str) -> Dict[str, Any]:
    path = os.path.join(run_dir, RUN_INFO_FILE)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{run_dir} is not a run directory (no {RUN_INFO_FILE}); "
                                "pass <output>/runs/<run id>, or omit it for the latest run")
    with open(path) as f:
        return json.load(f)


class RunArtifacts:
    """The run's executions and their output artifacts (as TFX Artifacts), by node id."""

    def __init__(self, info: Dict[str, Any]):
        self.info = info
        self.store = summary_lib.open_store(info["metadata_path"])
        self.summary = summary_lib.collect_run(info["metadata_path"], info["pipeline_name"],
                                               info["run_id"])
        self._cache: Dict[tuple, Dict[str, list]] = {}

    def _artifacts(self, node_id: str, events) -> Dict[str, list]:
        if (node_id, events) not in self._cache:
            component = self.summary.component(node_id)
            self._cache[(node_id, events)] = (
                summary_lib.tfx_artifacts(self.store, component.execution_id, events) if component else {})
        return self._cache[(node_id, events)]

    def artifact(self, node_id: str, key: str):
        """The node's output artifact under ``key`` in this run (None if not produced)."""
        found = self._artifacts(node_id, summary_lib.OUTPUT_EVENTS).get(key) or []
        return found[0] if found else None

    def input_artifact(self, node_id: str, key: str):
        """The artifact the node consumed under ``key`` in this run."""
        found = self._artifacts(node_id, summary_lib.INPUT_EVENTS).get(key) or []
        return found[0] if found else None

    def example_gen_id(self) -> str:
        return next((n["id"] for n in self.info["graph"] if n["id"].endswith("ExampleGen")), "")

    def execution(self, node_id: str):
        component = self.summary.component(node_id)
        return self.store.get_executions_by_id([component.execution_id])[0] if component else None


def collect(run_dir: str) -> Dict[str, Any]:
    info = load_run_info(run_dir)
    run = RunArtifacts(info)
    return {
        "run": {k: info.get(k) for k in ("pipeline_name", "run_id", "started", "wall_seconds", "error",
                                          "output_root", "config_name")},
        "pipeline": pipeline_section(run),
        "data": data_section(run),
        "training": training_section(run),
        "evaluation": evaluation_section(run),
        "serving": serving_section(run),
        "lineage": lineage_section(run),
    }


# -- Pipeline ---------------------------------------------------------------------------

def pipeline_section(run: RunArtifacts) -> Dict[str, Any]:
    """The component graph (from the compiled pipeline) with each node's MLMD state."""
    nodes, level = [], {}
    for node in run.info["graph"]:  # topological order
        level[node["id"]] = 1 + max((level[u] for u in node["upstream"]), default=-1)
        component = run.summary.component(node["id"])
        nodes.append({
            "id": node["id"], "upstream": node["upstream"], "level": level[node["id"]],
            "state": component.state if component else "not run",
            "seconds": round(component.seconds, 1) if component else None,
            "cached": bool(component and component.state == "cached"),
        })
    failed = [n["id"] for n in nodes if n["state"] == "failed"]
    return {"nodes": nodes, "failed": failed,
            "complete": all(n["state"] in ("complete", "cached") for n in nodes)}


# -- Data -------------------------------------------------------------------------------

def data_section(run: RunArtifacts) -> Dict[str, Any]:
    stats = run.artifact("StatisticsGen", "statistics")
    section: Dict[str, Any] = {"splits": [], "examples": {}, "features": [], "anomalies": [], "schema_path": "",
                               "schema_text": "", "available": stats is not None}
    schema = run.artifact("ImportSchemaGen", "schema") or run.artifact("SchemaGen", "schema")
    if schema is not None:
        import tensorflow_data_validation as tfdv
        from google.protobuf import text_format

        section["schema_path"] = os.path.join(schema.uri, SCHEMA_FILE)
        section["schema_text"] = text_format.MessageToString(tfdv.load_schema_text(section["schema_path"]))
    anomalies = run.artifact("ExampleValidator", "anomalies")
    if anomalies is not None:
        section["anomalies"] = read_anomalies(anomalies)
    if stats is None:
        return section
    from tfx.components.statistics_gen import stats_artifact_utils
    from tfx.types import artifact_utils

    splits = artifact_utils.decode_split_names(stats.split_names)
    section["splits"] = splits
    by_feature: Dict[str, Dict[str, Any]] = {}
    for split in splits:
        dataset = stats_artifact_utils.load_statistics(stats, split).proto().datasets[0]
        section["examples"][split] = int(dataset.num_examples)
        for feature in dataset.features:
            name = feature.path.step[0] if feature.path.step else feature.name
            entry = by_feature.setdefault(name, {"name": name, "splits": {}})
            entry["splits"][split] = feature_stats(feature, dataset.num_examples)
            entry["type"] = entry["splits"][split]["type"]
    flagged = {a["feature"] for a in section["anomalies"]}
    for name in sorted(by_feature):
        by_feature[name]["anomalous"] = name in flagged
        section["features"].append(by_feature[name])
    return section


def feature_stats(feature, num_examples: int) -> Dict[str, Any]:
    """count / missing % and min-mean-max or top values, and a histogram, for one split.

    Missing counts the examples without a value: absent, or present with no value (how
    CsvExampleGen writes an empty CSV cell), so ``count`` is the examples with a value.
    """
    from tensorflow_metadata.proto.v0 import statistics_pb2

    kind = feature.WhichOneof("stats")
    common = getattr(feature, kind).common_stats if kind in ("num_stats", "string_stats") else None
    with_value = examples_with_a_value(common) if common is not None else 0
    out: Dict[str, Any] = {
        "type": statistics_pb2.FeatureNameStatistics.Type.Name(feature.type).lower(),
        "count": int(with_value),
        "missing_pct": round(100.0 * (num_examples - with_value) / num_examples, 2) if num_examples else 0.0,
        "histogram": [],
    }
    if kind == "num_stats":
        s = feature.num_stats
        out.update(min=s.min, mean=s.mean, max=s.max)
        standard = [h for h in s.histograms if h.type == statistics_pb2.Histogram.STANDARD]
        if standard:
            out["histogram"] = [{"low": b.low_value, "high": b.high_value, "count": b.sample_count}
                                for b in standard[0].buckets]
    elif kind == "string_stats":
        s = feature.string_stats
        out["unique"] = s.unique
        out["top_values"] = [{"value": v.value, "count": v.frequency} for v in s.top_values[:TOP_VALUES]]
        out["histogram"] = [{"label": b.label, "count": b.sample_count}
                            for b in s.rank_histogram.buckets[:20]]
    return out


def examples_with_a_value(common) -> int:
    """TFDV counts a feature present with an empty value list as not missing. For a feature
    with at most one value per example (every CSV column) the examples with a value are
    exactly ``tot_num_values``; for multi-valued features, the examples where it is present."""
    if common.max_num_values <= 1:
        return int(common.tot_num_values)
    return int(common.num_non_missing)


def read_anomalies(artifact) -> List[Dict[str, str]]:
    from tensorflow_data_validation.utils import anomalies_util
    from tfx.types import artifact_utils

    found = []
    for split in artifact_utils.decode_split_names(artifact.split_names):
        path = os.path.join(artifact_utils.get_split_uri([artifact], split), "SchemaDiff.pb")
        anomalies = anomalies_util.load_anomalies_binary(path)
        for feature, info in sorted(anomalies.anomaly_info.items()):
            found.append({"split": split, "feature": feature, "short": info.short_description,
                          "description": info.description})
        if anomalies.HasField("dataset_anomaly_info"):
            info = anomalies.dataset_anomaly_info
            found.append({"split": split, "feature": "(dataset)", "short": info.short_description,
                          "description": info.description})
    return found


# -- Training ---------------------------------------------------------------------------

def training_section(run: RunArtifacts) -> Dict[str, Any]:
    model_run = run.artifact("Trainer", "model_run")
    section: Dict[str, Any] = {"available": model_run is not None, "curves": {}, "settings": {},
                               "logdir": model_run.uri if model_run else ""}
    if model_run is None:
        return section
    section["curves"] = tensorboard_scalars(model_run.uri)
    info_path = os.path.join(model_run.uri, "training_run.json")
    if os.path.isfile(info_path):
        with open(info_path) as f:
            info = json.load(f)
        section["settings"] = {k: info.get(k) for k in (
            "strategy", "replicas", "precision", "examples_per_second", "mode", "epochs", "steps",
            "global_batch", "gradient_accumulation_steps", "jit_compile", "train_seconds")}
    return section


def tensorboard_scalars(logdir: str) -> Dict[str, Dict[str, List[List[float]]]]:
    """{tag without 'epoch_': {'train' | 'validation': [[epoch, value], ...]}} from the
    TensorBoard event files the Trainer's Keras callback wrote."""
    from tensorboard.backend.event_processing import event_accumulator
    import tensorflow as tf

    curves: Dict[str, Dict[str, List[List[float]]]] = {}
    for split in ("train", "validation"):
        path = os.path.join(logdir, split)
        if not os.path.isdir(path):
            continue
        acc = event_accumulator.EventAccumulator(path, size_guidance={event_accumulator.TENSORS: 0,
                                                                      event_accumulator.SCALARS: 0})
        acc.Reload()
        tags = acc.Tags()
        for tag in tags.get("tensors", []):
            if not tag.startswith("epoch_"):
                continue
            points = [[e.step, float(tf.make_ndarray(e.tensor_proto))] for e in acc.Tensors(tag)]
            curves.setdefault(tag[len("epoch_"):], {})[split] = sorted(points)
        for tag in tags.get("scalars", []):
            if tag.startswith("epoch_"):
                points = [[e.step, float(e.value)] for e in acc.Scalars(tag)]
                curves.setdefault(tag[len("epoch_"):], {})[split] = sorted(points)
    return curves


# -- Evaluation -------------------------------------------------------------------------

def evaluation_section(run: RunArtifacts) -> Dict[str, Any]:
    evaluation = run.artifact("Evaluator", "evaluation")
    s = run.summary
    section: Dict[str, Any] = {"available": evaluation is not None, "overall": {}, "baseline_diff": {},
                               "slices": [], "thresholds": [], "blessed": s.blessed,
                               "failed_thresholds": list(s.failed_thresholds), "slice_metric": "",
                               "slices_undefined": [], "baseline_uri": ""}
    if evaluation is None:
        return section
    metrics = load_metrics(evaluation.uri)
    section["overall"] = metrics.get("overall", {}).get("value", {})
    section["baseline_diff"] = metrics.get("overall", {}).get("diff", {})
    baseline = run.input_artifact("Evaluator", "baseline_model")
    section["baseline_uri"] = baseline.uri if baseline is not None else ""
    metric, higher_is_better = _slice_metric(section["overall"])
    section["slice_metric"] = metric
    slices, undefined = [], []
    for name, m in metrics.items():
        if name == "overall" or metric not in m["value"]:
            continue
        # AUC is undefined on a slice whose labels are all one class (TFMA reports 0 there).
        one_class = metric == "auc" and not 0.0 < (m["value"].get("mean_label") or 0.0) < 1.0
        (undefined if one_class or m["value"][metric] is None else slices).append(
            {"slice": name, "metrics": m["value"]})
    slices.sort(key=lambda x: x["metrics"][metric] * (1 if higher_is_better else -1))  # worst first
    section["slices"], section["slices_undefined"] = slices, undefined
    section["thresholds"] = configured_thresholds(run.execution("Evaluator"))
    return section


def load_metrics(evaluation_uri: str) -> Dict[str, Dict[str, Dict[str, float]]]:
    """{slice: {'value': {metric: v}, 'diff': {metric: candidate - baseline}}} for the
    candidate model, from TFMA's metrics output."""
    import tensorflow_model_analysis as tfma

    out: Dict[str, Dict[str, Dict[str, float]]] = {}
    for per_slice in tfma.load_metrics(evaluation_uri):
        name = summary_lib.slice_name(per_slice.slice_key)
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


def _slice_metric(overall: Dict[str, float]):
    for name, higher in (("auc", True), ("accuracy", True), ("loss", False)):
        if name in overall:
            return name, higher
    return "example_count", True


def configured_thresholds(execution) -> List[Dict[str, Any]]:
    """The EvalConfig's thresholds, as the Evaluator ran with them (its MLMD exec property)."""
    if execution is None or "eval_config" not in execution.custom_properties:
        return []
    from google.protobuf import json_format
    from tensorflow_model_analysis.proto import config_pb2

    config = json_format.Parse(execution.custom_properties["eval_config"].string_value,
                               config_pb2.EvalConfig(), ignore_unknown_fields=True)
    out = []
    for spec in config.metrics_specs:
        for metric in spec.metrics:
            thresholds = [t.threshold for t in metric.per_slice_thresholds]
            if metric.HasField("threshold"):
                thresholds.append(metric.threshold)
            name = json.loads(metric.config).get("name", "") if metric.config else ""
            for t in thresholds:
                row = {"metric": name or metric.class_name}
                if t.value_threshold.HasField("lower_bound"):
                    row["rule"] = f">= {t.value_threshold.lower_bound.value:g}"
                elif t.value_threshold.HasField("upper_bound"):
                    row["rule"] = f"<= {t.value_threshold.upper_bound.value:g}"
                if t.HasField("change_threshold"):
                    row["change"] = f"{t.change_threshold.absolute.value:+g} vs baseline"
                out.append(row)
    return out


# -- Serving ----------------------------------------------------------------------------

def serving_section(run: RunArtifacts) -> Dict[str, Any]:
    s = run.summary
    pushed = run.artifact("Pusher", "pushed_model")
    model = run.artifact("Trainer", "model")
    section: Dict[str, Any] = {"pushed": bool(s.pushed), "destination": s.pushed_to, "reason": "",
                               "inputs": {}, "outputs": {}, "request": "", "curl": "",
                               "model_name": run.info.get("model_name", "")}
    if not s.pushed:
        section["reason"] = _not_pushed_reason(run, pushed)
    model_dir = s.pushed_to if s.pushed else (os.path.join(model.uri, "Format-Serving") if model else "")
    if not model_dir or not os.path.isdir(model_dir):
        return section
    section["signature_from"] = model_dir
    section["inputs"], section["outputs"] = signature_io(model_dir)
    request = example_request(run, list(section["inputs"]))
    if request:
        section["request"] = json.dumps(request, indent=2)
        name = section["model_name"] or "MODEL"
        section["curl"] = (f"curl -X POST http://localhost:8501/v1/models/{name}:predict "
                           "-H 'Content-Type: application/json' -d @request.json")
    return section


def _not_pushed_reason(run: RunArtifacts, pushed) -> str:
    s = run.summary
    if s.blessed is False:
        return "not blessed: " + ("; ".join(s.failed_thresholds) or "the Evaluator did not bless the model")
    if pushed is not None:
        return "the Pusher did not push this model (already pushed by an earlier run)"
    failed = [c.node_id for c in s.components if c.state == "failed"]
    if failed:
        return f"the run failed at {failed[0]}, before the Pusher"
    return "the Pusher did not run"


def signature_io(model_dir: str):
    import tensorflow as tf

    signature = tf.saved_model.load(model_dir).signatures[SIGNATURE]
    spec = lambda t: {"dtype": t.dtype.name, "shape": [d if d is not None else -1 for d in t.shape.as_list()]}
    inputs = {name: spec(t) for name, t in signature.structured_input_signature[1].items()}
    outputs = {name: spec(t) for name, t in signature.structured_outputs.items()}
    return inputs, outputs


def example_request(run: RunArtifacts, input_names: List[str]) -> Optional[Dict[str, Any]]:
    """A TF Serving REST :predict body for one eval example, serving columns only."""
    examples = run.artifact(run.example_gen_id(), "examples")
    if examples is None or len(input_names) != 1:
        return None
    import tensorflow as tf
    from tfx.types import artifact_utils

    splits = artifact_utils.decode_split_names(examples.split_names)
    split_dir = artifact_utils.get_split_uri([examples], "eval" if "eval" in splits else splits[-1])
    files = sorted(tf.io.gfile.glob(os.path.join(split_dir, "*")))
    if not files:
        return None
    compression = "GZIP" if files[0].endswith(".gz") else ""
    record = next(iter(tf.data.TFRecordDataset(files[:1], compression_type=compression).take(1)), None)
    if record is None:
        return None
    example = tf.train.Example.FromString(record.numpy())
    serving = set(run.info.get("serving_columns") or example.features.feature.keys())
    for name in list(example.features.feature.keys()):
        if name not in serving:
            del example.features.feature[name]
    encoded = base64.b64encode(example.SerializeToString()).decode()
    return {"signature_name": SIGNATURE, "instances": [{input_names[0]: {"b64": encoded}}]}


# -- Lineage ----------------------------------------------------------------------------

def lineage_section(run: RunArtifacts) -> List[Dict[str, Any]]:
    """Data -> transform graph -> model -> blessing -> pushed model, each with its URI."""
    chain = [("Data (examples)", run.example_gen_id(), "examples"),
             ("Transform graph", "Transform", "transform_graph"),
             ("Model", "Trainer", "model"),
             ("Blessing", "Evaluator", "blessing"),
             ("Pushed model", "Pusher", "pushed_model")]
    out = []
    for label, node, key in chain:
        artifact = run.artifact(node, key) if node else None
        row = {"label": label, "producer": node, "uri": artifact.uri if artifact else "",
               "id": artifact.id if artifact else None, "type": artifact.type_name if artifact else ""}
        if key == "pushed_model" and run.summary.pushed:
            row["destination"] = run.summary.pushed_to
        out.append(row)
    return out
