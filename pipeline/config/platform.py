"""The sections of a pipeline config about where it runs and reports: ``runtime``, ``beam``,
``metadata``, ``monitoring`` and ``vertex_training``. Each dataclass checks its own values (``problems()``,
beside the fields); ``pipeline.config.PipelineConfig`` composes them with the others.
"""
from __future__ import annotations

import dataclasses
import re
from typing import Dict, Iterator, Tuple

from tfxline.trainer.settings import TrainerRuntime
from tfxline.typed_config.problems import Problem, bad

# The beam section's values (pipeline/beam/engines.py makes each engine's Beam args).
ENGINES = ("direct", "dataflow", "flink", "spark", "portable")
PORTABLE_ENGINES = ("flink", "spark", "portable")
DIRECT_MODES = ("auto", "in_memory", "multi_processing", "multi_threading")
ENVIRONMENT_TYPES = ("DOCKER", "EXTERNAL", "PROCESS", "LOOPBACK")
METADATA_BACKENDS = ("sqlite", "mysql")
LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")  # a Prometheus label name


@dataclasses.dataclass(frozen=True)
class RuntimeConfig(TrainerRuntime):
    """How the pipeline runs: the Trainer's settings (trainer/settings.py, the only ones its
    custom_config carries) and these, which the data components read."""
    # Transform's own pre- and post-transform TFDV statistics (and their anomalies): a second
    # full pass over the data that no gate reads (ExampleValidator uses StatisticsGen's).
    transform_statistics: bool = False
    # Extra Beam args for the data components, after the beam section's engine args (they
    # win): e.g. ["--max_num_workers=20"] on Dataflow.
    beam_args: Tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class BeamConfig:
    """Where the data components' Beam pipelines run (CsvExampleGen, StatisticsGen, Transform,
    Evaluator; pipeline/beam/engines.py, docs/scale.md). direct: this machine
    (in_memory, multi_processing with direct_num_workers processes, or auto: in_memory but
    multi_processing where it measured faster on large days); dataflow: Dataflow Runner
    v2 with the pipeline image as the SDK container; flink, spark, portable: Beam's portable runner
    on a job endpoint (a Flink or Spark job server; portable: any, 'embed' runs Beam's Python
    job service in-process), its SDK workers per environment_type. runtime.beam_args come after
    the engine's args and win."""
    engine: str = "direct"               # direct | dataflow | flink | spark | portable
    # direct: auto | in_memory | multi_processing | multi_threading. auto: in_memory, but on a
    # large CSV day (2+ ExampleGen shards) the Evaluator uses a process per core
    direct_running_mode: str = "auto"
    direct_num_workers: int = 1          # direct multi_processing / multi_threading: processes / threads (>= 1)
    project: str = ""                    # dataflow: the Google Cloud project
    region: str = ""                     # dataflow: e.g. us-central1
    temp_location: str = ""              # dataflow: gs://bucket/tmp (staging and temp files)
    job_endpoint: str = ""               # flink / spark / portable: host:port of the Beam job service
    # flink / spark / portable: how SDK workers start. DOCKER: containers of environment_config
    # (default: the pipeline image, kubeflow/Dockerfile); EXTERNAL: a worker pool at
    # environment_config (host:port, e.g. python -m apache_beam.runners.worker.worker_pool_main
    # in the image); PROCESS / LOOPBACK as Beam defines them
    environment_type: str = "DOCKER"
    environment_config: str = ""         # DOCKER: the image (default: the workers' image); EXTERNAL: host:port
    # the image the workers run (dataflow, DOCKER; EXTERNAL: the pool's); empty: compile's --image
    sdk_container_image: str = ""

    def problems(self) -> Iterator[Problem]:
        """Each engine's required values (pipeline/beam/engines.py)."""
        if self.engine not in ENGINES:
            yield bad(self, "engine", f"use one of {', '.join(ENGINES)}")
        if self.direct_running_mode not in DIRECT_MODES:
            yield bad(self, "direct_running_mode", f"use one of {', '.join(DIRECT_MODES)}")
        if not self.direct_num_workers >= 1:
            yield bad(self, "direct_num_workers", "must be >= 1 (0 would mean Beam's own choice, the CPU count)")
        if self.engine == "dataflow" and not self.project:
            yield bad(self, "project", "the dataflow engine needs the Google Cloud project")
        if self.engine == "dataflow" and not self.region:
            yield bad(self, "region", "the dataflow engine needs a region, e.g. us-central1")
        if self.engine == "dataflow" and not self.temp_location.startswith("gs://"):
            yield bad(self, "temp_location", "the dataflow engine needs a gs:// temp location, e.g. gs://BUCKET/tmp")
        if self.engine in PORTABLE_ENGINES and not self.job_endpoint:
            yield bad(self, "job_endpoint",
                      f"the {self.engine} engine needs the Beam job service's host:port (portable: or 'embed')")
        if self.engine != "portable" and self.job_endpoint == "embed":
            yield bad(self, "job_endpoint",
                      f"the {self.engine} engine runs on its own job server: give its host:port (e.g. localhost:8099)")
        if self.environment_type not in ENVIRONMENT_TYPES:
            yield bad(self, "environment_type", f"use one of {', '.join(ENVIRONMENT_TYPES)}")
        if self.engine in PORTABLE_ENGINES and self.environment_type == "EXTERNAL" and not self.environment_config:
            yield bad(self, "environment_config", "EXTERNAL workers need the worker pool's host:port")


