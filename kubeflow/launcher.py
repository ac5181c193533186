"""What a KFP v2 launcher does around one task's container, as ``tfxline run-compiled`` does
it: the ExecutorInput (pipeline_spec.proto, as JSON) from the task's parameters and its
upstream tasks' output artifacts; KFP's command-line placeholders; the output artifacts,
updated from the executor's output metadata file; importer tasks.
"""
from __future__ import annotations

import json
import os
import re
from typing import Any, Dict, Mapping

from kubeflow.spec import SpecError

OUTPUT_FILE = "executor_output.json"


class UnsupportedSpec(SpecError):
    """The compiled spec uses a KFP feature that run-compiled's launcher does not implement."""


def build_executor_input(body, component, values, produced, task_dir: str, run_id: str, task: str) -> Dict[str, Any]:
    """The ExecutorInput (pipeline_spec.proto) of one task, as JSON. Parameters go in both
    encodings, ``parameters`` (schema 2.0, typed Values) and ``parameterValues`` (2.1, plain
    JSON), since TFX's entrypoint reads the one matching how the spec was compiled."""
    declared = component.get("inputDefinitions", {}).get("parameters", {})
    typed, plain = {}, {}
    for name, source in body.get("inputs", {}).get("parameters", {}).items():
        value = parameter_value(source, values, produced, task, name)
        kind = declared.get(name, {}).get("parameterType") or declared.get(name, {}).get("type", "STRING")
        typed[name], plain[name] = typed_value(value, kind), value
    artifacts = {}
    input_types = component.get("inputDefinitions", {}).get("artifacts", {})
    for name, source in body.get("inputs", {}).get("artifacts", {}).items():
        if "taskOutputArtifact" not in source:
            raise UnsupportedSpec(f"task {task} input {name}: only upstream task outputs are supported")
        ref = source["taskOutputArtifact"]
        upstream = dict(produced[ref["producerTask"]][ref["outputArtifactKey"]])
        upstream["type"] = input_types.get(name, {}).get("artifactType", upstream.get("type", {}))
        artifacts[name] = {"artifacts": [upstream]}
    outputs = {}
    for name, definition in component.get("outputDefinitions", {}).get("artifacts", {}).items():
        outputs[name] = {"artifacts": [{
            "name": f"{run_id}/{task}/{name}", "type": definition["artifactType"],
            "uri": os.path.join(task_dir, name), "metadata": {}}]}
    return {"inputs": {"parameters": typed, "parameterValues": plain, "artifacts": artifacts},
            "outputs": {"artifacts": outputs, "outputFile": os.path.join(task_dir, OUTPUT_FILE)}}


def parameter_value(source: Mapping[str, Any], values, produced, task: str, name: str) -> Any:
    if "componentInputParameter" in source:
        return values[source["componentInputParameter"]]
    if "runtimeValue" in source:
        runtime = source["runtimeValue"]
        if "constant" in runtime:  # schema 2.1
            return runtime["constant"]
        constant = runtime.get("constantValue", {})  # schema 2.0: {"stringValue": ...}
        return next(iter(constant.values()), None)
    raise UnsupportedSpec(f"task {task} parameter {name}: unsupported source {sorted(source)}")


def typed_value(value: Any, kind: str) -> Dict[str, Any]:
    if kind in ("INT", "NUMBER_INTEGER"):
        return {"intValue": str(int(value))}
    if kind in ("DOUBLE", "NUMBER_DOUBLE"):
        return {"doubleValue": float(value)}
    return {"stringValue": value if isinstance(value, str) else json.dumps(value)}


_PLACEHOLDER = re.compile(r"\{\{\$(.*?)\}\}")
_ARTIFACT_URI = re.compile(r"^\.(inputs|outputs)\.artifacts\['([^']+)'\]\.uri$")
_PARAMETER = re.compile(r"^\.inputs\.parameters\['([^']+)'\]$")


def fill_placeholders(arg: str, executor_input: Mapping[str, Any]) -> str:
    """KFP's command-line placeholders: ``{{$}}`` (the whole ExecutorInput as JSON), input
    parameters, artifact URIs and the output metadata file."""

    def one(match: re.Match) -> str:
        path = match.group(1)
        if path == "":
            return json.dumps(executor_input, sort_keys=True)
        if path == ".outputs.output_file":
            return executor_input["outputs"]["outputFile"]
        if m := _ARTIFACT_URI.match(path):
            return executor_input[m.group(1)]["artifacts"][m.group(2)]["artifacts"][0]["uri"]
        if m := _PARAMETER.match(path):
            value = executor_input["inputs"]["parameterValues"][m.group(1)]
            return value if isinstance(value, str) else json.dumps(value)
        raise UnsupportedSpec(f"unsupported placeholder {match.group(0)} in an executor's arguments")

    return _PLACEHOLDER.sub(one, arg)


def read_outputs(executor_input: Mapping[str, Any]) -> Dict[str, Dict[str, Any]]:
    """The task's output artifacts: what it was given, updated with what its executor wrote
    to the output metadata file (TFX puts the artifacts' properties there)."""
    outputs = {k: dict(v["artifacts"][0]) for k, v in executor_input["outputs"]["artifacts"].items()}
    path = executor_input["outputs"]["outputFile"]
    if os.path.isfile(path):
        with open(path) as f:
            written = json.load(f).get("artifacts", {})
        for key, listed in written.items():
            if key in outputs and listed.get("artifacts"):
                got = listed["artifacts"][0]
                outputs[key]["metadata"] = got.get("metadata", {})
                outputs[key]["uri"] = got.get("uri") or outputs[key]["uri"]
    return outputs


def import_artifact(importer, component, values, run_id: str, task: str) -> Dict[str, Dict[str, Any]]:
    uri_source = importer.get("artifactUri", {})
    if "runtimeParameter" in uri_source:
        uri = values[uri_source["runtimeParameter"]]
    else:
        uri = parameter_value({"runtimeValue": uri_source}, values, {}, task, "artifactUri")
    return {name: {"name": f"{run_id}/{task}/{name}", "type": definition["artifactType"], "uri": uri,
                   "metadata": dict(importer.get("metadata", {}))}
            for name, definition in component.get("outputDefinitions", {}).get("artifacts", {}).items()}
