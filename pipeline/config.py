"""Typed pipeline config: one file drives the local run and the Kubeflow compile.

Sections keep concerns apart: ``data`` (what to read), ``features`` (the feature spec),
``model`` (hyperparameters), ``training`` (how long and in what batches), ``runtime``
(strategy, precision: how it trains, not what it learns), ``beam`` (where the data components
run), ``evaluation`` (the
blessing gates), ``drift`` (the data gate against the serving model's data), ``serving`` (where a
blessed model goes) and ``retention`` (how many runs' artifacts a local output root keeps).

A config is YAML: ``pipeline.config_loader.load_config`` reads the file, applies
``section.key=value`` overrides, and checks every key and value, raising ``ConfigError``
with a one-line message that names the key and the fix.
"""
from __future__ import annotations

import dataclasses
import os
from typing import Any, Dict, Tuple

from transforms.features import FeatureSpec
# The sections the Trainer reads live with the model code (trainer/ never imports pipeline/).
from trainer.settings import ModelConfig, RuntimeConfig, TrainingConfig

DEFAULT_CONFIG = "taxi"
# ExampleGen's split names (TFX's defaults for train and eval).
TRAIN_SPLIT, VALIDATION_SPLIT, EVAL_SPLIT = "train", "validation", "eval"


class ConfigError(ValueError):
    """A config file, key or value is invalid."""


@dataclasses.dataclass(frozen=True)
class DataConfig:
    # A file or a directory; empty means the Chicago taxi CSV that ships inside the
    # installed tfx package. "package:<package>/<path>" names data inside any installed
    # Python package (located through the package, never downloaded).
    path: str = ""
    # csv (CsvExampleGen) or tfrecord (ImportExampleGen: TFRecords of tf.Example, GZIP when
    # the file name ends in .gz).
    format: str = "csv"
    # For a directory: the files to read, a glob relative to it (default *.csv for csv,
    # * for tfrecord). TFX's span placeholders make it daily data: {SPAN} (or {SPAN:4} for
    # zero-padded, or the date specs {YYYY}{MM}{DD}) and optionally {VERSION}, e.g.
    # "span-{SPAN}/*.csv"; each span is a partition that lands once (a new version replaces it).
    pattern: str = ""
    # Which spans a run trains on (a pattern with {SPAN}): "latest" (the newest span), or
    # "window:N" ({window: N} in YAML): the newest span and the N-1 before it that earlier runs
    # ingested (TFX's rolling RangeConfig). Each run ingests the newest span once; a span
    # already ingested comes from the cache.
    spans: str = "latest"
    # A schema name in the schema/ package (schema/<name>.pbtxt) or a .pbtxt path.
    schema: str = "taxi"
    # ExampleGen's hash split, train : validation : eval buckets (70% / 10% / 20%). The
    # Trainer fits on train and picks its epoch (early stopping) on validation; the Evaluator
    # judges and gates on eval, which nothing trained or selected on. validation_buckets: 0
    # drops the validation split and early stopping then watches eval (optimistic figures).
    train_buckets: int = 7
    validation_buckets: int = 1    # the validation split's buckets (see train_buckets; 0: none)
    eval_buckets: int = 2          # the eval split's buckets (see train_buckets)
    # Rows whose label is empty (CSV): drop leaves them out of training and evaluation (CsvExampleGen
    # skips them; the run's summary and report give their count); fail refuses the file before the run
    missing_labels: str = "drop"

    @property
    def splits(self) -> Tuple[str, ...]:
        """ExampleGen's output splits, in order."""
        return (TRAIN_SPLIT, VALIDATION_SPLIT, EVAL_SPLIT) if self.validation_buckets else (TRAIN_SPLIT, EVAL_SPLIT)

    @property
    def trainer_eval_split(self) -> str:
        """The split the Trainer validates on (early stopping): validation when there is one."""
        return VALIDATION_SPLIT if self.validation_buckets else EVAL_SPLIT

    @property
    def window(self) -> int:
        """How many of the newest spans a run trains on (1 for "latest")."""
        kind, _, n = self.spans.partition(":")
        return int(n) if kind == "window" and n.isdigit() else 1


@dataclasses.dataclass(frozen=True)
class EvaluationConfig:
    """The blessing gates on the eval split (pipeline/eval_config.py). The feature spec's task
    picks which apply; the others are ignored. Value thresholds judge every run; change
    thresholds compare with the model serving now, and the first model (nothing serving) is
    judged on its value thresholds alone. Each task has a gate on by default (min_auc,
    min_accuracy_lift, min_r2) that refuses a model no better than the trivial one, so a config
    that sets no number blesses a reasonable first model. A not-blessed run names the failed
    gate and the key to change in one line."""
    # binary
    # AUC at least this. 0.5 is chance; 0.55 is 4 standard errors above it on the taxi eval split
    # (~3,000 rows, 22% positive) and ~1.5 on a 400-row one: weak but real ranking is blessed
    min_auc: float = 0.55
    max_auc_drop: float = 0.01     # AUC at most this far below the serving model's (absolute)
    # binary and multiclass
    min_accuracy: float = 0.0      # accuracy at least this (0: no floor)
    # multiclass
    # accuracy minus the eval split's commonest-class share (accuracy_lift) above this; 0: strictly
    # better than always predicting the commonest class; negative allows worse
    min_accuracy_lift: float = 0.0
    max_accuracy_drop: float = 0.01  # multiclass accuracy at most this far below the serving model's (absolute)
    # regression (errors in the label's unit)
    min_r2: float = 0.0            # R² above this; 0: strictly better than always predicting the mean
    max_rmse: float = 0.0          # RMSE at most this (0: no ceiling)
    max_mae: float = 0.0           # MAE at most this (0: no ceiling)
    max_error_increase: float = 0.1  # RMSE at most this fraction above the serving model's (0.1: 10 %)
    slices: Tuple[str, ...] = ("payment_type", "trip_start_hour")  # reported per value, not gated


