"""Typed pipeline config: one file drives the local run and the Kubeflow compile.

Sections keep concerns apart: ``data`` (what to read), ``features`` (the feature spec),
``model`` (hyperparameters), ``training`` (how long and in what batches), ``runtime``
(strategy, precision, Beam: how it runs, not what it learns), ``evaluation`` (the
blessing gates) and ``serving`` (where a blessed model goes).

A config is YAML. ``load_config`` reads the file, applies ``section.key=value``
overrides, and checks every key and value, raising ``ConfigError`` with a one-line
message that names the key and the fix.
"""
from __future__ import annotations

import dataclasses
import os
import typing
from importlib import resources
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import yaml

from pipeline.data_source import FORMATS, PACKAGE_PREFIX, DataError, resolve_data_path
from transforms.features import FeatureSpec, FeatureSpecError

STRATEGIES = ("auto", "default", "one_device", "mirrored", "multi_worker_mirrored",
              "parameter_server", "tpu")
PRECISIONS = ("auto", "float32", "mixed_float16", "mixed_bfloat16")
TRAINING_MODES = ("steps", "epochs")
READERS = ("tfrecord", "tfxio")
DEFAULT_CONFIG = "taxi"


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
    # * for tfrecord).
    pattern: str = ""
    # A schema name in the schema/ package (schema/<name>.pbtxt) or a .pbtxt path.
    schema: str = "taxi"
    # CsvExampleGen hash split: train:eval buckets.
    train_buckets: int = 4
    eval_buckets: int = 1


@dataclasses.dataclass(frozen=True)
class ModelConfig:
    hidden_units: Tuple[int, ...] = (128, 64)
    dropout: float = 0.0
    embedding_max_dim: int = 16
    learning_rate: float = 0.003
    warmup_steps: int = 0


@dataclasses.dataclass(frozen=True)
class TrainingConfig:
    # The memory-bound batch: per replica and per micro-batch. One optimizer step uses
    # batch_size x replicas x gradient_accumulation_steps examples (the global batch).
    batch_size: int = 256
    # steps: train_steps optimizer steps in all (the Trainer's TrainArgs.num_steps, which a
    #   Kubeflow run can override), split into `epochs` rounds;
    # epochs: `epochs` full passes over the train split (train_steps is not used).
    # Every epoch / round ends with a validation pass, a TensorBoard point, a checkpoint
    # and (with early stopping) a chance to stop.
    mode: str = "steps"
    train_steps: int = 1000
    epochs: int = 10
    # Average the gradients of N micro-batches before each update: the update of an N x
    # larger batch at the memory of one batch_size batch. 1 = off.
    gradient_accumulation_steps: int = 1
    # Stop when the eval AUC (loss for non-binary tasks) has not improved for this many
    # epochs, and keep the best weights; 0 turns early stopping off.
    early_stopping_patience: int = 2
    eval_steps: int = 50
    seed: int = 42
    cache: bool = True             # cache the transformed data in memory when it fits
    # tfrecord: this project's tf.data reader (cached, measured 3-4x faster here);
    # tfxio: TFX's data accessor (TFXIO; reads any payload format the examples declare).
    reader: str = "tfrecord"


@dataclasses.dataclass(frozen=True)
class RuntimeConfig:
    strategy: str = "auto"
    precision: str = "auto"
    jit_compile: bool = False      # compile the training step with XLA
    # Transform's own pre- and post-transform TFDV statistics (and their anomalies): a second
    # full pass over the data that no gate reads (ExampleValidator uses StatisticsGen's).
    transform_statistics: bool = False
    # Beam args for the data components (the DirectRunner locally; Dataflow etc. on a
    # cluster). in_memory avoids per-component worker start-up on small data.
    beam_args: Tuple[str, ...] = ("--direct_running_mode=in_memory", "--direct_num_workers=1")


@dataclasses.dataclass(frozen=True)
class EvaluationConfig:
    min_auc: float = 0.75          # value threshold, judged on every run
    min_accuracy: float = 0.0
    max_auc_drop: float = 0.01     # change threshold against the last blessed model
    slices: Tuple[str, ...] = ("payment_type", "trip_start_hour")


@dataclasses.dataclass(frozen=True)
class ServingConfig:
    serving_root: str = ""         # empty means <output_root>/serving
    model_name: str = ""           # empty means the pipeline name
    keep_versions: int = 5         # pushed versions kept in the serving directory


@dataclasses.dataclass(frozen=True)
class VertexTrainingConfig:
    """Kubeflow/Vertex only: run the Trainer as a Vertex AI Training job. With more than
    one replica the job runs MultiWorkerMirroredStrategy across machines."""
    enabled: bool = False
    project: str = ""
    region: str = "us-central1"
    machine_type: str = "n1-standard-8"
    accelerator_type: str = ""     # e.g. NVIDIA_TESLA_T4; empty: CPU only
    accelerator_count: int = 0
    replica_count: int = 1         # 1 chief + (replica_count - 1) workers


