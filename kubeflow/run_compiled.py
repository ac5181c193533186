"""``tfxline run-compiled``: run a compiled PipelineJob JSON locally, every task as a
container of its image, the way a Kubeflow Pipelines launcher runs it. It is how to check
an image and a spec together before spending cluster time.

It reads only the compiled spec (no second description of the DAG): tasks in dependency
order; for each, the ExecutorInput the KFP driver and launcher of one backend release
(``--kfp-version``, default the newest) would give (parameters from the task's constants and
the runtime config with your overrides, input artifacts from the upstream tasks' outputs as
MLMD gives them back, output artifact URIs under the pipeline root, from 2.5 the
``executor-logs`` output no component declares, an output metadata file); the executor's
``command`` and ``args`` with the placeholders filled in; ``docker run``; then the
artifacts' metadata from the executor's output file, for the tasks downstream. The
launcher's part for one task (ExecutorInput, placeholders, outputs) is kubeflow/launcher.py.

Why not ``kfp.local``: TFX's compiled tasks declare artifact types by ``instanceSchema``
(``title: tfx.Examples``), while ``kfp.local`` works from KFP SDK components with
``schemaTitle`` types; it needs the ``docker`` SDK; and it runs pipelines only from kfp 2.6
(the TFX 1.16 stack has kfp 2.5). This launcher needs only the ``docker`` command and no
TFX import, so it runs from either stack.

What differs from a cluster (on purpose, and said in docs/kubeflow.md): no caching and no
retries; ``lifecycle.preCacheCheck`` hooks (TFX ExampleGen's driver, which Vertex AI runs
and open-source KFP does not) are not run; containers get no network (nothing may be
fetched at run time), except a task given a non-empty ``pushgateway_url`` parameter (the
Pusher, which sends the run's metrics to Prometheus' Pushgateway) and every task of a pipeline
whose root or serving directory is an object store: the host's network. A local pipeline root is
mounted read-write at the same path (a local serving directory must be below it); an object-store
root (gs://, s3://, as on a cluster) is written by the tasks themselves, and the run's task
inputs, outputs and logs are kept in ``./run-compiled/<pipeline>/<run>`` instead. Runtime
parameters that name an existing host directory are mounted read-only at the same path;
``mounts`` (``--mount PATH``) too, and ``env`` (``--env NAME[=VALUE]``) is set in every task:
credentials for a bucket, for example.
"""
from __future__ import annotations

import dataclasses
import functools
import itertools
import json
import os
import re
import shutil
import subprocess
import time
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, TextIO

from tfxline.kubeflow import launcher, spec
from tfxline.kubeflow.launcher import UnsupportedSpec, build_executor_input, fill_placeholders
from tfxline.serving import storage


class RunCompiledError(RuntimeError):
    """The compiled pipeline cannot run locally (bad input: nothing ran)."""


class TaskFailed(RuntimeError):
    """A task's container failed; the run stopped there."""


@dataclasses.dataclass
class TaskResult:
    name: str
    seconds: float
    outputs: Dict[str, Dict[str, Any]]  # output key -> runtime artifact (name, uri, metadata, type)
    log: str


