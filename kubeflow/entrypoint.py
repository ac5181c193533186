"""The command of every TFX task in the compiled pipeline (kubeflow/compile.py sets it).

It is TFX's own container entrypoint (``python -m
tfx.orchestration.kubeflow.v2.container.kubeflow_v2_run_executor``, what TFX compiles by
default), run with the same arguments, with two changes:

1. Input artifact types restored from the spec. Open-source KFP's driver hands a task its
   upstream artifacts with an empty ``type.instanceSchema`` (kubeflow/pipelines
   ``backend/src/v2/metadata/client.go``, ``GetOutputArtifactsByExecutionId``: "TODO(Bobgy):
   figure out how to get schema"); TFX's entrypoint deserialises the artifact class from that
   schema and fails (``'NoneType' object has no attribute 'get'``, tensorflow/tfx#7768). The
   compiled container already carries the component's inputs spec
   (``--json_serialized_inputs_spec_args``, schema 2.1.0); an input without a type gets the
   one declared there. So does an input typed as KFP's generic ``system.Artifact``, which is
   how kfp.local's DockerRunner (kfp 2.17) passes every upstream artifact on ("No module named
   'system'" in TFX's entrypoint otherwise). Vertex AI fills the types itself: nothing changes
   there.
2. ``pipeline.beam_packaging.no_sdist_for_local_runners()``: without it, every Beam
   component's pod (CsvExampleGen, StatisticsGen, Transform, Evaluator) copied the image's TFX
   install and built an sdist of it (TFX's ``make_beam_dependency_flags``) for Beam workers to
   install, about 3.5 s each, before running its Beam pipeline in the pod itself, where no
   worker installs anything. With a remote runner in ``runtime.beam_args`` (Dataflow, Flink,
   Spark, Portable) TFX's packaging runs as before.

A compiled pipeline that names this command needs an image with this project installed
(kubeflow/Dockerfile), which every task's image is already.
"""
from __future__ import annotations

import json
import runpy
import sys
from typing import Any, Dict, List

TFX_ENTRYPOINT = "tfx.orchestration.kubeflow.v2.container.kubeflow_v2_run_executor"
COMMAND = ("python", "-m", "kubeflow.entrypoint")  # this module
INVOCATION_FLAG = "--json_serialized_invocation_args"
INPUTS_SPEC_FLAG = "--json_serialized_inputs_spec_args"
GENERIC_TYPE = "system.Artifact"  # what kfp.local's DockerRunner types every upstream artifact as


def _flag_value(argv: List[str], flag: str):
    """(index of the value, value) of ``flag VALUE`` or ``flag=VALUE`` in argv; (None, None)."""
    for i, arg in enumerate(argv):
        if arg == flag and i + 1 < len(argv):
            return i + 1, argv[i + 1]
        if arg.startswith(flag + "="):
            return i, arg[len(flag) + 1:]
    return None, None


def restore_input_types(argv: List[str]) -> List[str]:
    """argv with each input artifact that has no type given the one the inputs spec declares."""
    where, invocation = _flag_value(argv, INVOCATION_FLAG)
    _, spec = _flag_value(argv, INPUTS_SPEC_FLAG)
    if where is None or not spec:
        return list(argv)
    declared: Dict[str, Any] = json.loads(spec).get("artifacts", {})
    executor_input = json.loads(invocation)
    changed = False
    for name, listed in executor_input.get("inputs", {}).get("artifacts", {}).items():
        artifact_type = declared.get(name, {}).get("artifactType")
        for artifact in listed.get("artifacts", []):
            current = artifact.get("type") or {}
            generic = current.get("schemaTitle") == GENERIC_TYPE or not (
                current.get("instanceSchema") or current.get("schemaTitle"))
            if artifact_type and generic:
                artifact["type"] = artifact_type
                changed = True
    if not changed:
        return list(argv)
    out = list(argv)
    text = json.dumps(executor_input)
    out[where] = text if out[where] == invocation else f"{INVOCATION_FLAG}={text}"
    return out


def main() -> None:
    from pipeline.beam_packaging import no_sdist_for_local_runners

    sys.argv = [sys.argv[0]] + restore_input_types(sys.argv[1:])
    with no_sdist_for_local_runners():
        runpy.run_module(TFX_ENTRYPOINT, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
