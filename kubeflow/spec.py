"""Reading a compiled PipelineJob JSON (``tfxline compile``'s output): its runtime
parameters, executors and task order. Shared by ``submit`` and ``run-compiled``; no TFX
import, so both work from either stack.

The portability rule lives here: open-source Kubeflow Pipelines' v2 backend runs only
*container* and *importer* executors (kubeflow/pipelines ``backend/src/v2/compiler/visitor.go``
fails any other with "non-container and non-importer executor not implemented"); Vertex AI
also runs *resolver* executors (TFX's ``Resolver`` node compiles to those). Nor does it run
an executor's ``lifecycle.preCacheCheck`` (TFX ExampleGen's driver, which Vertex AI runs), the
step that turns a span pattern ({SPAN}, {YYYY}{MM}{DD}) into the newest span's files.
"""
from __future__ import annotations

import json
import os
from typing import Any, Dict, List, Mapping, Optional, Tuple

from tfxline.pipeline.config.steps import train_args_json
from tfxline.pipeline.data.source import has_span_spec

TRAIN_ARGS_PARAM = "train_args"
PUSHGATEWAY_PARAM = "pushgateway_url"  # the Pusher sends the run's metrics there (components/run_metrics.py)
PORTABLE_EXECUTORS = ("container", "importer")


class SpecError(ValueError):
    """The compiled pipeline is missing, unreadable, or cannot run where it is sent."""


def load_job(path: str) -> Dict[str, Any]:
    if not os.path.isfile(path):
        raise SpecError(f"compiled pipeline {path} does not exist; run 'tfxline compile' first")
    try:
        with open(path) as f:
            job = json.load(f)
    except ValueError as e:
        raise SpecError(f"{path} is not JSON ({e}); pass the file 'tfxline compile' wrote") from None
    if "pipelineSpec" not in job:
        raise SpecError(f"{path} has no pipelineSpec; pass the PipelineJob JSON 'tfxline compile' wrote")
    return job


def pipeline_spec(job: Mapping[str, Any]) -> Dict[str, Any]:
    return job["pipelineSpec"]


def parameter_types(job: Mapping[str, Any]) -> Dict[str, str]:
    """Runtime parameter name -> type (STRING, INT, DOUBLE; or schema 2.1's NUMBER_INTEGER...)."""
    params = pipeline_spec(job).get("root", {}).get("inputDefinitions", {}).get("parameters", {})
    return {name: p.get("parameterType") or p.get("type", "STRING") for name, p in params.items()}


def declared_parameters(job: Mapping[str, Any]) -> Dict[str, Any]:
    """Runtime parameter names -> default values, from a compiled PipelineJob dict: the root's
    declared ``defaultValue`` (what KFP's driver falls back on), else the PipelineJob's
    runtimeConfig (what Vertex AI reads); None when neither has one."""
    runtime = job.get("runtimeConfig", {})
    defaults = dict(runtime.get("parameterValues", {}))  # schema 2.1
    for name, value in runtime.get("parameters", {}).items():  # schema 2.0: {"stringValue": ...}
        defaults.setdefault(name, next(iter(value.values()), None) if isinstance(value, dict) else value)
    declared = pipeline_spec(job).get("root", {}).get("inputDefinitions", {}).get("parameters", {})
    return {name: declared[name].get("defaultValue", defaults.get(name)) for name in parameter_types(job)}


def root_parameter_values(job: Mapping[str, Any], overrides: Mapping[str, Any]) -> Dict[str, Any]:
    """The root parameters as KFP's driver resolves them: the run's arguments, else each
    parameter's declared ``defaultValue``; neither is an error, as there (a PipelineJob's
    runtimeConfig does not reach open-source KFP)."""
    declared = pipeline_spec(job).get("root", {}).get("inputDefinitions", {}).get("parameters", {})
    values = {}
    for name, definition in declared.items():
        if name in overrides:
            values[name] = overrides[name]
        elif "defaultValue" in definition:
            values[name] = definition["defaultValue"]
        elif not definition.get("isOptional"):
            raise SpecError(f"neither value nor default value provided for non-optional parameter {name!r} "
                            "(KFP's driver refuses such a run); recompile with 'tfxline compile', which "
                            "declares every default, or pass --param " + f"{name}=...")
    return values


def parameter_overrides(job: Mapping[str, Any], parameters: Optional[Mapping[str, Any]] = None,
                        train_steps: Optional[int] = None, source: str = "the compiled pipeline") -> Dict[str, Any]:
    """The overrides of a submission or local run, checked against the declared parameters;
    ``train_steps`` writes the ``train_args`` parameter (a JSON TrainArgs: pipeline/config/steps.train_args)."""
    values = dict(parameters or {})
    if train_steps is not None:
        values[TRAIN_ARGS_PARAM] = train_args_json(train_steps)
    declared = declared_parameters(job)
    unknown = sorted(set(values) - set(declared))
    if unknown:
        raise SpecError(f"parameter(s) {', '.join(unknown)} are not runtime parameters of {source}; "
                        f"declared: {', '.join(sorted(declared))}")
    return values


def executor_kinds(job: Mapping[str, Any]) -> Dict[str, str]:
    """Executor label -> kind (container, importer, resolver, ...)."""
    executors = pipeline_spec(job).get("deploymentSpec", {}).get("executors", {})
    return {label: next(iter(body), "?") for label, body in sorted(executors.items())}