@dataclasses.dataclass
class RunResult:
    run_id: str
    run_dir: str
    image: str
    tasks: List[TaskResult] = dataclasses.field(default_factory=list)
    seconds: float = 0.0
    kfp_version: str = launcher.NEWEST
    uri_root: str = ""  # where the tasks' output artifacts go: <pipeline root>/<pipeline>/<run>

    def output(self, key: str) -> Optional[Dict[str, Any]]:
        """The first task output artifact under ``key`` (e.g. 'blessing', 'pushed_model')."""
        return next((t.outputs[key] for t in self.tasks if key in t.outputs), None)

    def summary_lines(self, metrics: str = "", failed: Sequence[str] = ()) -> List[str]:
        """The end-of-run summary; ``metrics`` / ``failed``: the Evaluator's overall metrics
        (one line) and failed thresholds, when the caller can read TFMA's output (the CLI does)."""
        lines = [f"run {self.run_id} ({len(self.tasks)} tasks in containers of {self.image}, as KFP "
                 f"{self.kfp_version} runs them): wall time {self.seconds:.0f}s"]
        from tfxline.runs.console import blessing_line, drift_line

        drift = metadata_of(self.output("drift_anomalies")).get("compared_with", "")
        if drift:
            lines.append(drift_line(drift))
        baseline = metadata_of(self.output("baseline_model"))
        if "baseline_found" in baseline:
            lines.append("  baseline: " + (f"serving version {baseline.get('serving_version')}"
                                           if baseline["baseline_found"] else
                                           "none (nothing serving yet): judged on the value thresholds"))
        if metrics:
            lines.append(f"  eval (overall): {metrics}")
        blessing = metadata_of(self.output("blessing"))
        if "blessed" in blessing:
            lines.append(blessing_line(bool(blessing["blessed"]), failed))
        pushed = metadata_of(self.output("pushed_model"))
        if pushed.get("pushed"):
            lines.append(f"  pushed to: {pushed.get('pushed_destination', '')}")
        elif "pushed" in pushed:
            lines.append("  pushed: nothing (model not blessed)")
        lines.append(f"  task inputs, outputs and logs: {self.run_dir}")
        return lines


def metadata_of(artifact: Optional[Mapping[str, Any]]) -> Dict[str, Any]:
    return dict((artifact or {}).get("metadata", {}))


def run_compiled(pipeline_json: str, *, parameters: Optional[Mapping[str, Any]] = None,
                 train_steps: Optional[int] = None, image: str = "", stream: Optional[TextIO] = None,
                 docker: str = "docker", kfp_version: str = launcher.NEWEST,
                 env: Optional[Mapping[str, str]] = None, mounts: Sequence[str] = ()) -> RunResult:
    release = launcher.backend(kfp_version)
    job = spec.load_job(pipeline_json)
    spec.check_open_source_kfp(job, source=pipeline_json)
    values = spec.root_parameter_values(
        job, spec.parameter_overrides(job, parameters, train_steps, source=pipeline_json))
    root = job.get("runtimeConfig", {}).get("gcsOutputDirectory", "")
    if not root.startswith("/") and not storage.is_uri(root):
        raise RunCompiledError(
            f"{pipeline_json} was compiled with pipeline root {root!r}; run-compiled needs an absolute directory "
            "or an object-store URI: compile again with --pipeline-root /an/absolute/dir or gs://BUCKET/path")
    local_root = "" if storage.is_uri(root) else root
    outside = sorted({d for d in spec.serving_dirs(job)
                      if not storage.is_uri(d) and not (local_root and d.startswith(local_root.rstrip("/") + "/"))})
    if outside:
        raise RunCompiledError(
            f"{pipeline_json} pushes to {', '.join(outside)}, outside its pipeline root {root}, which is all "
            "run-compiled mounts read-write; compile the local check without serving.serving_root, or with an "
            "object-store one (gs://...)")
    missing = [m for m in mounts if not os.path.isabs(m) or not os.path.exists(m)]
    if missing:
        raise RunCompiledError(f"--mount {missing[0]}: no such absolute path on this machine; give an existing file "
                               "or directory (it is mounted read-only at the same path)")
    name = pipeline_spec_name(job)
    run_id = f"{name}-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"
    run_dir = os.path.join(local_root, name, run_id) if local_root else os.path.abspath(
        os.path.join("run-compiled", name, run_id))
    result = RunResult(run_id=run_id, run_dir=run_dir, image=image or images_of(job), kfp_version=release.version,
                       uri_root=storage.join(root, name, run_id))
    check_docker(docker, image or images_of(job))
    volumes = ([(local_root, "rw")] if local_root else []) + [
        (v, "ro") for v in values.values() if isinstance(v, str) and v.startswith("/") and os.path.isdir(v)
        and not (local_root and v.startswith(local_root.rstrip("/") + "/"))] + [(m, "ro") for m in mounts]
    remote = not local_root or any(storage.is_uri(d) for d in spec.serving_dirs(job))
    os.makedirs(result.run_dir)
    say = (lambda line: print(line, file=stream, flush=True)) if stream else (lambda line: None)
    started = time.monotonic()
    produced: Dict[str, Dict[str, Dict[str, Any]]] = {}
    ids = itertools.count(1)  # MLMD's artifact ids
    for task in spec.tasks_in_order(job):
        say(f"[ start ] {task}")
        outcome = run_task(job, task, values, produced, result, volumes, docker, image, release,
                           lambda: next(ids), env=env or {}, network="host" if remote else "")
        produced[task] = outcome.outputs
        result.tasks.append(outcome)
        say(f"[ done  ] {task} ({outcome.seconds:.1f}s)")
    result.seconds = time.monotonic() - started
    with open(os.path.join(result.run_dir, "run.json"), "w") as f:
        json.dump(dataclasses.asdict(result), f, indent=2, sort_keys=True)
    return result


