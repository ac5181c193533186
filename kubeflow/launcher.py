"""What open-source KFP's v2 driver and launcher do around one task's container, as ``tfxline
run-compiled`` does it, and no more leniently (kubeflow/pipelines ``backend/src/v2/driver/
resolve.go``, ``backend/src/v2/metadata/client.go``, ``converter.go``; tags 2.0.0 to HEAD):

- parameters reach the task as ``parameterValues`` (plain JSON) only, the schema 2.1.0 form;
- a task's constant parameter is ``runtimeValue.constant``; schema 2.0's ``constantValue`` is
  refused as the driver refuses it ("param runtime value spec of type ... not implemented");
- upstream input artifacts come as the driver builds them from MLMD (``toRuntimeArtifact``):
  name = the artifact's id, uri, metadata = its properties, and a type whose
  ``instanceSchema`` is empty (``GetOutputArtifactsByExecutionId`` does not know it); the
  task's own entrypoint has to restore the type (kubeflow/entrypoint.py);
- output artifacts get their type from the component's outputDefinitions and a URI under the
  pipeline root the run was given.

Also KFP's command-line placeholders, the output metadata file, and importer tasks.
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
    """The ExecutorInput (pipeline_spec.proto) of one task, as JSON, as KFP's driver makes it."""
    plain = {}
    for name, source in body.get("inputs", {}).get("parameters", {}).items():
        plain[name] = parameter_value(source, values, produced, task, name)
    artifacts = {}
    for name, source in body.get("inputs", {}).get("artifacts", {}).items():
        if "taskOutputArtifact" not in source:
            raise UnsupportedSpec(f"task {task} input {name}: only upstream task outputs are supported; recompile with 'tfxline compile' or run it on Vertex / KFP")
        ref = source["taskOutputArtifact"]
        upstream = produced[ref["producerTask"]][ref["outputArtifactKey"]]
        artifacts[name] = {"artifacts": [driver_artifact(upstream)]}
    outputs = {}
    for name, definition in component.get("outputDefinitions", {}).get("artifacts", {}).items():
        outputs[name] = {"artifacts": [{
            "name": f"{run_id}/{task}/{name}", "type": definition["artifactType"],
            "uri": os.path.join(task_dir, name), "metadata": {}}]}
    return {"inputs": {"parameterValues": plain, "artifacts": artifacts},
            "outputs": {"artifacts": outputs, "outputFile": os.path.join(task_dir, OUTPUT_FILE)}}


def driver_artifact(upstream: Mapping[str, Any]) -> Dict[str, Any]:
    """An upstream output as KFP's driver passes it on: read back from MLMD, so its name is an
    artifact id, its metadata the recorded properties, and its type has an empty schema."""
    return {"name": upstream.get("name", ""), "uri": upstream["uri"],
            "metadata": dict(upstream.get("metadata", {})), "type": {"instanceSchema": ""}}


def parameter_value(source: Mapping[str, Any], values, produced, task: str, name: str) -> Any:
    if "componentInputParameter" in source:
        return values[source["componentInputParameter"]]
    if "runtimeValue" in source:
        runtime = source["runtimeValue"]
        if "constant" in runtime:  # schema 2.1
            return runtime["constant"]
        raise UnsupportedSpec(
            f"task {task} parameter {name}: param runtime value spec of type "
            f"{'ConstantValue' if 'constantValue' in runtime else sorted(runtime)} not implemented (KFP's driver "
            "reads schema 2.1.0's runtimeValue.constant only); recompile with 'tfxline compile'")
    raise UnsupportedSpec(f"task {task} parameter {name}: unsupported source {sorted(source)}; recompile with 'tfxline compile' or run it on Vertex / KFP")


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
        raise UnsupportedSpec(f"unsupported placeholder {match.group(0)} in an executor's arguments; recompile with 'tfxline compile' or run it on Vertex / KFP")

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