@dataclasses.dataclass(frozen=True)
class PipelineConfig:
    features: FeatureSpec
    name: str = "taxi"
    output_root: str = "output"
    data: DataConfig = DataConfig()
    model: ModelConfig = ModelConfig()
    training: TrainingConfig = TrainingConfig()
    runtime: RuntimeConfig = RuntimeConfig()
    evaluation: EvaluationConfig = EvaluationConfig()
    serving: ServingConfig = ServingConfig()
    vertex_training: VertexTrainingConfig = VertexTrainingConfig()

    # Paths derived from output_root; runners own them, create_pipeline receives them.
    @property
    def pipeline_root(self) -> str:
        return os.path.join(self.output_root, "pipeline_root")

    @property
    def metadata_path(self) -> str:
        return os.path.join(self.output_root, "metadata.sqlite")

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


def packaged_config_path(name: str) -> str:
    return str(resources.files("pipeline") / "configs" / f"{name}.yaml")


def load_config(path: Optional[str] = None, overrides: Sequence[str] = (),
                **explicit: Any) -> PipelineConfig:
    """Read a YAML config (a file, or a packaged config by name; default: taxi), apply
    overrides, validate.

    ``overrides`` are ``section.key=value`` strings (values parsed as YAML);
    ``explicit`` are already-typed values keyed ``section.key`` (from CLI flags).
    """
    path = path or DEFAULT_CONFIG
    if not os.path.isfile(path) and os.path.isfile(packaged_config_path(path)):
        path = packaged_config_path(path)  # a packaged config by name: taxi, penguin
    if not os.path.isfile(path):
        raise ConfigError(f"config file {path} does not exist; pass an existing --config FILE")
    try:
        with open(path) as f:
            raw = yaml.safe_load(f) or {}
    except yaml.YAMLError as e:
        raise ConfigError(f"config file {path} is not valid YAML: {_first_line(e)}") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"config file {path} must hold a mapping of sections")
    for item in overrides:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ConfigError(f"override {item!r} must look like section.key=value")
        try:
            parsed = yaml.safe_load(value)
        except yaml.YAMLError:
            parsed = value
        _set_dotted(raw, key.strip(), parsed)
    for key, value in explicit.items():
        if value is not None:
            _set_dotted(raw, key, value)
    return config_from_dict(raw)


def config_from_dict(raw: Mapping[str, Any]) -> PipelineConfig:
    raw = dict(raw)
    _check_keys("config", raw, {f.name for f in dataclasses.fields(PipelineConfig)})
    if "features" not in raw:
        raise ConfigError("config: the 'features' section is required (see pipeline/configs/taxi.yaml)")
    try:
        features = FeatureSpec.from_dict(raw.pop("features"))
    except FeatureSpecError as e:
        raise ConfigError(str(e)) from None
    values: Dict[str, Any] = {"features": features}
    hints = typing.get_type_hints(PipelineConfig)
    for key, value in raw.items():
        values[key] = _coerce(hints[key], value, key)
    cfg = PipelineConfig(**values)
    cfg = dataclasses.replace(cfg, output_root=os.path.abspath(cfg.output_root))
    if cfg.data.path and not cfg.data.path.startswith(PACKAGE_PREFIX):
        # relative paths are relative to the working directory, as on a CLI
        cfg = dataclasses.replace(
            cfg, data=dataclasses.replace(cfg.data, path=os.path.abspath(cfg.data.path)))
    validate(cfg)
    return cfg