def pipeline_spec_name(job: Mapping[str, Any]) -> str:
    return spec.pipeline_spec(job).get("pipelineInfo", {}).get("name") or "pipeline"


def images_of(job: Mapping[str, Any]) -> str:
    executors = spec.pipeline_spec(job).get("deploymentSpec", {}).get("executors", {})
    found = sorted({e["container"]["image"] for e in executors.values() if "container" in e})
    return ", ".join(found)


def check_docker(docker: str, images: str) -> None:
    """A Docker engine that answers and holds every image (nothing is pulled here)."""
    try:
        info = subprocess.run([docker, "info"], capture_output=True, text=True)
    except FileNotFoundError:
        raise RunCompiledError(f"no {docker!r} command; install Docker (apt-get install docker.io) and start "
                               "dockerd") from None
    if info.returncode != 0:
        raise RunCompiledError("the Docker engine does not answer; start it (dockerd &) or check DOCKER_HOST")
    for image in images.split(", "):
        if subprocess.run([docker, "image", "inspect", image], capture_output=True).returncode != 0:
            raise RunCompiledError(f"image {image} is not in the local Docker engine; build it (make image) "
                                   "or pass --image with one that is")


# Where KFP's launcher has the container write outside the artifacts' URIs (the output metadata
# file, output parameters): directories of the container, each mounted from the task's directory.
# The pod's local directories: the output metadata and parameter files, and the launcher's local
# copies of a gs://, minio:// or s3:// root (launcher_v2.go LocalPathForURI; emptyDirs from 2.5:
# argocompiler/container.go:51-61 at 2.5.0), where 2.15+ also puts the output metadata file.
CONTAINER_DIRS = {os.path.dirname(launcher.OUTPUT_METADATA_FILEPATH): "kfp_outputs",
                  launcher.OUTPUT_PARAMETERS_DIR: "kfp_parameters", "/gcs": "gcs", "/minio": "minio", "/s3": "s3"}


