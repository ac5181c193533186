"""Load a pipeline config: YAML file -> overrides -> typed sections -> validated.

``load_config`` reads a file (or a packaged config by name), applies ``section.key=value``
overrides and typed CLI values, builds the dataclasses of ``pipeline.config`` and checks
every key and value, raising ``ConfigError`` with a one-line message naming the key and fix.
"""
from __future__ import annotations

import dataclasses
import os
import re
import typing
from importlib import resources
from typing import Any, Dict, Mapping, Optional, Sequence

import yaml

from pipeline.beam_engines import DIRECT_MODES, ENGINES, ENVIRONMENT_TYPES, PORTABLE_ENGINES
from pipeline.config import DEFAULT_CONFIG, ConfigError, PipelineConfig
from pipeline.labels import MISSING_LABELS
from pipeline.data_source import FORMATS, PACKAGE_PREFIX, DataError, has_span_spec, resolve_data_path
from serving.release import RELEASES
from serving.tflite import MODES as TFLITE_MODES, OFF as TFLITE_OFF
from trainer.settings import (BATCH_SCALINGS, JIT_COMPILES, PRECISIONS, READERS, STRATEGIES, TRAINING_MODES,
                              TrainingConfig)
from transforms.features import FeatureSpec, FeatureSpecError


class MissingDataError(ConfigError):
    """The config's data path names no data: the input is missing (a run's reason bad_input: the
    day's file has not landed), though the config is where the path is set."""


def packaged_config_path(name: str) -> str:
    return str(resources.files("pipeline") / "configs" / f"{name}.yaml")


def load_config(path: Optional[str] = None, overrides: Sequence[str] = (),
                **explicit: Any) -> PipelineConfig:
    """Read a YAML config (a file, or a packaged config by name; default: taxi), apply
    overrides, validate.

    ``overrides`` are ``section.key=value`` strings (values parsed as YAML);
    ``explicit`` are already-typed values keyed ``section.key`` (from CLI flags).
    """
    raw = _raw_config(path, overrides)
    for key, value in explicit.items():
        if value is not None:
            _set_dotted(raw, key, value)
    _fit_rounds_to_steps(raw, explicit.get("training.train_steps"), overrides)
    return config_from_dict(raw)


def _raw_config(path: Optional[str], overrides: Sequence[str]) -> Dict[str, Any]:
    """The YAML file (or packaged config) as a dict, the ``section.key=value`` overrides applied."""
    path = path or DEFAULT_CONFIG
    if not os.path.isfile(path) and os.path.isfile(packaged_config_path(path)):
        path = packaged_config_path(path)  # a packaged config by name: taxi, penguin
    if not os.path.isfile(path):
        raise ConfigError(f"config file {path} does not exist; pass an existing --config FILE")
    try:
        with open(path) as f:
            raw = yaml.safe_load(f) or {}
    except yaml.YAMLError as e:
        raise ConfigError(f"config file {path} is not valid YAML: {_yaml_problem(e)}; fix the YAML there "
                          "(indentation, a missing colon or quote)") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"config file {path} must hold a mapping of sections; start from pipeline/configs/taxi.yaml")
    for item in overrides:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ConfigError(f"override {item!r} must look like section.key=value; e.g. --set training.epochs=3")
        try:
            parsed = yaml.safe_load(value)
        except yaml.YAMLError:
            parsed = value
        _set_dotted(raw, key.strip(), parsed)
    return raw


def load_reporting_config(path: Optional[str] = None, overrides: Sequence[str] = (),
                          output_root: Optional[str] = None) -> PipelineConfig:
    """What a refused run needs to report itself when the rest of its config is refused: the
    config's name, output root, serving location and monitoring section, each checked, over the
    packaged default config. Raises ConfigError when one of those is bad too."""
    from pipeline.config import MonitoringConfig

    raw = _raw_config(path, overrides)
    base = load_config()
    values: Dict[str, Any] = {key: _coerce(str, raw[key], key) for key in ("name", "output_root") if key in raw}
    if output_root:
        values["output_root"] = output_root
    if isinstance(raw.get("monitoring"), Mapping):
        values["monitoring"] = _coerce(MonitoringConfig, raw["monitoring"], "monitoring")
    serving = raw.get("serving") if isinstance(raw.get("serving"), Mapping) else {}
    values["serving"] = dataclasses.replace(base.serving, **{
        key: _coerce(str, serving[key], f"serving.{key}") for key in ("serving_root", "model_name") if key in serving})
    cfg = dataclasses.replace(base, **values)
    cfg = dataclasses.replace(cfg, output_root=os.path.abspath(cfg.output_root))
    check_monitoring_labels(cfg.monitoring.labels)
    if cfg.monitoring.pushgateway_url and not cfg.monitoring.pushgateway_url.startswith(("http://", "https://")):
        raise ConfigError(f"bad config value for monitoring.pushgateway_url: {cfg.monitoring.pushgateway_url!r}; "
                          "must start with http:// or https:// (e.g. http://pushgateway:9091)")
    return cfg


