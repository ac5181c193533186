"""The Serving section (push outcome, signature, a TF Serving REST request) and the
Lineage section (data -> transform graph -> model -> blessing -> pushed model)."""
from __future__ import annotations

import base64
import json
import os
from typing import Any, Dict, List, Optional

from tfxline.runs.report.artifacts import RunArtifacts
from tfxline.serving import storage
from tfxline.trainer.export import SERVING_SIGNATURE


def serving_section(run: RunArtifacts) -> Dict[str, Any]:
    s = run.summary
    pushed = run.artifact("Pusher", "pushed_model")
    model = run.artifact("Trainer", "model")
    section: Dict[str, Any] = {"pushed": bool(s.pushed), "destination": s.pushed_to, "reason": "",
                               "inputs": {}, "outputs": {}, "request": "", "curl": "",
                               "model_name": run.info.get("model_name", "")}
    if not s.pushed:
        section["reason"] = _not_pushed_reason(run, pushed)
    section["deleted"] = bool(not s.pushed and model is not None and run.deleted(model))
    model_dir = s.pushed_to if s.pushed else (storage.join(model.uri, "Format-Serving") if model else "")
    if not model_dir or not storage.isdir(model_dir):
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
    """The serving signature's inputs and outputs (dtype, shape; -1 unknown), read from the
    SavedModel's saved_model.pb: what tf.saved_model.load's signature says, without loading
    (and tracing) the model, about a second of every run's report."""
    import tensorflow as tf
    from tensorflow.core.protobuf import saved_model_pb2

    saved = saved_model_pb2.SavedModel()
    with tf.io.gfile.GFile(os.path.join(model_dir, "saved_model.pb"), "rb") as f:
        saved.ParseFromString(f.read())
    signature = saved.meta_graphs[0].signature_def[SERVING_SIGNATURE]
    spec = lambda info: {"dtype": tf.as_dtype(info.dtype).name, "shape": [d.size for d in info.tensor_shape.dim]}
    return ({name: spec(signature.inputs[name]) for name in sorted(signature.inputs)},
            {name: spec(signature.outputs[name]) for name in sorted(signature.outputs)})


def example_request(run: RunArtifacts, input_names: List[str]) -> Optional[Dict[str, Any]]:
    """A TF Serving REST :predict body for one eval example, serving columns only."""
    examples = run.artifact(run.example_gen_id(), "examples")
    if examples is None or run.deleted(examples) or len(input_names) != 1:
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
    return {"signature_name": SERVING_SIGNATURE, "instances": [{input_names[0]: {"b64": encoded}}]}


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
               "id": artifact.id if artifact else None, "type": artifact.type_name if artifact else "",
               "deleted": bool(artifact and run.deleted(artifact))}
        if key == "pushed_model" and run.summary.pushed:
            row["destination"] = run.summary.pushed_to
        out.append(row)
    return out
