"""The Beam args of each engine the data components run on (the ``beam`` config section).

One function turns the section into Beam pipeline args for a local run and for a compiled one;
the runner-specific pins and packaging stay where they are (pipeline/beam/stack_compat.py pins the
FnApiRunner for the direct engine on Beam >= 2.68; patches/tfx_packaging.py skips TFX's sdist
only for runners in this process).

- direct: Beam's DirectRunner on this machine. in_memory (one process: no worker start-up),
  multi_processing with ``direct_num_workers`` processes (never 0: Beam would take the CPU
  count, measured worse on small data), or auto (the default): in_memory, except that on a
  large day (a CSV input ExampleGen writes in 2+ shards) ``PARALLEL_COMPONENTS`` run
  multi_processing with a worker per core, at most one per shard (``component_args``).
- dataflow: Dataflow Runner v2 (``--experiments=use_runner_v2``) with the pipeline image as
  the SDK container (``--sdk_container_image``, ``--sdk_location=container``): the workers
  run the code the image holds (transforms/, trainer/, the feature spec, TFX), nothing staged.
- flink, spark, portable: Beam's PortableRunner on ``job_endpoint`` (a Flink / Spark job server;
  ``embed``: Beam's Python job service in this process), SDK workers per ``environment_type``:
  DOCKER (containers of the pipeline image), EXTERNAL (a worker pool, e.g. containers of the
  image running ``apache_beam.runners.worker.worker_pool_main``), PROCESS or LOOPBACK. The
  workers' image is also given as ``--sdk_container_image``: TFX then stages no sdist of itself
  (tfx.utils.dependency_utils), which workers that run the image do not need.
"""
from __future__ import annotations

import os
from typing import Dict, Optional, Sequence, Tuple

from tfxline.pipeline.config import ConfigError
from tfxline.pipeline.config.platform import ENGINES, PORTABLE_ENGINES

# The components that run in worker processes on a large day (docs/scale.md). On a 1M-row day
# on 2 cores, each reading 4 shards, 2 workers ran the Evaluator in 131 s against 242 s in
# memory, and Transform in 92-101 s against 117 s; but with Transform in workers too the run
# peaked at 4.4-4.7 GB, with the Evaluator alone at 3.36 GB (the 4 GB target), for ~25 s more.
# CsvExampleGen (one CSV, read by one worker) and StatisticsGen were no faster, and every
# component was slower at 100k rows (one shard: one worker does the work).
PARALLEL_COMPONENTS = ("Evaluator",)


class BeamEngineError(ConfigError):
    """The beam section cannot make args for its engine (a value missing)."""


def beam_args(beam, extra: Sequence[str] = (), *, image: str = "") -> Tuple[str, ...]:
    """The engine's args, then ``extra`` (runtime.beam_args, which win). ``image``: the pipeline
    image a compiled pipeline runs in, the workers' image unless beam.sdk_container_image names one."""
    engine = beam.engine
    if engine == "direct" and beam.direct_running_mode == "auto":
        args = ["--direct_running_mode=in_memory", "--direct_num_workers=1"]  # component_args: the rest
    elif engine == "direct":
        args = [f"--direct_running_mode={beam.direct_running_mode}", f"--direct_num_workers={beam.direct_num_workers}"]
    elif engine == "dataflow":
        worker_image = beam.sdk_container_image or image
        if not worker_image:
            raise BeamEngineError(
                "bad config value for beam.sdk_container_image: ''; the dataflow engine runs its workers in the "
                "pipeline image: set it (e.g. REGION-docker.pkg.dev/PROJECT/REPO/tfxline:TAG), or compile with --image")
        args = ["--runner=DataflowRunner", f"--project={beam.project}", f"--region={beam.region}",
                f"--temp_location={beam.temp_location}", "--experiments=use_runner_v2",
                f"--sdk_container_image={worker_image}", "--sdk_location=container"]
    elif engine in PORTABLE_ENGINES:
        worker_image = beam.sdk_container_image or image
        args = ["--runner=PortableRunner", f"--job_endpoint={beam.job_endpoint}",
                f"--environment_type={beam.environment_type}"]
        config = beam.environment_config or (worker_image if beam.environment_type == "DOCKER" else "")
        if beam.environment_type in ("DOCKER", "EXTERNAL") and not config:
            raise BeamEngineError(
                f"bad config value for beam.environment_config: ''; the {engine} engine's {beam.environment_type} "
                "workers need " + ("an image (the pipeline image: compile with --image, or set "
                                   "beam.sdk_container_image)" if beam.environment_type == "DOCKER"
                                   else "the worker pool's host:port"))
        if config:
            args.append(f"--environment_config={config}")
        if worker_image:  # the workers run the image: TFX stages no sdist of itself for them
            args.append(f"--sdk_container_image={worker_image}")
    else:
        raise BeamEngineError(f"bad config value for beam.engine: {engine!r}; use one of {', '.join(ENGINES)}")
    return tuple(args) + tuple(extra)


def component_args(beam, shards: int, extra: Sequence[str] = (), cpus: Optional[int] = None
                   ) -> Dict[str, Tuple[str, ...]]:
    """Per-component args on top of ``beam_args`` (component id -> args; TFX puts them after
    the pipeline's). The auto direct mode on a day of ``shards`` ExampleGen shards (2+) and a
    machine of 2+ cores: ``PARALLEL_COMPONENTS`` run multi_processing, one worker per core, at
    most one per shard (a worker reads whole files). ``extra`` (runtime.beam_args) still wins."""
    cpus = cpus or os.cpu_count() or 1
    if beam.engine != "direct" or beam.direct_running_mode != "auto" or shards < 2 or cpus < 2:
        return {}
    parallel = ("--direct_running_mode=multi_processing", f"--direct_num_workers={min(cpus, shards)}")
    return {component: parallel + tuple(extra) for component in PARALLEL_COMPONENTS}


def starts_worker_processes(args: Sequence) -> bool:
    """Whether a component with these Beam args (the pipeline's, then its own; the last mode
    given wins) runs the DirectRunner's multi_processing mode, whose workers are child processes."""
    modes = [a for a in args if isinstance(a, str) and a.startswith("--direct_running_mode=")]
    return bool(modes) and modes[-1] == "--direct_running_mode=multi_processing"
