"""Compile the same ``create_pipeline()`` to a KFP v2 PipelineJob JSON (Vertex AI / KFP 2.x).

Code is referenced by import path (``tfxline.transforms.preprocessing.preprocessing_fn``,
``tfxline.trainer.run.run_fn``) of the project installed in the container image, never by
``module_file`` (which would package and upload user code at compile time). Paths that
the pipeline reads are paths inside the image (see ``kubeflow/Dockerfile``) or in cloud
storage; the metadata store is the one the cluster provides. Every task runs TFX's
entrypoint through ``kubeflow/entrypoint.py`` (no TFX sdist for in-pod Beam runners).

Runtime parameters, settable at submission without recompiling:
``data_root`` (the directory of input files; ``data.pattern`` selects them) and ``train_args`` (a JSON TrainArgs, e.g.
``{"num_steps": 500}``; ``tfxline submit --train-steps`` writes it for you), and ``pushgateway_url``
(default: the config's ``monitoring.pushgateway_url``; empty: off), where the Pusher, the run's
last task, pushes the run's metrics from its container (components/run_metrics.py).
"""
from __future__ import annotations

import json
import os
import posixpath
from typing import Any, Dict, Optional, Tuple

from tfxline.components import run_metrics
from tfxline.kubeflow import entrypoint, names, vertex_tuning
from tfxline.kubeflow.spec import PUSHGATEWAY_PARAM, TRAIN_ARGS_PARAM
from tfxline.pipeline.beam import engines as beam_engines
from tfxline.pipeline.beam import stack_compat
from tfxline.pipeline.config import ConfigError, PipelineConfig
from tfxline.pipeline.data.source import DEFAULT_PATTERNS, PACKAGE_PREFIX
from tfxline.trainer import tuning_settings as T

# Where the Dockerfile puts things inside the image.
CONTAINER_PROJECT_DIR = "/pipeline"
# A link the Dockerfile makes to the interpreter's site-packages, so a compiled pipeline does
# not depend on the image's Python version (3.13 for TFX 1.21, 3.10 for TFX 1.16).
CONTAINER_SITE_PACKAGES = f"{CONTAINER_PROJECT_DIR}/site-packages"
CONTAINER_TAXI_DATA = f"{CONTAINER_SITE_PACKAGES}/tfx/examples/chicago_taxi_pipeline/data/simple"

DATA_ROOT_PARAM = "data_root"


def container_schema_path(cfg: PipelineConfig) -> str:
    name = cfg.data.schema
    if name.endswith(".pbtxt") or "/" in name:
        return name  # already a path (cloud storage or inside the image)
    return f"{CONTAINER_PROJECT_DIR}/schema/{name}.pbtxt"


def container_data_location(cfg: PipelineConfig) -> Tuple[str, str]:
    """(data directory, file pattern) as the container sees them: ``package:`` data inside
    the image's site-packages; a file path splits into its directory and name; a directory
    (local or cloud storage, which cannot be stat-ed here) takes ``data.pattern``."""
    path = cfg.data.path
    if not path:
        return CONTAINER_TAXI_DATA, DEFAULT_PATTERNS["csv"]
    if path.startswith(PACKAGE_PREFIX):
        path = f"{CONTAINER_SITE_PACKAGES}/{path[len(PACKAGE_PREFIX):]}"
    if os.path.splitext(path)[1] in (".csv", ".gz", ".tfrecord"):
        return os.path.dirname(path), os.path.basename(path)
    return path, cfg.data.pattern or DEFAULT_PATTERNS[cfg.data.format]


# The URI schemes TensorFlow's file systems (tf.io.gfile) write, which every TFX task and our
# components write artifacts and serving versions through: gs:// (TensorFlow's own), s3:// and
# hdfs:// (tensorflow-io). KFP's minio:// (backend/src/v2/config/env.go:130-153) is KFP's name
# for its bundled MinIO, which TensorFlow has no file system for.
TF_SCHEMES = ("gs://", "s3://", "hdfs://")


def check_location(value: str, key: str) -> str:
    """``value`` when the tasks can write there: a file system path or a URI of TF_SCHEMES."""
    if "://" in value and not value.startswith(TF_SCHEMES):
        raise ConfigError(
            f"bad {key}: {value!r}; the tasks write through TensorFlow's file systems, which read "
            f"{', '.join(s[:-3] for s in TF_SCHEMES)} URIs and file system paths (for KFP's MinIO use its "
            "s3:// endpoint, docs/kubeflow.md); give one of those")
    return value


def container_serving_dir(cfg: PipelineConfig, pipeline_root: str) -> str:
    """Where the tasks read and push serving versions (serving/storage.py: a file system path
    or an object-store URI). By default <pipeline root>/serving, in the pipeline root's own
    store; on open-source KFP a path is a volume mounted there (``tfxline submit --target kfp
    --serving-pvc NAME``)."""
    root = cfg.serving.serving_root or f"{pipeline_root.rstrip('/')}/serving"
    key = "config value for serving.serving_root" if cfg.serving.serving_root else "pipeline root"
    return f"{check_location(root, key).rstrip('/')}/{cfg.serving.model_name or cfg.name}"


def runtime_parameters(cfg: PipelineConfig, data_root: Optional[str] = None):
    from tfx.v1.dsl.experimental import RuntimeParameter

    from tfxline.pipeline.config.steps import step_budget, train_args_json

    default_root = data_root or container_data_location(cfg)[0]
    return {
        DATA_ROOT_PARAM: RuntimeParameter(
            name=DATA_ROOT_PARAM, ptype=str, default=default_root),
        TRAIN_ARGS_PARAM: RuntimeParameter(
            name=TRAIN_ARGS_PARAM, ptype=str,
            default=train_args_json(step_budget(cfg.training))),
        PUSHGATEWAY_PARAM: RuntimeParameter(
            name=PUSHGATEWAY_PARAM, ptype=str, default=cfg.monitoring.pushgateway_url),
    }


