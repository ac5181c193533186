"""Submit a compiled PipelineJob JSON to Vertex AI Pipelines or a KFP 2.x endpoint.

Submission is separate from compilation: ``build_request`` only reads the JSON and checks
the parameter overrides against the runtime parameters the spec declares, and for
``--target kfp`` that open-source Kubeflow Pipelines can run every executor; ``submit``
makes the one network call (mocked in tests). ``--dry-run`` prints the request instead.
"""
from __future__ import annotations

import dataclasses
import os
import re
import tempfile
from typing import Any, Dict, Mapping, Optional

from tfxline.kubeflow import spec

TARGETS = ("vertex", "kfp")
# A Kubernetes object name (DNS-1123 subdomain): what KFP's API server sets as the workflow's
# serviceAccountName (backend/src/apiserver/template/template.go:310-321 at 2.17.0).
_KUBERNETES_NAME = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


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
    serving_pvc: str = ""   # kfp: the PersistentVolumeClaim mounted at the serving root
    serving_root: str = ""  # kfp: where the tasks read and push serving versions (the mount path)

    def to_dict(self) -> Dict[str, Any]:
        return dataclasses.asdict(self)


def build_request(pipeline_json: str, *, target: str, parameters: Optional[Mapping[str, Any]] = None,
                  train_steps: Optional[int] = None, pipeline_root: str = "", project: str = "",
                  region: str = "", service_account: str = "", host: str = "",
                  serving_pvc: str = "") -> SubmitRequest:
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
            raise SubmitError(f"Vertex AI submission needs {' and '.join(missing)}; pass them (the GCP project and "
                              "region the pipeline runs in)")
    if target == "kfp" and not host:
        raise SubmitError("KFP submission needs --host; pass the KFP API endpoint, e.g. --host http://localhost:8080")
    if target == "kfp" and service_account and not _KUBERNETES_NAME.fullmatch(service_account):
        raise SubmitError(
            f"--service-account {service_account!r}: KFP runs the pipeline's pods as a Kubernetes ServiceAccount "
            "of the run's namespace and takes its name (lower-case letters, digits, '-' and '.'), not a Google "
            "service account's e-mail; pass e.g. --service-account pipeline-runner, bound to the Google account "
            "with Workload Identity (docs/kubeflow.md)")
    serving_root = ""
    if target == "kfp":
        serving_dir = _serving_dir(job, pipeline_json)
        if "://" in serving_dir:  # an object store: the tasks reach it themselves (serving/storage.py)
            if serving_pvc:
                raise SubmitError(
                    f"--serving-pvc {serving_pvc}: {pipeline_json} pushes to {serving_dir}, an object store the tasks "
                    "write themselves; leave --serving-pvc out, or compile with --set serving.serving_root=<a mount "
                    "path> to push to a volume")
        else:
            serving_root = os.path.dirname(serving_dir.rstrip("/"))
            if not serving_pvc:
                raise SubmitError(
                    f"{pipeline_json} pushes to {serving_root}, a file system path that a KFP pod has only if a "
                    "volume is mounted there: pass --serving-pvc NAME (a PersistentVolumeClaim, mounted there; TF "
                    "Serving reads the same volume), or compile with a gs:// or s3:// serving.serving_root")
    root = pipeline_root or job.get("runtimeConfig", {}).get("gcsOutputDirectory", "")
    return SubmitRequest(
        target=target, template_path=os.path.abspath(pipeline_json),
        display_name=job.get("displayName", "tfxline"), parameter_values=values,
        pipeline_root=root, project=project, region=region, service_account=service_account,
        host=host, serving_pvc=serving_pvc, serving_root=serving_root)


def _serving_dir(job: Mapping[str, Any], source: str) -> str:
    """The one serving directory the tasks push to: a path (a volume's) or an object-store URI."""
    dirs = sorted(set(spec.serving_dirs(job)))
    if len(dirs) != 1 or not (dirs[0].startswith("/") or "://" in dirs[0]):
        raise SubmitError(f"{source}: expected one serving directory, found {dirs or 'none'}; "
                          "recompile with 'tfxline compile'")
    return dirs[0]


def platform_spec(job: Mapping[str, Any], request: SubmitRequest) -> Dict[str, Any]:
    """KFP's Kubernetes platform spec (kfp-kubernetes' mount_pvc): the serving volume mounted at
    the serving root in every task that reads or writes serving versions (DriftGate,
    ServingBaseline, Pusher). ``constant`` names the claim: every KFP 2.x backend reads it
    (backend/src/v2/driver/driver.go:1496-1499 at 2.0.0; k8s.go:1130-1131 at 2.17.0, a file
    that exists from 2.14.0; newer ones also take pvcNameParameter)."""
    mount = {"constant": request.serving_pvc, "mountPath": request.serving_root}
    executors = {label: {"pvcMount": [dict(mount)]} for label in spec.serving_executors(job)}
    return {"platforms": {"kubernetes": {"deploymentSpec": {"executors": executors}}}}


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
    with tempfile.TemporaryDirectory(prefix="tfxline-kfp-") as tmp:
        # service_account: the run's V2beta1Run.service_account (kfp 2.5 and 2.17 alike), which
        # the API server makes the workflow's serviceAccountName, or its default, pipeline-runner
        # (backend/src/apiserver/template/template.go:310-321, v2_template.go:408 at 2.17.0).
        run = client.create_run_from_pipeline_package(
            kfp_package(request, tmp), arguments=kfp_arguments(request),
            run_name=request.display_name, pipeline_root=request.pipeline_root or None,
            enable_caching=request.enable_caching, service_account=request.service_account or None)
    if not run.run_id:  # the API's V2beta1Run leaves it optional
        raise SubmitError(f"KFP at {request.host} answered the run's creation without a run id; find the run "
                          f"by its name, {request.display_name!r}, in the KFP UI")
    return run.run_id


def kfp_package(request: SubmitRequest, directory: str) -> str:
    """The PipelineSpec of a compiled PipelineJob JSON as the file ``kfp.Client`` takes (it reads
    .yaml / .zip / .tar.gz holding a PipelineSpec, not a PipelineJob), then the platform spec."""
    import yaml

    path = os.path.join(directory, "pipeline.yaml")
    job = spec.load_job(request.template_path)
    documents = [spec.pipeline_spec(job)] + ([platform_spec(job, request)] if request.serving_pvc else [])
    with open(path, "w") as f:
        yaml.safe_dump_all(documents, f, sort_keys=True)
    return path


def kfp_arguments(request: SubmitRequest) -> Dict[str, Any]:
    """Every runtime parameter's value: the overrides, else the compiled default (the client
    sends only what it is given, and the PipelineJob's runtimeConfig does not travel)."""
    return {**spec.declared_parameters(spec.load_job(request.template_path)), **request.parameter_values}