def non_portable_executors(job: Mapping[str, Any]) -> List[Tuple[str, str]]:
    """(label, kind) of each executor open-source KFP cannot run."""
    return [(label, kind) for label, kind in executor_kinds(job).items() if kind not in PORTABLE_EXECUTORS]


def span_patterns_needing_driver(job: Mapping[str, Any]) -> List[Tuple[str, str]]:
    """(task, pattern) of each task whose input_config has a span pattern that only its
    ``lifecycle.preCacheCheck`` driver resolves."""
    pipeline = pipeline_spec(job)
    executors = pipeline.get("deploymentSpec", {}).get("executors", {})
    found = []
    for task, body in sorted(pipeline.get("root", {}).get("dag", {}).get("tasks", {}).items()):
        component = pipeline.get("components", {}).get(body.get("componentRef", {}).get("name", ""), {})
        container = executors.get(component.get("executorLabel", ""), {}).get("container", {})
        if "preCacheCheck" not in container.get("lifecycle", {}):
            continue
        source = body.get("inputs", {}).get("parameters", {}).get("input_config", {}).get("runtimeValue", {})
        text = source.get("constant") or next(iter(source.get("constantValue", {}).values()), "")
        try:
            splits = json.loads(text).get("splits", []) if isinstance(text, str) else text.get("splits", [])
        except ValueError:
            continue
        found += [(task, split.get("pattern", "")) for split in splits if has_span_spec(split.get("pattern", ""))]
    return found


KFP_SCHEMA_VERSION = "2.1.0"


def check_open_source_kfp(job: Mapping[str, Any], source: str = "the compiled pipeline") -> None:
    version = pipeline_spec(job).get("schemaVersion", "")
    if version != KFP_SCHEMA_VERSION:  # backend/src/apiserver/template/v2_template.go
        raise SpecError(
            f"{source}: KFP only supports schema version {KFP_SCHEMA_VERSION}, but the pipeline spec has "
            f"version {version or 'none'}; recompile with 'tfxline compile' (it writes {KFP_SCHEMA_VERSION})")
    spans = span_patterns_needing_driver(job)
    if spans:
        task, pattern = spans[0]
        raise SpecError(
            f"{source}: task {task} reads the span pattern {pattern!r}, which only ExampleGen's driver "
            "(lifecycle.preCacheCheck) resolves; open-source Kubeflow Pipelines does not run it (Vertex AI does). "
            "Compile with a pattern without span placeholders and pass the day's directory as the data_root "
            "parameter (--param data_root=...), or submit with --target vertex")
    bad = non_portable_executors(job)
    if bad:
        named = ", ".join(f"{label} ({kind})" for label, kind in bad)
        raise SpecError(
            f"{source} has executor(s) open-source Kubeflow Pipelines cannot run: {named}; its v2 backend "
            "runs only container and importer executors (resolver executors are Vertex AI only). "
            "Recompile without TFX Resolver nodes (tfxline's own pipeline has none), or submit with --target vertex")


def tasks_in_order(job: Mapping[str, Any]) -> List[str]:
    """The root DAG's tasks in an order that runs every producer before its consumers
    (``dependentTasks`` and artifact/parameter producers); ties by name, so it is stable."""
    tasks = pipeline_spec(job)["root"]["dag"]["tasks"]
    needs = {name: set(body.get("dependentTasks", [])) | producers(body) for name, body in tasks.items()}
    for name, deps in needs.items():
        missing = deps - set(tasks)
        if missing:
            raise SpecError(f"task {name} depends on unknown task(s) {', '.join(sorted(missing))}; "
                            "recompile the spec with 'tfxline compile'")
    done: List[str] = []
    while len(done) < len(tasks):
        ready = sorted(n for n in tasks if n not in done and needs[n] <= set(done))
        if not ready:
            raise SpecError(f"the task graph has a cycle among {', '.join(sorted(set(tasks) - set(done)))}; "
                            "recompile the spec with 'tfxline compile'")
        done.append(ready[0])
    return done


def producers(task: Mapping[str, Any]) -> set:
    inputs = task.get("inputs", {})
    found = {a["taskOutputArtifact"]["producerTask"] for a in inputs.get("artifacts", {}).values()
             if "taskOutputArtifact" in a}
    found |= {p["taskOutputParameter"]["producerTask"] for p in inputs.get("parameters", {}).values()
              if "taskOutputParameter" in p}
    return found


def serving_tasks(job: Mapping[str, Any]) -> Dict[str, Mapping[str, Any]]:
    """The tasks that read or write serving versions (a ``serving_dir`` parameter), by name."""
    tasks = pipeline_spec(job)["root"]["dag"]["tasks"]
    return {name: body for name, body in sorted(tasks.items())
            if "serving_dir" in body.get("inputs", {}).get("parameters", {})}


def serving_dirs(job: Mapping[str, Any]) -> List[str]:
    """The ``serving_dir`` constants of those tasks (Pusher, ServingBaseline, DriftGate)."""
    sources = [body["inputs"]["parameters"]["serving_dir"].get("runtimeValue", {})
               for body in serving_tasks(job).values()]
    return [str(s["constant"]) for s in sources if "constant" in s]


def serving_executors(job: Mapping[str, Any]) -> List[str]:
    """The executor labels of those tasks."""
    components = pipeline_spec(job).get("components", {})
    return sorted({components[body["componentRef"]["name"]]["executorLabel"] for body in serving_tasks(job).values()})