def container_hyperparameters_uri(cfg: PipelineConfig) -> str:
    """The folder of the saved best hyperparameters ``tuning.reuse`` names, as the tasks read it
    (the Importer's source: the folder, which holds TFX's one best_hyperparameters.txt, the file the
    Trainer requires alone there: components/trainer/executor.py:90-97 at v1.16.0); '' when unset.
    ``latest`` names a local run's store, which a compiled pipeline does not read: refused in one line."""
    reuse = cfg.tuning.reuse
    if not reuse:
        return ""
    if reuse == T.REUSE_LATEST:
        raise ConfigError(
            "tuning.reuse: latest is resolved from a local run's metadata store, which a compiled pipeline "
            "does not read; compile with --set tuning.reuse=gs://BUCKET/PATH/best_hyperparameters (the folder "
            f"of a Tuner's {T.BEST_FILE}), or --set tuning.enabled=true to tune in the pipeline")
    folder = check_location(reuse, "config value for tuning.reuse")
    return posixpath.dirname(folder) if posixpath.basename(folder) == T.BEST_FILE else folder.rstrip("/")


def build_pipeline(cfg: PipelineConfig, pipeline_root: str, image: str, data_root: Optional[str] = None):
    """The KFP flavour of the pipeline: same factory, cluster paths and runtime parameters."""
    from tfxline.kubeflow import vertex
    from tfxline.pipeline.factory import create_pipeline

    params = runtime_parameters(cfg, data_root)
    return create_pipeline(
        cfg,
        data_root=params[DATA_ROOT_PARAM],
        data_pattern=container_data_location(cfg)[1],
        schema_path=container_schema_path(cfg),
        pipeline_root=pipeline_root,
        serving_dir=container_serving_dir(cfg, pipeline_root),
        metadata_connection_config=None,  # the cluster's metadata store
        beam_pipeline_args=stack_compat.image_beam_args(beam_engines.beam_args(cfg.beam, cfg.runtime.beam_args,
                                                                               image=image)),
        train_args=params[TRAIN_ARGS_PARAM],
        trainer_factory=vertex.trainer_factory(cfg, image),
        tuner_factory=vertex_tuning.tuner_factory(cfg, image),
        hyperparameters_uri=container_hyperparameters_uri(cfg),
        run_metrics=run_metrics.task_properties(cfg.monitoring, cfg.name, params[PUSHGATEWAY_PARAM]),
    )


def compile_pipeline(cfg: PipelineConfig, *, image: str, pipeline_root: str, output: str,
                     data_root: Optional[str] = None) -> Dict[str, Any]:
    """Write the PipelineJob JSON to ``output`` and return it as a dict."""
    from tfx.v1.orchestration import experimental as kubeflow_v2

    if cfg.data.window > 1:
        raise ConfigError(
            f"data.spans {cfg.data.spans} runs on LocalDagRunner only: a window of spans is TFX's rolling "
            "span-range Resolver, which TFX's Kubeflow V2 compiler does not compile (it compiles only the "
            "latest-artifact and latest-blessed-model resolvers); compile with --set data.spans=latest "
            "(each run ingests the newest span)")

    container_hyperparameters_uri(cfg)  # tuning.reuse: latest refused
    vertex_tuning.check(cfg)  # parallel trials without Vertex AI refused
    problem = names.kfp_name_problem(cfg.name)
    if problem:
        raise ConfigError(problem)
    check_location(pipeline_root, "pipeline root")
    pipeline = build_pipeline(cfg, pipeline_root, image, data_root)
    defaults = {name: p.default for name, p in runtime_parameters(cfg, data_root).items()}
    # Schema 2.1.0: the only one KFP's API server accepts (backend/src/apiserver/template/
    # v2_template.go), and what Vertex AI runs too (constants as `constant`, types as
    # `parameterType`, defaults as plain `parameterValues`).
    runner = kubeflow_v2.KubeflowV2DagRunner(
        config=kubeflow_v2.KubeflowV2DagRunnerConfig(
            default_image=image, default_commands=list(entrypoint.COMMAND), use_pipeline_spec_2_1=True),
        output_dir=os.path.dirname(os.path.abspath(output)),
        output_filename=os.path.basename(output))
    job = finish_for_kfp(runner.run(pipeline, parameter_values=defaults, write_out=False), defaults)
    os.makedirs(os.path.dirname(os.path.abspath(output)), exist_ok=True)
    with open(output, "w") as f:
        json.dump(job, f, indent=2, sort_keys=True)
        f.write("\n")
    return job


def finish_for_kfp(job: Dict[str, Any], defaults: Dict[str, Any]) -> Dict[str, Any]:
    """Every root parameter declares its ``defaultValue``, which TFX's compiler leaves out: KFP's
    driver fails a run that passes no value for a parameter without one ("neither value nor
    default value provided for non-optional parameter", backend/src/v2/driver/resolve.go), and
    ``kfp.Client`` sends only the arguments it is given (the PipelineJob's runtimeConfig is not
    part of what it uploads)."""
    for name, declared in job["pipelineSpec"].get("root", {}).get("inputDefinitions", {}).get("parameters", {}).items():
        if name in defaults:
            declared["defaultValue"] = defaults[name]
    return job
