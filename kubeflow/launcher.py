"""What open-source KFP's v2 driver and launcher do around one task's container, as ``tfxline
run-compiled`` does it, and no more leniently, for each backend release from 2.0 to 2.17
(kubeflow/kfp_backends.py: what differs between them). Read from kubeflow/pipelines at the tags
each function cites (backend/src/v2/driver/driver.go ``provisionOutputs``,
backend/src/v2/component/launcher_v2.go, backend/src/v2/metadata/client.go and converter.go):

- parameters reach the task as ``parameterValues`` (plain JSON) only, the schema 2.1.0 form, with
  the component's declared defaults added for any not given (the launcher's ``addDefaultParams``);
  schema 2.0's ``constantValue`` is refused as the driver refuses it;
- upstream input artifacts come as the driver builds them from MLMD (``toRuntimeArtifact``): named
  by their MLMD id, their custom properties as metadata, and a type whose ``instanceSchema`` is
  empty; the task's own entrypoint has to restore the type (kubeflow/entrypoint.py);
- output artifacts, as ``provisionOutputs`` makes them for the release (``executor-logs`` from
  2.5, which no component declares), output parameters' files under ``/tmp/kfp/outputs/``;
- what the executor writes back to the output metadata file is read as the launcher reads it
  (protojson, which refuses unknown fields) and merged into the outputs (``mergeRuntimeArtifacts``).

Also KFP's command-line placeholders and importer tasks.
"""
from __future__ import annotations

import json
import os
import posixpath
import re
import uuid
from decimal import Decimal
from typing import Any, Callable, Dict, Mapping, Optional

# the releases, here too where run-compiled and the CLI find them
from tfxline.kubeflow.kfp_backends import KFP_VERSIONS, NEWEST, Backend, UnsupportedSpec, backend  # noqa: F401

# launcher_v2.go:526 at 2.17.0 (:375 at 2.0.0): component.OutputMetadataFilepath.
OUTPUT_METADATA_FILEPATH = "/tmp/kfp_outputs/output_metadata.json"
OUTPUT_PARAMETERS_DIR = "/tmp/kfp/outputs"  # driver.go:796 at 2.17.0, :1064 at 2.0.0
EXECUTOR_LOGS = "executor-logs"  # driver.go:761 at 2.17.0, :2031 at 2.5.0, :753 at HEAD
GENERIC_TYPE = "system.Artifact"


class BadExecutorOutput(ValueError):
    """A task wrote an output metadata file KFP's launcher would refuse (the task fails)."""


def generate_output_uri(root: str, *paths: str) -> str:
    """metadata.GenerateOutputURI (client.go:391-406 at 2.17.0): the root without its query string,
    then the joined path (not path.Join on the root: that would clean ``gs://`` to ``gs:/``)."""
    root = root.split("?")[0] if root.count("?") == 1 else root
    return f"{root.rstrip('/')}/{posixpath.join(*paths)}"


def local_path_for_uri(uri: str) -> Optional[str]:
    """component.LocalPathForURI (launcher_v2.go:1239-1253 at 2.17.0); None for a scheme it does
    not know (a local path among them)."""
    for scheme, local in (("gs://", "/gcs/"), ("minio://", "/minio/"), ("s3://", "/s3/")):
        if uri.startswith(scheme):
            return local + uri[len(scheme):]
    return None


def session_info(pipeline_root: str) -> str:
    """The ``store_session_info`` custom property as the launcher records it: json.Marshal of the
    root's SessionInfo with no kfp-launcher ``providers`` entry, ``fromEnv`` (config/gcs.go:70-75
    and s3.go:90-95 at 2.17.0; gcs.go:69-74 at 2.3.0). A local root (run-compiled's) has no
    provider in KFP: it records what the gs:// root it stands in for records. (A minio:// root,
    whose default session names the release's own MinIO service, is not modelled: this
    pipeline cannot write one, tf.io.gfile has no minio:// scheme.)"""
    provider = "s3" if pipeline_root.startswith("s3://") else "gs"
    return json.dumps({"Provider": provider, "Params": {"fromEnv": "true"}}, separators=(",", ":"))


def build_executor_input(body, component, values, produced, *, run_root: str, task: str,
                         kfp_version: str = NEWEST, salt: str = "") -> Dict[str, Any]:
    """The ExecutorInput (pipeline_spec.proto) one task's container gets, as JSON, as KFP's driver
    makes it and its launcher hands it on (``{{$}}``). ``run_root``: the run's pipeline root,
    ``<pipeline root>/<pipeline name>/<run id>`` (client.go:420 at 2.17.0); ``produced``: the
    upstream tasks' recorded outputs (``record_artifacts``); ``salt``: the output URI salt (a
    new uuid4 where the release uses one, as driver.go does, if not given)."""
    release = backend(kfp_version)
    plain = {}
    for name, source in body.get("inputs", {}).get("parameters", {}).items():
        plain[name] = parameter_value(source, values, produced, task, name)
    # launcher_v2.go addDefaultParams (:1310-1333 at 2.17.0, :742 at 2.0.0): declared defaults
    # reach the command (executeV2 compiles the placeholders from that copy, :425-431).
    for name, declared in component.get("inputDefinitions", {}).get("parameters", {}).items():
        if name not in plain and "defaultValue" in declared:
            plain[name] = declared["defaultValue"]
    artifacts = {}
    for name, source in body.get("inputs", {}).get("artifacts", {}).items():
        if "taskOutputArtifact" not in source:
            raise UnsupportedSpec(f"task {task} input {name}: only upstream task outputs are supported; "
                                  "recompile with 'tfxline compile' or run it on Vertex / KFP")
        ref = source["taskOutputArtifact"]
        upstream = produced[ref["producerTask"]][ref["outputArtifactKey"]]
        artifacts[name] = {"artifacts": [driver_artifact(upstream)]}
    inputs: Dict[str, Any] = {}
    if plain:
        inputs["parameterValues"] = plain
    if artifacts:
        inputs["artifacts"] = artifacts
    return {"inputs": inputs, "outputs": provision_outputs(component, release, run_root, task, salt)}


