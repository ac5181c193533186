"""The command of every TFX task in the compiled pipeline (kubeflow/compile.py sets it).

It is TFX's own container entrypoint (``python -m
tfx.orchestration.kubeflow.v2.container.kubeflow_v2_run_executor``, what TFX compiles by
default), run with the same arguments, with three changes:

1. Input artifact types restored from the spec. Open-source KFP's driver hands a task its
   upstream artifacts with an empty ``type.instanceSchema`` (kubeflow/pipelines
   ``backend/src/v2/metadata/client.go``, ``GetOutputArtifactsByExecutionId``: "TODO(Bobgy):
   figure out how to get schema", :775 at 2.0.0, :1144 at 2.17.0); TFX's entrypoint
   deserialises the artifact class from that schema and fails (``'NoneType' object has no
   attribute 'get'``, tensorflow/tfx#7768). The compiled container already carries the
   component's inputs spec (``--json_serialized_inputs_spec_args``, schema 2.1.0); an input
   without a type gets the one declared there. So does an input typed as KFP's generic
   ``system.Artifact``, which is how kfp.local's DockerRunner (kfp 2.17,
   ``kfp/local/executor_input_utils.py`` ``dsl_artifact_to_artifact_list``) passes every
   upstream artifact on ("No module named 'system'" in TFX's entrypoint otherwise). Vertex AI
   fills the types itself: nothing changes there.
2. Outputs that are not the component's left out. From KFP 2.5 the driver gives every task one
   more output, ``executor-logs``, typed ``system.Artifact`` (backend/src/v2/driver/driver.go
   ``provisionOutputs``: :2031 at 2.5.0, :761 at 2.17.0, :753 at HEAD), where the launcher tees
   the command's output and which it uploads and records itself (component/launcher_v2.go
   ``getLogWriter`` and ``uploadOutputArtifacts``, :632 and :778 at 2.17.0). TFX's entrypoint
   parses the outputs as it parses the inputs, so every task failed at once with ``ImportError:
   Could not import system.Artifact`` (TFX 1.16 and 1.21 alike:
   ``kubeflow_v2_run_executor._run_executor`` calls ``parse_raw_artifact_dict`` on
   ``executor_input.outputs.artifacts``). TFX compiles each output it declares with an
   ``instanceSchema`` titled with its artifact class; an output named ``executor-logs``, or one
   with no type or one of KFP's generic ``system.*`` types, is not one of them and is taken out
   of the ExecutorInput TFX reads (one line on stderr says which). The output metadata file TFX
   writes back then holds the component's outputs only: the launcher merges each of those into
   its own list (``mergeRuntimeArtifacts``) and keeps its entry for the rest as it made it.
3. ``patches.tfx_packaging.no_sdist_for_local_runners()`` (in ``patches.executor``): without it, every Beam
   component's pod (CsvExampleGen, StatisticsGen, Transform, Evaluator) copied the image's TFX
   install and built an sdist of it (TFX's ``make_beam_dependency_flags``) for Beam workers to
   install, about 3.5 s each, before running its Beam pipeline in the pod itself, where no
   worker installs anything. With a remote runner in ``runtime.beam_args`` (Dataflow, Flink,
   Spark, Portable) TFX's packaging runs as before. That and the rest of
   ``patches.executor`` (one trace of the preprocessing_fn for TFX's four inspections of
   it: patches/tft_inspection.py) are what a local run's executors get too. The task's log says
   ``runtime patches: on`` (or ``off``: ``TFXLINE_RUNTIME_PATCHES=off`` in the task's environment).

A compiled pipeline that names this command needs an image with this project installed
(kubeflow/Dockerfile), which every task's image is already.
"""
from __future__ import annotations

import json
import re
import runpy
import sys
from typing import Any, Dict, List

TFX_ENTRYPOINT = "tfx.orchestration.kubeflow.v2.container.kubeflow_v2_run_executor"
COMMAND = ("python", "-m", "tfxline.kubeflow.entrypoint")  # this module
INVOCATION_FLAG = "--json_serialized_invocation_args"
INPUTS_SPEC_FLAG = "--json_serialized_inputs_spec_args"
EXECUTOR_LOGS = "executor-logs"  # the output KFP's driver adds from 2.5 (see above)


def _flag_value(argv: List[str], flag: str):
    """(index of the value, value) of ``flag VALUE`` or ``flag=VALUE`` in argv; (None, None)."""
    for i, arg in enumerate(argv):
        if arg == flag and i + 1 < len(argv):
            return i + 1, argv[i + 1]
        if arg.startswith(flag + "="):
            return i, arg[len(flag) + 1:]
    return None, None


def type_title(artifact_type: Any) -> str:
    """The title TFX imports an artifact class by (its ``_retrieve_class_path``): a
    ``schemaTitle``, or the ``title`` of an ``instanceSchema``; "" for neither."""
    artifact_type = artifact_type or {}
    if artifact_type.get("schemaTitle"):
        return artifact_type["schemaTitle"]
    schema = artifact_type.get("instanceSchema") or ""
    match = re.search(r"^title:\s*(\S+)", schema, flags=re.M)
    return match.group(1) if match else ""


def _generic(artifact_type: Any) -> bool:
    """No type TFX can import: none, or one of KFP's generic ``system.*`` types."""
    title = type_title(artifact_type)
    return not title or title.startswith("system.")


def fit_executor_input(argv: List[str]) -> List[str]:
    """argv with each input artifact that has no type (or KFP's generic one) given the one the
    inputs spec declares, and the outputs that are not the component's left out."""
    where, invocation = _flag_value(argv, INVOCATION_FLAG)
    _, spec = _flag_value(argv, INPUTS_SPEC_FLAG)
    if where is None or invocation is None:
        return list(argv)
    declared: Dict[str, Any] = json.loads(spec).get("artifacts", {}) if spec else {}
    executor_input = json.loads(invocation)
    changed = False
    for name, listed in executor_input.get("inputs", {}).get("artifacts", {}).items():
        artifact_type = declared.get(name, {}).get("artifactType")
        for artifact in listed.get("artifacts", []):
            if artifact_type and _generic(artifact.get("type")):
                artifact["type"] = artifact_type
                changed = True
    outputs = executor_input.get("outputs", {}).get("artifacts", {})
    for name in sorted(outputs):
        types = [a.get("type") for a in outputs[name].get("artifacts", [])]
        if name == EXECUTOR_LOGS or any(_generic(t) for t in types):
            del outputs[name]
            changed = True
            print(f"kubeflow.entrypoint: output {name} ({', '.join(type_title(t) or 'no type' for t in types)}) "
                  "is not this component's (KFP's launcher handles it); TFX is not given it", file=sys.stderr)
    if not changed:
        return list(argv)
    out = list(argv)
    text = json.dumps(executor_input)
    out[where] = text if out[where] == invocation else f"{INVOCATION_FLAG}={text}"
    return out


def main() -> None:
    from tfxline.patches.executor import executor_patches

    sys.argv = [sys.argv[0]] + fit_executor_input(sys.argv[1:])
    with executor_patches(say=lambda line: print(f"kubeflow.entrypoint: {line}", file=sys.stderr, flush=True)):
        runpy.run_module(TFX_ENTRYPOINT, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