@dataclasses.dataclass(frozen=True)
class DriftConfig:
    """Stop before training when the new data's distribution moved away from the data the
    serving model was trained on (components/drift_gate.py, TFDV's drift comparators).
    Every feature column is checked; 0 turns one feature's check off. Defaults measured on
    taxi samples: two 3,000-row samples of the same data differ by at most 0.16 (JSD over
    quantile bins, on the integer community areas; 0.06 on fare) / 0.04 (L-infinity); fare x 50
    gives 0.75, cash trips only 0.35 on payment_type. Samples of a few hundred rows differ by
    up to 0.25: raise the thresholds there."""
    enabled: bool = True                 # false: no drift check (the run says it was not checked)
    numeric_threshold: float = 0.2       # Jensen-Shannon divergence (quantile bins), numeric features
    categorical_threshold: float = 0.15  # L-infinity distance, categorical features
    features: Dict[str, float] = dataclasses.field(default_factory=dict)  # per-feature thresholds


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


@dataclasses.dataclass(frozen=True)
class BeamConfig:
    """Where the data components' Beam pipelines run (CsvExampleGen, StatisticsGen, Transform,
    Evaluator; pipeline/beam_engines.py, docs/scale.md). direct: this machine
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


@dataclasses.dataclass(frozen=True)
class ServingConfig:
    serving_root: str = ""         # empty means <output_root>/serving
    model_name: str = ""           # empty means the pipeline name
    keep_versions: int = 5         # pushed versions kept in the serving directory (and the stable and canary ones)
    # What a push does to the release labels (docs/serving.md): stable (the new version becomes
    # stable once TF Serving has loaded it: 'tfxline serving settle') or canary (it serves
    # canary_percent of the traffic beside the stable one until 'tfxline serving promote'; a
    # first push is stable)
    release: str = "stable"
    canary_percent: int = 10       # the traffic share of a canary that a push starts (serving.release: canary)
    tf_serving_base_path: str = ""  # the serving directory as TF Serving sees it (models.config); empty: its path here
    kserve_storage_uri: str = ""   # the serving directory as KServe sees it; empty: pvc://tfxline-serving/<model name>
    batch_threads: int = 0         # TF Serving's num_batch_threads in batching_parameters.txt; 0: this machine's CPUs
    # A TFLite model (model.tflite) beside each pushed SavedModel, for devices (docs/serving.md):
    # off, or its quantization: none (float32), dynamic (int8 weights), float16, int8 (weights and
    # activations, calibrated on train rows; models with string inputs cannot be calibrated)
    tflite: str = "off"
    # how far the TFLite model may stray from the SavedModel on the eval rows before the push is
    # refused; 0: the mode's default (none 1e-4, dynamic 0.1, float16 0.1: the largest output
    # difference; int8 0.02: the drop of auc / accuracy, or the relative rise of rmse)
    tflite_tolerance: float = 0.0


@dataclasses.dataclass(frozen=True)
class RetentionConfig:
    """Local runs: after each run, delete the bulky artifacts (examples, transform outputs,
    models, TensorBoard logs) of runs older than the newest ``keep_runs`` complete ones
    (runs/retention.py; ``tfxline gc`` does it on demand). 0 keeps everything, as TFX does."""
    keep_runs: int = 0             # how many complete runs keep their artifacts (0: every run)


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


@dataclasses.dataclass(frozen=True)
class PipelineConfig:
    features: FeatureSpec
    name: str = "taxi"             # the pipeline's name: MLMD's pipeline, the serving model's default name
    output_root: str = "output"    # where local runs write: pipeline_root/, metadata.sqlite, runs/, serving/, logs/
    data: DataConfig = DataConfig()
    model: ModelConfig = ModelConfig()
    training: TrainingConfig = TrainingConfig()
    runtime: RuntimeConfig = RuntimeConfig()
    evaluation: EvaluationConfig = EvaluationConfig()
    drift: DriftConfig = DriftConfig()
    serving: ServingConfig = ServingConfig()
    metadata: MetadataConfig = MetadataConfig()
    monitoring: MonitoringConfig = MonitoringConfig()
    beam: BeamConfig = BeamConfig()
    retention: RetentionConfig = RetentionConfig()
    vertex_training: VertexTrainingConfig = VertexTrainingConfig()

    # Paths derived from output_root; runners own them, create_pipeline receives them.
    @property
    def pipeline_root(self) -> str:
        return os.path.join(self.output_root, "pipeline_root")

    @property
    def metadata_path(self) -> str:
        return os.path.join(self.output_root, "metadata.sqlite")

    @property
    def metadata_store(self) -> Any:
        """The store as plain data: the SQLite file's path, or {"mysql": {host, port, database,
        user, password_env}} (runs.store.connection_config turns it into MLMD's config)."""
        if self.metadata.backend == "sqlite":
            return self.metadata_path
        return {"mysql": {k: v for k, v in dataclasses.asdict(self.metadata).items() if k != "backend"}}

    @property
    def serving_dir(self) -> str:
        root = self.serving.serving_root or os.path.join(self.output_root, "serving")
        return os.path.join(root, self.serving.model_name or self.name)

    def to_dict(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if isinstance(value, FeatureSpec):
                out[f.name] = value.to_dict()
            elif dataclasses.is_dataclass(value):
                out[f.name] = {k: list(v) if isinstance(v, tuple) else v
                               for k, v in dataclasses.asdict(value).items()}
            else:
                out[f.name] = value
        return out