def validate(cfg: PipelineConfig) -> None:
    checks = [
        (cfg.name.replace("-", "").replace("_", "").isalnum(), "name",
         "use letters, digits, '-' or '_'"),
        (cfg.data.format in FORMATS, "data.format", f"use one of {', '.join(FORMATS)}"),
        (cfg.data.train_buckets >= 1 and cfg.data.eval_buckets >= 1, "data.train_buckets",
         "train_buckets and eval_buckets must both be >= 1"),
        (cfg.training.batch_size >= 1, "training.batch_size", "must be >= 1"),
        (cfg.training.train_steps >= 1, "training.train_steps", "must be >= 1"),
        (cfg.training.mode in TRAINING_MODES, "training.mode",
         f"use one of {', '.join(TRAINING_MODES)}"),
        (cfg.training.epochs >= 1, "training.epochs", "must be >= 1"),
        (cfg.training.reader in READERS, "training.reader", f"use one of {', '.join(READERS)}"),
        (cfg.training.mode == "epochs" or cfg.training.epochs <= cfg.training.train_steps,
         "training.epochs", "in steps mode, must be <= training.train_steps"),
        (cfg.training.gradient_accumulation_steps >= 1, "training.gradient_accumulation_steps",
         "must be >= 1 (1 turns accumulation off)"),
        (cfg.training.eval_steps >= 1, "training.eval_steps", "must be >= 1"),
        (all(u >= 1 for u in cfg.model.hidden_units), "model.hidden_units",
         "every layer needs >= 1 unit"),
        (0.0 <= cfg.model.dropout < 1.0, "model.dropout", "must be in [0, 1)"),
        (cfg.model.learning_rate > 0, "model.learning_rate", "must be > 0"),
        (cfg.runtime.strategy in STRATEGIES, "runtime.strategy",
         f"use one of {', '.join(STRATEGIES)}"),
        (cfg.runtime.precision in PRECISIONS, "runtime.precision",
         f"use one of {', '.join(PRECISIONS)}"),
        (0.0 <= cfg.evaluation.min_auc <= 1.0, "evaluation.min_auc", "must be in [0, 1]"),
        (0.0 <= cfg.evaluation.min_accuracy <= 1.0, "evaluation.min_accuracy",
         "must be in [0, 1]"),
        (cfg.evaluation.max_auc_drop >= 0.0, "evaluation.max_auc_drop", "must be >= 0"),
        (cfg.serving.keep_versions >= 1, "serving.keep_versions", "must be >= 1"),
        (cfg.vertex_training.replica_count >= 1, "vertex_training.replica_count", "must be >= 1"),
        (not cfg.vertex_training.enabled or cfg.vertex_training.project, "vertex_training.project",
         "set the Google Cloud project when vertex_training.enabled is true"),
        ((cfg.vertex_training.accelerator_count > 0) == bool(cfg.vertex_training.accelerator_type),
         "vertex_training.accelerator_count",
         "set accelerator_type and accelerator_count > 0 together, or neither"),
    ]
    for ok, key, fix in checks:
        if not ok:
            raise ConfigError(f"bad config value for {key}: {_value_at(cfg, key)!r}; {fix}")
    try:
        data_path = resolve_data_path(cfg.data.path) if cfg.data.path else ""
    except DataError as e:
        raise ConfigError(str(e)) from None
    if data_path and not os.path.exists(data_path):
        raise ConfigError(
            f"data path {cfg.data.path} does not exist; pass an existing {cfg.data.format.upper()} "
            "file or directory with --data (or data.path in the config)")
    unknown = [s for s in cfg.evaluation.slices if s not in cfg.features.raw_columns]
    if unknown:
        raise ConfigError(
            f"bad config value for evaluation.slices: {', '.join(unknown)} not among the "
            "declared feature columns; slice on a column listed under features")


def _value_at(cfg: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        cfg = getattr(cfg, part)
    return cfg


def _first_line(e: Exception) -> str:
    return str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__


def _set_dotted(raw: Dict[str, Any], key: str, value: Any) -> None:
    parts = key.split(".")
    node = raw
    for part in parts[:-1]:
        child = node.setdefault(part, {})
        if not isinstance(child, dict):
            raise ConfigError(f"override {key}: {part} is not a section")
        node = child
    node[parts[-1]] = value


def _check_keys(where: str, raw: Mapping[str, Any], allowed: set) -> None:
    unknown = sorted(set(raw) - allowed)
    if unknown:
        raise ConfigError(
            f"unknown config key {where}.{unknown[0]}" if where != "config"
            else f"unknown config key {unknown[0]}")


def section_from_dict(cls: Any, raw: Mapping[str, Any], where: str) -> Any:
    """Build one typed config section (e.g. TrainingConfig) from a plain dict."""
    return _coerce(cls, raw, where)


def _coerce(tp: Any, value: Any, where: str) -> Any:
    origin = typing.get_origin(tp)
    if dataclasses.is_dataclass(tp):
        if not isinstance(value, Mapping):
            raise ConfigError(f"bad config value for {where}: expected a section (mapping)")
        allowed = {f.name for f in dataclasses.fields(tp)}
        unknown = sorted(set(value) - allowed)
        if unknown:
            raise ConfigError(
                f"unknown config key {where}.{unknown[0]}; allowed keys in {where}: "
                f"{', '.join(sorted(allowed))}")
        hints = typing.get_type_hints(tp)
        return tp(**{k: _coerce(hints[k], v, f"{where}.{k}") for k, v in value.items()})
    if origin is tuple:
        if isinstance(value, str):
            value = [v for v in value.split(",") if v]
        if not isinstance(value, (list, tuple)):
            raise ConfigError(f"bad config value for {where}: expected a list, got {value!r}")
        item = typing.get_args(tp)[0]
        return tuple(_coerce(item, v, where) for v in value)
    if tp is bool:
        if isinstance(value, bool):
            return value
        raise ConfigError(f"bad config value for {where}: expected true or false, got {value!r}")
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"bad config value for {where}: expected an integer, got {value!r}")
        return value
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"bad config value for {where}: expected a number, got {value!r}")
        return float(value)
    if tp is str:
        if value is None:
            return ""
        if not isinstance(value, (str, int, float)) or isinstance(value, bool):
            raise ConfigError(f"bad config value for {where}: expected a string, got {value!r}")
        return str(value)
    raise TypeError(f"unsupported config type {tp} at {where}")  # a programming error