def run_task(job, task: str, values: Mapping[str, Any], produced, result: RunResult, mounts, docker: str,
             image_override: str = "", release: Optional[launcher.Backend] = None,
             next_id: Optional[Callable[[], int]] = None, env: Optional[Mapping[str, str]] = None,
             network: str = "") -> TaskResult:
    release = release or launcher.backend()
    next_id = next_id or functools.partial(next, itertools.count(1))
    pipeline = spec.pipeline_spec(job)
    root = job.get("runtimeConfig", {}).get("gcsOutputDirectory", "")
    body = pipeline["root"]["dag"]["tasks"][task]
    for unsupported in ("triggerPolicy", "iteratorPolicy", "parameterIterator", "artifactIterator"):
        if unsupported in body:
            raise UnsupportedSpec(f"task {task} uses {unsupported}, which run-compiled does not support; run that "
                                  "spec on Vertex / KFP")
    component = pipeline["components"][body["componentRef"]["name"]]
    executor = pipeline["deploymentSpec"]["executors"][component["executorLabel"]]
    task_dir = os.path.join(result.run_dir, task)
    os.makedirs(task_dir)
    log = os.path.join(task_dir, "log.txt")
    started = time.monotonic()
    if "importer" in executor:
        outputs = launcher.import_artifact(executor["importer"], component, values, task, release, root, next_id)
        return TaskResult(task, time.monotonic() - started, outputs, log)
    executor_input = build_executor_input(body, component, values, produced, run_root=result.uri_root or result.run_dir,
                                          task=task, kfp_version=release.version)
    with open(os.path.join(task_dir, "executor_input.json"), "w") as f:
        json.dump(executor_input, f, indent=2, sort_keys=True)
    container = executor["container"]
    argv = [fill_placeholders(a, executor_input) for a in container.get("command", []) + container.get("args", [])]
    image = image_override or container["image"]
    name = re.sub(r"[^a-zA-Z0-9_.-]", "-", f"{result.run_id}-{task}")
    cmd = [docker, "run", "--rm", "--name", name, "--network", network or task_network(executor_input),
           "--user", f"{os.getuid()}:{os.getgid()}", "-e", "HOME=/tmp"]
    for key, value in (env or {}).items():
        cmd += ["-e", f"{key}={value}"]
    if release.drops_capabilities:
        # KFP 2.16+'s executor container: every capability dropped, no privilege escalation
        # (argocompiler/security_context.go:163-174, container.go:568 at 2.16.0).
        cmd += ["--cap-drop", "ALL", "--security-opt", "no-new-privileges"]
    for path, mode in mounts:
        cmd += ["-v", f"{path}:{path}:{mode}"]
    for inside, here in CONTAINER_DIRS.items():  # the pod's local dirs (KFP's emptyDirs), kept per task
        os.makedirs(os.path.join(task_dir, here))
        cmd += ["-v", f"{os.path.join(task_dir, here)}:{inside}:rw"]
    cmd += ["--entrypoint", argv[0], image] + argv[1:]
    with open(log, "w") as out:
        try:
            code = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT).returncode
        except KeyboardInterrupt:
            subprocess.run([docker, "rm", "-f", name], capture_output=True)
            raise
    seconds = time.monotonic() - started
    publish_log(executor_input, log)
    if code != 0:
        raise TaskFailed(f"task {task} failed (exit {code}): {last_error_line(log)}; log: {log}")

    def host_path(path: str) -> str:
        for inside, here in CONTAINER_DIRS.items():
            if path.startswith(inside + "/"):
                return os.path.join(task_dir, here, path[len(inside) + 1:])
        return path

    try:
        outputs = launcher.read_outputs(executor_input, release, host_path)
    except launcher.BadExecutorOutput as e:
        raise TaskFailed(f"task {task}: {e}; log: {log}") from None
    return TaskResult(task, seconds, launcher.record_artifacts(outputs, release, root, next_id), log)


def publish_log(executor_input: Mapping[str, Any], log: str) -> None:
    """The task's log where KFP's launcher publishes it (from 2.5): the ``executor-logs`` output's
    URI (launcher_v2.go getLogWriter, :632-653 at 2.17.0, and uploadOutputArtifacts), here a path
    below the local pipeline root or an object in the bucket."""
    listed = executor_input["outputs"].get("artifacts", {}).get(launcher.EXECUTOR_LOGS)
    if not listed:
        return
    target = listed["artifacts"][0]["uri"]
    if storage.is_uri(target):
        with open(log, "rb") as f:
            storage.write_bytes(target, f.read())
    else:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copyfile(log, target)


def task_network(executor_input: Mapping[str, Any]) -> str:
    """``none``; the host's for a task that pushes run metrics (a gateway on this machine's
    loopback is reachable only from there)."""
    values = executor_input.get("inputs", {}).get("parameterValues", {})
    return "host" if values.get(spec.PUSHGATEWAY_PARAM) else "none"


def last_error_line(log_path: str) -> str:
    """The most telling line of a failed container's log: the last Python exception line."""
    with open(log_path, errors="replace") as f:
        lines = [line.strip() for line in f if line.strip()]
    errors = [line for line in lines if re.match(r"^[A-Za-z_][\w.]*(Error|Exception|Exit)\b.*:", line)]
    return (errors or lines or ["no output"])[-1][:500]
