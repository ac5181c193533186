"""Submit a compiled PipelineJob JSON to Vertex AI Pipelines or a KFP 2.x endpoint.

Submission is separate from compilation: ``build_request`` only reads the JSON and checks
the parameter overrides against the runtime parameters the spec declares; ``submit``
makes the one network call (mocked in tests). ``--dry-run`` prints the request instead.
"""
from __future__ import annotations

import dataclasses
import json
import os
from typing import Any, Dict, Mapping, Optional

from kubeflow.compile import TRAIN_ARGS_PARAM

TARGETS = ("vertex", "kfp")


class SubmitError(ValueError):
    """The submission request is incomplete or inconsistent with the compiled spec."""


@dataclasses.dataclass
class SubmitRequest:
    target: str
    template_path: str
    display_name: str
    parameter_values: Dict[str, Any]
    pipeline_root: str = ""
    project: str = ""
    region: str = ""
    service_account: str = ""
    host: str = ""
    enable_caching: bool = True

    def to_dict(self) -> Dict[str, Any]:
        return dataclasses.asdict(self)


def declared_parameters(job: Mapping[str, Any]) -> Dict[str, Any]:
    """Runtime parameter names -> default values, from a compiled PipelineJob dict."""
    spec = job.get("pipelineSpec", {})
    names = spec.get("root", {}).get("inputDefinitions", {}).get("parameters", {})
    runtime = job.get("runtimeConfig", {})
    defaults = dict(runtime.get("parameterValues", {}))  # schema 2.1
    for name, value in runtime.get("parameters", {}).items():  # schema 2.0: {"stringValue": ...}
        defaults.setdefault(name, next(iter(value.values()), None) if isinstance(value, dict) else value)
    return {name: defaults.get(name) for name in names}


def build_request(pipeline_json: str, *, target: str, parameters: Optional[Mapping[str, Any]] = None,
                  train_steps: Optional[int] = None, pipeline_root: str = "", project: str = "",
                  region: str = "", service_account: str = "", host: str = "") -> SubmitRequest:
    if target not in TARGETS:
        raise SubmitError(f"unknown target {target!r}; use one of {', '.join(TARGETS)}")
    if not os.path.isfile(pipeline_json):
        raise SubmitError(f"compiled pipeline {pipeline_json} does not exist; run 'tfxline compile' first")
    with open(pipeline_json) as f:
        job = json.load(f)
    declared = declared_parameters(job)
    values = dict(parameters or {})
    if train_steps is not None:
        values[TRAIN_ARGS_PARAM] = json.dumps({"num_steps": int(train_steps)})
    unknown = sorted(set(values) - set(declared))
    if unknown:
        raise SubmitError(
            f"parameter(s) {', '.join(unknown)} are not runtime parameters of {pipeline_json}; "
            f"declared: {', '.join(sorted(declared))}")
    if target == "vertex":
        missing = [n for n, v in (("--project", project), ("--region", region)) if not v]
        if missing:
            raise SubmitError(f"Vertex AI submission needs {' and '.join(missing)}")
    if target == "kfp" and not host:
        raise SubmitError("KFP submission needs --host (the KFP API endpoint)")
    root = pipeline_root or job.get("runtimeConfig", {}).get("gcsOutputDirectory", "")
    return SubmitRequest(
        target=target, template_path=os.path.abspath(pipeline_json),
        display_name=job.get("displayName", "tfxline"), parameter_values=values,
        pipeline_root=root, project=project, region=region, service_account=service_account,
        host=host)


def submit(request: SubmitRequest) -> str:
    """Submit for real; returns the job / run identifier. The only network edge."""
    if request.target == "vertex":
        from google.cloud import aiplatform

        job = aiplatform.PipelineJob(
            display_name=request.display_name, template_path=request.template_path,
            pipeline_root=request.pipeline_root or None, parameter_values=request.parameter_values,
            project=request.project, location=request.region, enable_caching=request.enable_caching)
        job.submit(service_account=request.service_account or None)
        return job.resource_name
    import kfp

    client = kfp.Client(host=request.host)
    run = client.create_run_from_pipeline_package(
        request.template_path, arguments=request.parameter_values, run_name=request.display_name,
        enable_caching=request.enable_caching)
    return run.run_id