def provision_outputs(component, release: Backend, run_root: str, task: str, salt: str = "") -> Dict[str, Any]:
    """driver.go provisionOutputs at the release (2.0.0:1043, 2.4.0:1576, 2.5.0:2010, 2.15.0:658,
    2.17.0:741), then the 2.17 launcher's executor-logs retry suffix. Fields protojson leaves
    out (empty name, no metadata, empty maps) are left out."""
    declared = dict(component.get("outputDefinitions", {}).get("artifacts", {}))
    if release.executor_logs:
        declared[EXECUTOR_LOGS] = {"artifactType": {"schemaTitle": GENERIC_TYPE}}
    if release.output_uri_salt:
        salt = salt or str(uuid.uuid4())
        task_root = generate_output_uri(run_root, task, salt)
    else:
        task_root = generate_output_uri(run_root, task)
    artifacts = {}
    for name, definition in declared.items():
        artifact: Dict[str, Any] = {"uri": generate_output_uri(task_root, name), "type": definition["artifactType"]}
        if release.output_names_and_task_root_file:
            artifact["name"] = name
        if "metadata" in definition:
            artifact["metadata"] = definition["metadata"]
        if name == EXECUTOR_LOGS and release.logs_retry_suffix:
            artifact["uri"] += "-" + os.environ.get("KFP_RETRY_INDEX", "0")
        artifacts[name] = {"artifacts": [artifact]}
    output_file = OUTPUT_METADATA_FILEPATH
    task_local_root = local_path_for_uri(task_root)
    if release.output_names_and_task_root_file and task_local_root:
        output_file = posixpath.join(task_local_root, "output_metadata.json")
    outputs: Dict[str, Any] = {"outputFile": output_file}
    if artifacts:
        outputs["artifacts"] = artifacts
    parameters = {name: {"outputFile": f"{OUTPUT_PARAMETERS_DIR}/{name}"}
                  for name in component.get("outputDefinitions", {}).get("parameters", {})}
    if parameters:
        outputs["parameters"] = parameters
    return outputs


def driver_artifact(upstream: Mapping[str, Any]) -> Dict[str, Any]:
    """An upstream output as KFP's driver passes it on: read back from MLMD (converter.go:181-214
    at 2.17.0: name = the MLMD id, metadata = its properties), typed with the schema MLMD did not
    give back (client.go:245-259 and :1144 at 2.17.0, :166 and :775 at 2.0.0: "TODO(Bobgy):
    figure out how to get schema")."""
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
    raise UnsupportedSpec(f"task {task} parameter {name}: unsupported source {sorted(source)}; "
                          "recompile with 'tfxline compile' or run it on Vertex / KFP")


_PLACEHOLDER = re.compile(r"\{\{\$(.*?)\}\}")
_ARTIFACT_URI = re.compile(r"^\.(inputs|outputs)\.artifacts\['([^']+)'\]\.uri$")
_PARAMETER = re.compile(r"^\.inputs\.parameters\['([^']+)'\]$")
_OUTPUT_PARAMETER = re.compile(r"^\.outputs\.parameters\['([^']+)'\]\.output_file$")


def fill_placeholders(arg: str, executor_input: Mapping[str, Any]) -> str:
    """KFP's command-line placeholders (launcher_v2.go compileCmdAndArgs and getPlaceholders,
    :1051-1173 at 2.17.0): ``{{$}}`` (the whole ExecutorInput as JSON), input parameters,
    artifact URIs, output parameter files and the output metadata file."""

    def one(match: re.Match) -> str:
        path = match.group(1)
        if path == "":
            return json.dumps(executor_input, sort_keys=True)
        if path == ".outputs.output_file":
            return executor_input["outputs"]["outputFile"]
        if m := _ARTIFACT_URI.match(path):
            return executor_input[m.group(1)]["artifacts"][m.group(2)]["artifacts"][0]["uri"]
        if m := _PARAMETER.match(path):
            return placeholder_text(executor_input["inputs"]["parameterValues"][m.group(1)])
        if m := _OUTPUT_PARAMETER.match(path):
            return executor_input["outputs"]["parameters"][m.group(1)]["outputFile"]
        raise UnsupportedSpec(f"unsupported placeholder {match.group(0)} in an executor's arguments; "
                              "recompile with 'tfxline compile' or run it on Vertex / KFP")

    return _PLACEHOLDER.sub(one, arg)


