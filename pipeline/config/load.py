"""Load a pipeline config: YAML file -> overrides -> typed sections -> validated.

``load_config`` reads a file (or a packaged config by name), applies ``section.key=value``
overrides and typed CLI values, reads the result into ``pipeline.config.PipelineConfig`` with
the config's one reader (typed_config/read.py: unknown keys, types, nested sections, the feature
spec too), then checks each section's rules and those that span sections (``PipelineConfig.problems``)
and that the data exists, raising ``ConfigError`` with a one-line message naming the key and fix.
"""
from __future__ import annotations

import dataclasses
import os
from importlib import resources
from typing import Any, Dict, Mapping, Optional, Sequence

import yaml

from tfxline.pipeline.config import DEFAULT_CONFIG, ConfigError, PipelineConfig
from tfxline.pipeline.data.source import PACKAGE_PREFIX, DataError, input_kind, resolve_data_path
from tfxline.typed_config.problems import check
from tfxline.typed_config.read import from_yaml


class MissingDataError(ConfigError):
    """The config's data path names no data: the input is missing (a run's reason bad_input: the
    day's file has not landed), though the config is where the path is set."""


def packaged_config_path(name: str) -> str:
    return str(resources.files("tfxline.pipeline") / "configs" / f"{name}.yaml")


def load_config(path: Optional[str] = None, overrides: Sequence[str] = (),
                **explicit: Any) -> PipelineConfig:
    """Read a YAML config (a file, or a packaged config by name; default: taxi), apply
    overrides, validate.

    ``overrides`` are ``section.key=value`` strings (values parsed as YAML);
    ``explicit`` are already-typed values keyed ``section.key`` (from CLI flags).
    """
    return config_from_dict(raw_config(path, overrides, explicit))


def raw_config(path: Optional[str], overrides: Sequence[str] = (),
               explicit: Optional[Mapping[str, Any]] = None) -> Dict[str, Any]:
    """The YAML file (or packaged config) as a dict, the ``section.key=value`` overrides and the
    ``explicit`` values (None: not given) applied: what ``config_from_dict`` types and checks."""
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
    for key, value in (explicit or {}).items():
        if value is not None:
            _set_dotted(raw, key, value)
    return raw


def config_from_dict(raw: Mapping[str, Any], data: bool = True) -> PipelineConfig:
    """The validated config. ``data``: the data path must exist (False for commands that read
    only what runs left: the run history, the serving directory, a model)."""
    cfg = from_yaml(PipelineConfig, dict(raw), "")
    cfg = dataclasses.replace(cfg, output_root=os.path.abspath(cfg.output_root))
    if cfg.data.path and not cfg.data.path.startswith(PACKAGE_PREFIX):
        # relative paths are relative to the working directory, as on a CLI
        cfg = dataclasses.replace(
            cfg, data=dataclasses.replace(cfg.data, path=os.path.abspath(cfg.data.path)))
    path = cfg.model.text_saved_model
    if path and "://" not in path:  # a pretrained text encoder's folder: relative to the working directory too
        cfg = dataclasses.replace(cfg, model=dataclasses.replace(cfg.model, text_saved_model=os.path.abspath(path)))
    validate(cfg, data=data)
    return cfg


def validate(cfg: PipelineConfig, data: bool = True) -> None:
    """Each section's rules and those that span sections (``cfg.problems()``), then the file
    system's: the data path exists (``data``)."""
    check(cfg.problems())
    try:
        data_path = resolve_data_path(cfg.data.path) if cfg.data.path and data else ""
    except DataError as e:
        raise MissingDataError(str(e)) from None
    if data_path and not os.path.exists(data_path):
        raise MissingDataError(
            f"data path {cfg.data.path} does not exist; pass an existing {input_kind(cfg.data.format)} "
            "with --data (or data.path in the config)")


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
            raise ConfigError(f"override {key}: {part} is not a section; "
                              "set a key inside a section, e.g. training.epochs=3")
        node = child
    node[parts[-1]] = value

