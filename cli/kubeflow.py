"""The ``tfxline`` subcommands for Kubeflow Pipelines v2 / Vertex AI (registered by cli/main.py):

    tfxline compile --image IMAGE --pipeline-root gs://... [--pipeline-json pipeline.json]
    tfxline submit pipeline.json --target vertex|kfp [--param k=v] [--train-steps N] [--dry-run]
    tfxline run-compiled pipeline.json [--param k=v] [--train-steps N] [--image IMAGE] [--kfp-version X.Y]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Dict, TextIO

from tfxline.cli.common import EXIT_FAILED, EXIT_OK, BadInput, add_config_args, config_or_bad_input, quiet_tensorflow


def add_commands(sub) -> None:
    comp = sub.add_parser("compile", help="compile for Kubeflow Pipelines v2 / Vertex AI")
    add_config_args(comp, training=True)
    comp.add_argument("--image", required=True, help="container image built from kubeflow/Dockerfile")
    comp.add_argument("--pipeline-root", required=True, help="e.g. gs://bucket/tfxline")
    comp.add_argument("--data-root", help="default of the data_root runtime parameter")
    comp.add_argument("--pipeline-json", default="pipeline.json", metavar="FILE",
                      help="where to write the compiled PipelineJob JSON")
    comp.set_defaults(func=cmd_compile)

    sm = sub.add_parser("submit", help="submit a compiled pipeline to Vertex AI or KFP")
    sm.add_argument("pipeline_json", metavar="PIPELINE_JSON")
    sm.add_argument("--target", choices=("vertex", "kfp"), default="vertex",
                    help="kfp: open-source Kubeflow Pipelines (refuses executors it cannot run)")
    add_param_args(sm)
    sm.add_argument("--project")
    sm.add_argument("--region")
    sm.add_argument("--service-account", default="",
                    help="vertex: the Google service account (e-mail) the job runs as; kfp: the Kubernetes "
                         "ServiceAccount of the run's namespace its pods run as (default: KFP's pipeline-runner)")
    sm.add_argument("--pipeline-root", default="", help="overrides the compiled pipeline root")
    sm.add_argument("--host", default="", help="KFP API endpoint (target kfp)")
    sm.add_argument("--serving-pvc", default="", metavar="NAME",
                    help="target kfp: the PersistentVolumeClaim mounted where the tasks push serving versions")
    sm.add_argument("--dry-run", action="store_true", help="print the request; no network")
    sm.set_defaults(func=cmd_submit)

    rc = sub.add_parser("run-compiled", help="run a compiled pipeline locally, each task in a container of its image")
    rc.add_argument("pipeline_json", metavar="PIPELINE_JSON",
                    help="compiled with a local --pipeline-root (mounted into the containers) or a gs:// one")
    add_param_args(rc)
    rc.add_argument("--image", default="", help="run every task in this image instead of the compiled one")
    from tfxline.kubeflow.launcher import KFP_VERSIONS, NEWEST

    rc.add_argument("--kfp-version", default=NEWEST, metavar="X.Y",
                    help=f"give each task what this Kubeflow Pipelines backend release's driver and launcher give: "
                         f"{', '.join(KFP_VERSIONS)} (2.5 and later add the executor-logs output; default {NEWEST})")
    rc.add_argument("--env", action="append", default=[], metavar="NAME[=VALUE]",
                    help="set in every task's container (repeatable; NAME alone passes this shell's value), e.g. "
                         "GOOGLE_APPLICATION_CREDENTIALS=/abs/key.json for a gs:// pipeline root")
    rc.add_argument("--mount", action="append", default=[], metavar="PATH",
                    help="an absolute file or directory mounted read-only at the same path in every task (repeatable)")
    rc.set_defaults(func=cmd_run_compiled)


def add_param_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                   help="runtime parameter value (repeatable), e.g. data_root=gs://b/data")
    p.add_argument("--train-steps", type=int, help="sets the train_args runtime parameter")


def params(args) -> dict:
    out = {}
    for item in args.param:
        name, sep, value = item.partition("=")
        if not sep:
            raise BadInput(f"--param {item!r} must look like NAME=VALUE; e.g. --param train_steps=100")
        out[name] = value
    return out


def cmd_compile(args, stream: TextIO) -> int:
    from tfxline.kubeflow.compile import compile_pipeline

    cfg = config_or_bad_input(args)
    compile_pipeline(cfg, image=args.image, pipeline_root=args.pipeline_root,
                     output=args.pipeline_json, data_root=args.data_root)
    print(f"compiled {cfg.name} for KFP v2 / Vertex AI: {os.path.abspath(args.pipeline_json)}", file=stream)
    return EXIT_OK


def cmd_submit(args, stream: TextIO) -> int:
    from tfxline.kubeflow import submit as submit_lib

    try:
        request = submit_lib.build_request(
            args.pipeline_json, target=args.target, parameters=params(args), train_steps=args.train_steps,
            pipeline_root=args.pipeline_root, project=args.project or "", region=args.region or "",
            service_account=args.service_account, host=args.host, serving_pvc=args.serving_pvc)
    except submit_lib.SubmitError as e:
        raise BadInput(str(e)) from None
    if args.dry_run:
        print(json.dumps(request.to_dict(), indent=2, sort_keys=True), file=stream)
        return EXIT_OK
    print(f"submitted: {submit_lib.submit(request)}", file=stream)
    return EXIT_OK


def task_env(pairs) -> Dict[str, str]:
    """--env NAME=VALUE / NAME (this shell's value, as ``docker run -e NAME`` takes it)."""
    out = {}
    for pair in pairs:
        name, has_value, value = pair.partition("=")
        if not name or (not has_value and name not in os.environ):
            raise BadInput(f"--env {pair!r} names no value; fix: give NAME=VALUE, or NAME of a variable set in "
                           "this shell")
        out[name] = value if has_value else os.environ[name]
    return out


def cmd_run_compiled(args, stream: TextIO) -> int:
    from tfxline.kubeflow import run_compiled as rc
    from tfxline.kubeflow import spec

    try:
        result = rc.run_compiled(args.pipeline_json, parameters=params(args), train_steps=args.train_steps,
                                 image=args.image, stream=stream, kfp_version=args.kfp_version,
                                 env=task_env(args.env), mounts=args.mount)
    except (spec.SpecError, rc.RunCompiledError) as e:
        raise BadInput(str(e)) from None
    except rc.TaskFailed as e:
        print(f"error: pipeline failed: {e}", file=sys.stderr)
        return EXIT_FAILED
    metrics, failed = "", []
    evaluation = result.output("evaluation")
    if evaluation:  # TFMA's output, read as for a local run
        quiet_tensorflow()
        from tfx.utils import path_utils

        from tfxline.components.tfma_results import read_evaluation
        from tfxline.runs.console import format_metrics

        model = result.output("model")  # its label vocabulary names a multi-class run's classes
        overall, _, failed = read_evaluation(evaluation["uri"],
                                             path_utils.serving_model_path(model["uri"]) if model else "")
        metrics = format_metrics(overall)
    print("\n".join(result.summary_lines(metrics, failed)), file=stream, flush=True)
    return EXIT_OK