def placeholder_text(value: Any) -> str:
    """A parameter as getPlaceholders writes it (launcher_v2.go:1124-1146 at 2.17.0): a string as
    is, a number as strconv.FormatFloat(v, 'f', -1, 64) (shortest, never an exponent), a bool as
    true/false, a list or struct as JSON."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        text = format(Decimal(repr(float(value))), "f")
        return text[:-2] if text.endswith(".0") else text
    return json.dumps(value)


def read_outputs(executor_input: Mapping[str, Any], release: Backend,
                 host_path: Callable[[str], str] = lambda path: path) -> Dict[str, Dict[str, Any]]:
    """The task's output artifacts after its command: what it was given, merged with what its
    executor wrote to the output metadata file. ``host_path`` maps the file's path in the
    container to where this process reads it."""
    outputs = {k: json.loads(json.dumps(v["artifacts"][0]))
               for k, v in executor_input["outputs"].get("artifacts", {}).items()}
    path = host_path(executor_input["outputs"]["outputFile"])
    written = executor_output(path).get("artifacts", {}) if os.path.isfile(path) else {}
    for key, listed in written.items():
        if key not in outputs or not listed.get("artifacts"):
            continue
        if key == EXECUTOR_LOGS and release.logs_retry_suffix:
            continue  # launcher-managed from 2.17 (launcher_v2.go:802-807 at 2.17.0)
        merge_runtime_artifact(listed["artifacts"][0], outputs[key])
    return outputs


def executor_output(path: str) -> Dict[str, Any]:
    """The output metadata file read as the launcher reads it: protojson.Unmarshal into an
    ExecutorOutput (launcher_v2.go:1208-1237 at 2.17.0), which refuses what the message does not
    have; here kfp-pipeline-spec's ExecutorOutput with protobuf's parser, as strict."""
    from google.protobuf import json_format
    from kfp.pipeline_spec import pipeline_spec_pb2

    with open(path) as f:
        text = f.read()
    try:
        json_format.Parse(text, pipeline_spec_pb2.ExecutorOutput())
    except json_format.ParseError as e:
        raise BadExecutorOutput(f"{path} is not an ExecutorOutput KFP's launcher reads (failed to unmarshall "
                              f"ExecutorOutput: {e}); the task's executor must write pipeline_spec.proto's "
                              "ExecutorOutput JSON") from None
    return json.loads(text)


def merge_runtime_artifact(src: Mapping[str, Any], dst: Dict[str, Any]) -> None:
    """mergeRuntimeArtifacts (launcher_v2.go:1188-1206 at 2.17.0): a non-empty URI replaces the
    given one, metadata fields are added over the given ones, a custom path replaces."""
    if src.get("uri"):
        dst["uri"] = src["uri"]
    if "metadata" in src:
        dst["metadata"] = {**dst.get("metadata", {}), **src["metadata"]}
    if src.get("customPath"):
        dst["customPath"] = src["customPath"]


def record_artifacts(outputs: Mapping[str, Mapping[str, Any]], release: Backend, pipeline_root: str,
                     next_id: Callable[[], int]) -> Dict[str, Dict[str, Any]]:
    """The outputs as the launcher records them in MLMD and the driver reads them back for the
    tasks downstream (RecordArtifact, client.go:1214-1262 at 2.17.0): metadata as custom
    properties, ``display_name`` = the output key unless set (:1234-1237; 2.0.0:865-868),
    ``store_session_info`` unless set (:1243-1250; 2.3.0:924-931), and an MLMD id as name."""
    recorded = {}
    for key, artifact in outputs.items():
        metadata = dict(artifact.get("metadata", {}))
        metadata.setdefault("display_name", key)
        if release.store_session_info:
            metadata.setdefault("store_session_info", session_info(pipeline_root))
        recorded[key] = {**artifact, "name": str(next_id()), "metadata": metadata}
    return recorded


def import_artifact(importer, component, values, task: str, release: Backend, pipeline_root: str,
                    next_id: Callable[[], int]) -> Dict[str, Dict[str, Any]]:
    """An importer task's artifact as importer_launcher.go records it: the importer's metadata and,
    from 2.3, ``store_session_info`` (:294 at 2.17.0, :263 at 2.3.0); no display_name."""
    uri_source = importer.get("artifactUri", {})
    if "runtimeParameter" in uri_source:
        uri = values[uri_source["runtimeParameter"]]
    else:
        uri = parameter_value({"runtimeValue": uri_source}, values, {}, task, "artifactUri")
    out = {}
    for name, definition in component.get("outputDefinitions", {}).get("artifacts", {}).items():
        metadata = dict(importer.get("metadata", {}))
        if release.store_session_info:
            metadata["store_session_info"] = session_info(pipeline_root)
        out[name] = {"name": str(next_id()), "type": definition["artifactType"], "uri": uri, "metadata": metadata}
    return out