@dataclasses.dataclass(frozen=True)
class MetadataConfig:
    """Where ML Metadata lives (local runs; on Kubeflow the cluster's store is used).
    sqlite (default): <output_root>/metadata.sqlite, embedded; runs on one output root take
    turns. mysql: a MySQL / MariaDB server a team shares; runs may overlap. The password is
    read from the environment variable named by password_env, never from the config."""
    backend: str = "sqlite"       # sqlite | mysql
    host: str = "127.0.0.1"        # mysql: the server
    port: int = 3306               # mysql: its TCP port
    database: str = "tfxline"      # mysql: the database MLMD keeps its tables in
    user: str = "tfxline"          # mysql: the user
    password_env: str = "TFXLINE_MLMD_PASSWORD"  # mysql: the environment variable holding the password

    def problems(self) -> Iterator[Problem]:
        if self.backend not in METADATA_BACKENDS:
            yield bad(self, "backend", "use sqlite or mysql")
        if not 1 <= self.port <= 65535:
            yield bad(self, "port", "must be a TCP port (1-65535)")
        if not self.password_env:
            yield bad(self, "password_env", "name the environment variable that holds the MySQL password")


@dataclasses.dataclass(frozen=True)
class MonitoringConfig:
    """Run metrics for Prometheus (local/monitoring.py, docs/daily.md): at the end of every
    ``tfxline run``, refused, failed or complete, pushed to a Pushgateway and/or written for
    node_exporter's textfile collector, grouped by the pipeline's name (job) and ``labels``.
    Off when both pushgateway_url and textfile_dir are empty."""
    pushgateway_url: str = ""      # e.g. http://pushgateway:9091; empty: no push
    textfile_dir: str = ""         # node_exporter --collector.textfile.directory; empty: no file
    timeout_seconds: float = 3.0   # the longest a push may take; a gateway that is down costs at most this
    # grouping labels beside job, e.g. {env: prod}: two deployments of one pipeline keep their own series
    labels: Dict[str, str] = dataclasses.field(default_factory=dict)
    max_hours_without_run: float = 26.0   # TfxlineNoRecentRun fires after this long without a run (any result)
    max_hours_without_push: float = 26.0  # TfxlineNoRecentPush: this long without a push, while runs go on

    def problems(self) -> Iterator[Problem]:
        if not self.timeout_seconds > 0:
            yield bad(self, "timeout_seconds", "must be > 0 (seconds a push may take)")
        if not self.max_hours_without_run > 0:
            yield bad(self, "max_hours_without_run", "must be > 0 (hours; a daily pipeline: 26)")
        if not self.max_hours_without_push > 0:
            yield bad(self, "max_hours_without_push", "must be > 0 (hours; a daily pipeline: 26)")
        yield from self.push_problems()

    def push_problems(self) -> Iterator[Problem]:
        """Where the push goes and its grouping labels: what a run refused for the rest of its
        config still needs to report itself (pipeline/config/reporting.py)."""
        if self.pushgateway_url and not self.pushgateway_url.startswith(("http://", "https://")):
            yield bad(self, "pushgateway_url", "must start with http:// or https:// (e.g. http://pushgateway:9091)")
        yield from self.label_problems()

    def label_problems(self) -> Iterator[Problem]:
        """Prometheus label names (not __-reserved, not one the metrics or rules use already) with
        non-empty values: they become the push's grouping key."""
        from tfxline.components.run_metrics import RESERVED_LABELS

        for name, value in self.labels.items():
            if not LABEL_NAME.fullmatch(name) or name.startswith("__"):
                yield Problem("labels", f"{name!r} is not a Prometheus label name",
                              "use letters, digits and _ (not starting with a digit or __), e.g. env")
            elif name in RESERVED_LABELS:
                yield Problem("labels", f"{name!r} is a label tfxline's metrics use already "
                                        f"({', '.join(sorted(RESERVED_LABELS))})", "pick another name, e.g. env")
            elif not value:
                yield Problem(f"labels.{name}", "empty",
                              "give it a value (an empty label is no label to Prometheus), e.g. prod")


@dataclasses.dataclass(frozen=True)
class VertexTrainingConfig:
    """Kubeflow/Vertex only: run the Trainer as a Vertex AI Training job. With more than
    one replica the job runs MultiWorkerMirroredStrategy across machines."""
    enabled: bool = False          # run the Trainer as a Vertex AI Training job (Kubeflow compile only)
    project: str = ""              # the Google Cloud project of the job
    region: str = "us-central1"    # where the job runs
    machine_type: str = "n1-standard-8"  # each replica's machine
    accelerator_type: str = ""     # e.g. NVIDIA_TESLA_T4; empty: CPU only
    accelerator_count: int = 0     # accelerators per replica (with accelerator_type)
    replica_count: int = 1         # 1 chief + (replica_count - 1) workers

    def problems(self) -> Iterator[Problem]:
        if not self.replica_count >= 1:
            yield bad(self, "replica_count", "must be >= 1")
        if self.enabled and not self.project:
            yield bad(self, "project", "set the Google Cloud project when vertex_training.enabled is true")
        if (self.accelerator_count > 0) != bool(self.accelerator_type):
            yield bad(self, "accelerator_count", "set accelerator_type and accelerator_count > 0 together, or neither")