def _fit_rounds_to_steps(raw: Dict[str, Any], train_steps: Any, overrides: Sequence[str]) -> None:
    """--train-steps N switches to steps mode, where training.epochs counts the rounds the budget
    is split into (validation after each): a config's passes over the data (10 by default) become
    at most N rounds, unless --set training.epochs asked for a number, which is then checked."""
    if not isinstance(train_steps, int) or isinstance(train_steps, bool) or train_steps < 1:
        return
    if any(item.partition("=")[0].strip() == "training.epochs" for item in overrides):
        return
    training = raw.get("training")
    training = training if isinstance(training, dict) else raw.setdefault("training", {})
    epochs = training.get("epochs", TrainingConfig.epochs)
    if isinstance(epochs, int) and not isinstance(epochs, bool) and epochs > train_steps:
        training["epochs"] = train_steps


def config_from_dict(raw: Mapping[str, Any]) -> PipelineConfig:
    raw = dict(raw)
    _check_keys("config", raw, {f.name for f in dataclasses.fields(PipelineConfig)})
    if "features" not in raw:
        raise ConfigError("config: the 'features' section is required; add one (pipeline/configs/taxi.yaml has an example, `tfxline schema draft` writes one from a CSV)")
    try:
        features = FeatureSpec.from_dict(raw.pop("features"))
    except FeatureSpecError as e:
        raise ConfigError(str(e)) from None
    if isinstance(raw.get("data"), Mapping):
        raw["data"] = _spans_to_str(dict(raw["data"]))
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


SPANS_FIX = "use latest, or {window: N} (window:N on the command line) with N >= 1"


def _spans_to_str(data: Dict[str, Any]) -> Dict[str, Any]:
    """data.spans as YAML writes it ({window: N}) in the config's one string form (window:N)."""
    spans = data.get("spans")
    if isinstance(spans, Mapping):
        if set(spans) != {"window"} or isinstance(spans["window"], bool) or not isinstance(spans["window"], int):
            raise ConfigError(f"bad config value for data.spans: {dict(spans)!r}; {SPANS_FIX}")
        data["spans"] = f"window:{spans['window']}"
    return data


def _spans_ok(spans: str) -> bool:
    if spans == "latest":
        return True
    kind, _, n = spans.partition(":")
    return kind == "window" and n.isdigit() and int(n) >= 1


