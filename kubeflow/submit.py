"""Submit a compiled PipelineJob JSON to Vertex AI Pipelines or a KFP 2.x endpoint.

Submission is separate from compilation: ``build_request`` only reads the JSON and checks
the parameter overrides against the runtime parameters the spec declares, and for
``--target kfp`` that open-source Kubeflow Pipelines can run every executor; ``submit``
makes the one network call (mocked in tests). ``--dry-run`` prints the request instead.
"""
from __future__ import annotations

import dataclasses
import os
from typing import Any, Dict, Mapping, Optional

from kubeflow import spec

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


def build_request(pipeline_json: str, *, target: str, parameters: Optional[Mapping[str, Any]] = None,
                  train_steps: Optional[int] = None, pipeline_root: str = "", project: str = "",
                  region: str = "", service_account: str = "", host: str = "") -> SubmitRequest:
    if target not in TARGETS:
        raise SubmitError(f"unknown target {target!r}; use one of {', '.join(TARGETS)}")
    try:
        job = spec.load_job(pipeline_json)
        values = spec.parameter_overrides(job, parameters, train_steps, source=pipeline_json)
        if target == "kfp":
            spec.check_open_source_kfp(job, source=pipeline_json)
    except spec.SpecError as e:
        raise SubmitError(str(e)) from None
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
