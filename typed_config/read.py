"""The one way a config is read: ``from_yaml`` turns a value as YAML, a ``--set`` override or a
component's JSON ``custom_config`` gives it into its declared type. A section is a frozen
dataclass: unknown keys are refused (with the close name), a field without a default is required,
and each value is typed in turn (nested sections, lists as tuples, mappings, Optional, Any). What a
value must satisfy beyond its type is the section's own ``problems()`` (typed_config/problems.py).

The pipeline config (pipeline/config), its feature spec (transforms/features.py) and the sections
the Trainer reads back from its ``custom_config`` (trainer/settings.py) are all read here.
"""
from __future__ import annotations

import dataclasses
import typing
from typing import Any, Mapping

from tfxline.typed_config.close_names import closest
from tfxline.typed_config.problems import ConfigError

# A field's metadata keys. FROM_YAML: a function (YAML value, key) -> value run instead of the
# type's reading, for a field that YAML may write in another form (data.spans: {window: N} for
# "window:N") or that reads itself (the feature spec). REQUIRED: the fix named when a field
# without a default is missing (default: add KEY: under its section).
FROM_YAML = "from_yaml"
REQUIRED = "required"


def key_of(where: str, key: str) -> str:
    """``key`` within ``where`` ('' for the top of the config)."""
    return f"{where}.{key}" if where else str(key)


def section_from_yaml(cls: Any, value: Any, where: str) -> Any:
    """A section's dataclass from its mapping: unknown keys refused, required keys present, each
    value typed. ``where`` names the section in a refusal ('' for the config's top level)."""
    if isinstance(value, cls):
        return value  # already typed (a value given as the section itself)
    if not isinstance(value, Mapping):
        raise ConfigError(f"bad config value for {where}: expected a section (mapping); "
                          "write its keys indented under it")
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(value) - set(fields), key=str)
    if unknown:
        close = closest(str(unknown[0]), sorted(fields))
        hint = f"did you mean {close!r}? " if close else ""
        inside = f" in {where}" if where else ""
        raise ConfigError(f"unknown config key {key_of(where, unknown[0])}; {hint}allowed keys{inside}: "
                          f"{', '.join(sorted(fields))}")
    for name, f in fields.items():
        if name not in value and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            fix = f.metadata.get(REQUIRED) or f"add {name}: under {where or 'the config'}"
            raise ConfigError(f"config key {key_of(where, name)} is required; {fix}")
    hints = typing.get_type_hints(cls)
    values = {}
    for key, item in value.items():
        read = fields[key].metadata.get(FROM_YAML)
        values[key] = read(item, key_of(where, key)) if read else from_yaml(hints[key], item, key_of(where, key))
    return cls(**values)


def from_yaml(tp: Any, value: Any, where: str) -> Any:
    """``value`` as type ``tp``; ``where`` names its key in a refusal."""
    origin = typing.get_origin(tp)
    if dataclasses.is_dataclass(tp):
        return section_from_yaml(tp, value, where)
    if tp is Any:
        return value
    if origin is typing.Union:  # Optional[X]: None, or an X
        (inner,) = [a for a in typing.get_args(tp) if a is not type(None)]
        return None if value is None else from_yaml(inner, value, where)
    if origin is dict:
        if not isinstance(value, Mapping):
            raise ConfigError(f"bad config value for {where}: expected a mapping, got {value!r}; "
                              "write NAME: VALUE pairs indented under it")
        item = typing.get_args(tp)[1]
        return {str(k): from_yaml(item, v, f"{where}.{k}") for k, v in value.items()}
    if origin is tuple:
        return _tuple_from_yaml(typing.get_args(tp)[0], value, where)
    return _scalar_from_yaml(tp, value, where)


def _tuple_from_yaml(item: Any, value: Any, where: str) -> tuple:
    """A list (or a comma-separated string; nothing: empty); sections in it are named KEY[i]."""
    if value is None:
        return ()
    if isinstance(value, str):
        value = [v for v in value.split(",") if v]
    if not isinstance(value, (list, tuple)):
        raise ConfigError(f"bad config value for {where}: expected a list, got {value!r}; "
                          "write [a, b] or a comma-separated string")
    if dataclasses.is_dataclass(item):
        return tuple(from_yaml(item, v, f"{where}[{i}]") for i, v in enumerate(value))
    return tuple(from_yaml(item, v, where) for v in value)


def _scalar_from_yaml(tp: Any, value: Any, where: str) -> Any:
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
            raise ConfigError(f"bad config value for {where}: expected a string, got {value!r}; "
                              "write one value (quote it)")
        return str(value)
    raise TypeError(f"unsupported config type {tp} at {where}")  # a programming error