def validate(cfg: PipelineConfig) -> None:
    checks = [
        (cfg.name.replace("-", "").replace("_", "").isalnum(), "name",
         "use letters, digits, '-' or '_'"),
        (cfg.data.format in FORMATS, "data.format", f"use one of {', '.join(FORMATS)}"),
        (cfg.data.missing_labels in MISSING_LABELS, "data.missing_labels", f"use one of {', '.join(MISSING_LABELS)}"),
        (_spans_ok(cfg.data.spans), "data.spans", SPANS_FIX),
        (cfg.data.window == 1 or has_span_spec(cfg.data.pattern), "data.spans",
         "a window of spans needs TFX's {SPAN} placeholder in data.pattern, e.g. span-{SPAN}/*.csv"),
        (cfg.data.train_buckets >= 1 and cfg.data.eval_buckets >= 1, "data.train_buckets",
         "train_buckets and eval_buckets must both be >= 1"),
        (cfg.data.validation_buckets >= 0, "data.validation_buckets",
         "must be >= 0 (0: no validation split; early stopping then watches eval)"),
        (cfg.training.batch_size >= 1, "training.batch_size", "must be >= 1"),
        (cfg.training.batch_scaling in BATCH_SCALINGS, "training.batch_scaling",
         f"use one of {', '.join(BATCH_SCALINGS)}"),
        (cfg.training.train_steps >= 1, "training.train_steps", "must be >= 1"),
        (cfg.training.mode in TRAINING_MODES, "training.mode",
         f"use one of {', '.join(TRAINING_MODES)}"),
        (cfg.training.epochs >= 1, "training.epochs", "must be >= 1"),
        (cfg.training.reader in READERS, "training.reader", f"use one of {', '.join(READERS)}"),
        (cfg.training.mode == "epochs" or cfg.training.epochs <= cfg.training.train_steps,
         "training.epochs", "in steps mode it counts the rounds training.train_steps (--train-steps) is "
         "split into, so it must be <= training.train_steps: lower one or raise the other"),
        (cfg.training.gradient_accumulation_steps >= 1, "training.gradient_accumulation_steps",
         "must be >= 1 (1 turns accumulation off)"),
        (cfg.training.eval_steps >= 1, "training.eval_steps", "must be >= 1"),
        (all(u >= 1 for u in cfg.model.hidden_units), "model.hidden_units",
         "every layer needs >= 1 unit"),
        (0.0 <= cfg.model.dropout < 1.0, "model.dropout", "must be in [0, 1)"),
        (cfg.model.learning_rate > 0, "model.learning_rate", "must be > 0"),
        (0.0 <= cfg.model.weight_decay < 1.0, "model.weight_decay", "must be in [0, 1) (0 turns it off)"),
        (cfg.runtime.steps_per_execution >= 0, "runtime.steps_per_execution", "must be >= 0 (0: auto)"),
        (cfg.runtime.profile_steps >= 0, "runtime.profile_steps", "must be >= 0 (0: off)"),
        (cfg.runtime.strategy in STRATEGIES, "runtime.strategy",
         f"use one of {', '.join(STRATEGIES)}"),
        (cfg.runtime.precision in PRECISIONS, "runtime.precision",
         f"use one of {', '.join(PRECISIONS)}"),
        (cfg.runtime.jit_compile in JIT_COMPILES, "runtime.jit_compile",
         "use auto (XLA on GPUs only), true or false"),
        (0.0 <= cfg.evaluation.min_auc <= 1.0, "evaluation.min_auc", "must be in [0, 1]"),
        (0.0 <= cfg.evaluation.min_accuracy <= 1.0, "evaluation.min_accuracy",
         "must be in [0, 1]"),
        (cfg.evaluation.max_auc_drop >= 0.0, "evaluation.max_auc_drop", "must be >= 0"),
        (0.0 <= cfg.evaluation.max_accuracy_drop <= 1.0, "evaluation.max_accuracy_drop", "must be in [0, 1]"),
        (cfg.evaluation.min_r2 < 1.0, "evaluation.min_r2",
         "must be < 1 (R² must be above it; 0: better than predicting the mean; negative allows worse)"),
        (-1.0 <= cfg.evaluation.min_accuracy_lift < 1.0, "evaluation.min_accuracy_lift",
         "must be in [-1, 1) (0: strictly better than always predicting the commonest class; negative allows worse)"),
        (cfg.evaluation.max_rmse >= 0.0, "evaluation.max_rmse", "must be >= 0 (0: no ceiling)"),
        (cfg.evaluation.max_mae >= 0.0, "evaluation.max_mae", "must be >= 0 (0: no ceiling)"),
        (cfg.evaluation.max_error_increase >= 0.0, "evaluation.max_error_increase",
         "must be >= 0 (a fraction of the serving model's RMSE: 0.1 allows 10 % more)"),
        (cfg.drift.numeric_threshold > 0, "drift.numeric_threshold", "must be > 0 (drift.enabled=false turns the check off)"),
        (cfg.drift.categorical_threshold > 0, "drift.categorical_threshold",
         "must be > 0 (drift.enabled=false turns the check off)"),
        (all(v >= 0 for v in cfg.drift.features.values()), "drift.features", "thresholds must be >= 0 (0: not checked)"),
        (cfg.serving.keep_versions >= 1, "serving.keep_versions", "must be >= 1"),
        (cfg.serving.release in RELEASES, "serving.release", f"use one of {', '.join(RELEASES)}"),
        (0 < cfg.serving.canary_percent < 100, "serving.canary_percent",
         "must be in 1-99 (the canary's share of the traffic)"),
        (cfg.serving.batch_threads >= 0, "serving.batch_threads", "must be >= 0 (0: this machine's CPU count)"),
        (cfg.serving.tflite in (TFLITE_OFF,) + TFLITE_MODES, "serving.tflite",
         f"use {TFLITE_OFF} or a quantization: {', '.join(TFLITE_MODES)}"),
        (cfg.serving.tflite_tolerance >= 0, "serving.tflite_tolerance", "must be >= 0 (0: the mode's default)"),
        (cfg.monitoring.timeout_seconds > 0, "monitoring.timeout_seconds", "must be > 0 (seconds a push may take)"),
        (cfg.monitoring.max_hours_without_run > 0, "monitoring.max_hours_without_run",
         "must be > 0 (hours; a daily pipeline: 26)"),
        (cfg.monitoring.max_hours_without_push > 0, "monitoring.max_hours_without_push",
         "must be > 0 (hours; a daily pipeline: 26)"),
        (not cfg.monitoring.pushgateway_url or cfg.monitoring.pushgateway_url.startswith(("http://", "https://")),
         "monitoring.pushgateway_url", "must start with http:// or https:// (e.g. http://pushgateway:9091)"),
        (cfg.retention.keep_runs >= 0, "retention.keep_runs", "must be >= 0 (0 keeps every run's artifacts)"),
        (cfg.metadata.backend in ("sqlite", "mysql"), "metadata.backend", "use sqlite or mysql"),
        (1 <= cfg.metadata.port <= 65535, "metadata.port", "must be a TCP port (1-65535)"),
        (bool(cfg.metadata.password_env), "metadata.password_env",
         "name the environment variable that holds the MySQL password"),
        (cfg.vertex_training.replica_count >= 1, "vertex_training.replica_count", "must be >= 1"),
        (not cfg.vertex_training.enabled or cfg.vertex_training.project, "vertex_training.project",
         "set the Google Cloud project when vertex_training.enabled is true"),
        ((cfg.vertex_training.accelerator_count > 0) == bool(cfg.vertex_training.accelerator_type),
         "vertex_training.accelerator_count",
         "set accelerator_type and accelerator_count > 0 together, or neither"),
        # the beam section (pipeline/beam_engines.py): each engine's required values
        (cfg.beam.engine in ENGINES, "beam.engine", f"use one of {', '.join(ENGINES)}"),
        (cfg.beam.direct_running_mode in DIRECT_MODES, "beam.direct_running_mode",
         f"use one of {', '.join(DIRECT_MODES)}"),
        (cfg.beam.direct_num_workers >= 1, "beam.direct_num_workers",
         "must be >= 1 (0 would mean Beam's own choice, the CPU count)"),
        (cfg.beam.engine != "dataflow" or cfg.beam.project, "beam.project",
         "the dataflow engine needs the Google Cloud project"),
        (cfg.beam.engine != "dataflow" or cfg.beam.region, "beam.region",
         "the dataflow engine needs a region, e.g. us-central1"),
        (cfg.beam.engine != "dataflow" or cfg.beam.temp_location.startswith("gs://"), "beam.temp_location",
         "the dataflow engine needs a gs:// temp location, e.g. gs://BUCKET/tmp"),
        (cfg.beam.engine not in PORTABLE_ENGINES or cfg.beam.job_endpoint, "beam.job_endpoint",
         f"the {cfg.beam.engine} engine needs the Beam job service's host:port (portable: or 'embed')"),
        (cfg.beam.engine == "portable" or cfg.beam.job_endpoint != "embed", "beam.job_endpoint",
         f"the {cfg.beam.engine} engine runs on its own job server: give its host:port (e.g. localhost:8099)"),
        (cfg.beam.environment_type in ENVIRONMENT_TYPES, "beam.environment_type",
         f"use one of {', '.join(ENVIRONMENT_TYPES)}"),
        (cfg.beam.engine not in PORTABLE_ENGINES or cfg.beam.environment_type != "EXTERNAL"
         or cfg.beam.environment_config, "beam.environment_config",
         "EXTERNAL workers need the worker pool's host:port"),
    ]
    for ok, key, fix in checks:
        if not ok:
            raise ConfigError(f"bad config value for {key}: {_value_at(cfg, key)!r}; {fix}")
    try:
        data_path = resolve_data_path(cfg.data.path) if cfg.data.path else ""
    except DataError as e:
        raise MissingDataError(str(e)) from None
    if data_path and not os.path.exists(data_path):
        raise MissingDataError(
            f"data path {cfg.data.path} does not exist; pass an existing {cfg.data.format.upper()} "
            "file or directory with --data (or data.path in the config)")
    unknown = sorted(set(cfg.drift.features) - set(cfg.features.raw_columns))
    if unknown:
        raise ConfigError(
            f"bad config value for drift.features: {', '.join(unknown)} not among the declared feature "
            "columns; set thresholds for columns listed under features")
    check_monitoring_labels(cfg.monitoring.labels)
    unknown = [s for s in cfg.evaluation.slices if s not in cfg.features.raw_columns]
    if unknown:
        raise ConfigError(
            f"bad config value for evaluation.slices: {', '.join(unknown)} not among the "
            "declared feature columns; slice on a column listed under features")


LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")


def check_monitoring_labels(labels: Mapping[str, str]) -> None:
    """monitoring.labels: Prometheus label names (not __-reserved, not one the metrics or rules
    use already) with non-empty values: they become the push's grouping key."""
    from components.run_metrics import RESERVED_LABELS

    for name, value in labels.items():
        if not LABEL_NAME.fullmatch(name) or name.startswith("__"):
            raise ConfigError(f"bad config value for monitoring.labels: {name!r} is not a Prometheus label name; "
                              "use letters, digits and _ (not starting with a digit or __), e.g. env")
        if name in RESERVED_LABELS:
            raise ConfigError(f"bad config value for monitoring.labels: {name!r} is a label tfxline's metrics use "
                              f"already ({', '.join(sorted(RESERVED_LABELS))}); pick another name, e.g. env")
        if not value:
            raise ConfigError(f"bad config value for monitoring.labels.{name}: empty; give it a value "
                              "(an empty label is no label to Prometheus), e.g. prod")


def _value_at(cfg: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        cfg = getattr(cfg, part)
    return cfg


def _yaml_problem(e: Exception) -> str:
    """PyYAML's problem and where: 'mapping values are not allowed here (line 4, column 9)'."""
    mark = getattr(e, "problem_mark", None)
    problem = getattr(e, "problem", None) or _first_line(e)
    return f"{problem} (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else problem


def _first_line(e: Exception) -> str:
    return str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__


def _set_dotted(raw: Dict[str, Any], key: str, value: Any) -> None:
    parts = key.split(".")
    node = raw
    for part in parts[:-1]:
        child = node.setdefault(part, {})
        if not isinstance(child, dict):
            raise ConfigError(f"override {key}: {part} is not a section; set a key inside a section, e.g. training.epochs=3")
        node = child
    node[parts[-1]] = value


def _check_keys(where: str, raw: Mapping[str, Any], allowed: set) -> None:
    unknown = sorted(set(raw) - allowed)
    if unknown:
        raise ConfigError(
            f"unknown config key {where}.{unknown[0]}" if where != "config"
            else f"unknown config key {unknown[0]}")


def _coerce(tp: Any, value: Any, where: str) -> Any:
    origin = typing.get_origin(tp)
    if dataclasses.is_dataclass(tp):
        if not isinstance(value, Mapping):
            raise ConfigError(f"bad config value for {where}: expected a section (mapping); write its keys indented under it")
        allowed = {f.name for f in dataclasses.fields(tp)}
        unknown = sorted(set(value) - allowed)
        if unknown:
            raise ConfigError(
                f"unknown config key {where}.{unknown[0]}; allowed keys in {where}: "
                f"{', '.join(sorted(allowed))}")
        hints = typing.get_type_hints(tp)
        return tp(**{k: _coerce(hints[k], v, f"{where}.{k}") for k, v in value.items()})
    if origin is dict:
        if not isinstance(value, Mapping):
            raise ConfigError(f"bad config value for {where}: expected a mapping, got {value!r}; write NAME: VALUE pairs indented under it")
        item = typing.get_args(tp)[1]
        return {str(k): _coerce(item, v, f"{where}.{k}") for k, v in value.items()}
    if origin is tuple:
        if isinstance(value, str):
            value = [v for v in value.split(",") if v]
        if not isinstance(value, (list, tuple)):
            raise ConfigError(f"bad config value for {where}: expected a list, got {value!r}; write [a, b] or a comma-separated string")
        item = typing.get_args(tp)[0]
        return tuple(_coerce(item, v, where) for v in value)
    if tp is bool:
        if isinstance(value, bool):
            return value
        raise ConfigError(f"bad config value for {where}: expected true or false, got {value!r}; write true or false")
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"bad config value for {where}: expected an integer, got {value!r}; write a whole number")
        return value
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"bad config value for {where}: expected a number, got {value!r}; write a number")
        return float(value)
    if tp is str:
        if value is None:
            return ""
        if isinstance(value, bool):  # YAML's true / false, for a setting whose values are words
            return str(value).lower()
        if not isinstance(value, (str, int, float)):
            raise ConfigError(f"bad config value for {where}: expected a string, got {value!r}; write one value (quote it)")
        return str(value)
    raise TypeError(f"unsupported config type {tp} at {where}")  # a programming error
