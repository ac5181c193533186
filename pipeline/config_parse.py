"""How a config section is read and checked: ``from_yaml`` turns a YAML value into its declared type
(a section's dataclass: unknown keys, types, nested mappings and lists), and each section's
``problems()`` reports a broken rule as a ``Problem``; ``ConfigError`` is the one-line refusal.
"""
from __future__ import annotations

import dataclasses
import typing
from typing import Any, Iterable, Mapping, NamedTuple

# A field's metadata key: a function (YAML value, key) -> value run before the type check, for a
# field that YAML may write in another form (data.spans: {window: N} for "window:N").
FROM_YAML = "from_yaml"


class ConfigError(ValueError):
    """A config file, key or value is invalid."""


class Problem(NamedTuple):
    """A broken rule: printed 'bad config value for KEY: SHOWN; FIX' (KEY within the section; the
    pipeline config prefixes the section's name)."""
    key: str
    shown: str  # what is wrong: the value as written (repr), or words
    fix: str

    def within(self, section: str) -> "Problem":
        return self._replace(key=f"{section}.{self.key}") if section else self


def bad(section: Any, key: str, fix: str) -> Problem:
    """The usual problem: the value of ``section.key`` as written, and the fix."""
    return Problem(key, repr(getattr(section, key)), fix)


def check(problems: Iterable[Problem], section: str = "") -> None:
    """Raise the first problem, if any, as a ConfigError."""
    for problem in problems:
        key, shown, fix = problem.within(section)
        raise ConfigError(f"bad config value for {key}: {shown}; {fix}")


def section_from_yaml(cls: Any, value: Any, where: str) -> Any:
    """A section's dataclass from its YAML mapping: unknown keys refused, each value typed."""
    if not isinstance(value, Mapping):
        raise ConfigError(f"bad config value for {where}: expected a section (mapping); "
                          "write its keys indented under it")
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(value) - set(fields))
    if unknown:
        raise ConfigError(
            f"unknown config key {where}.{unknown[0]}; allowed keys in {where}: "
            f"{', '.join(sorted(fields))}")
    hints = typing.get_type_hints(cls)
    values = {}
    for key, item in value.items():
        read = fields[key].metadata.get(FROM_YAML)
        item = read(item, f"{where}.{key}") if read else item
        values[key] = from_yaml(hints[key], item, f"{where}.{key}")
    return cls(**values)


def from_yaml(tp: Any, value: Any, where: str) -> Any:
    """``value`` (as YAML or a --set gave it) as type ``tp``; ``where`` names its key in a refusal."""
    origin = typing.get_origin(tp)
    if dataclasses.is_dataclass(tp):
        return section_from_yaml(tp, value, where)
    if origin is dict:
        if not isinstance(value, Mapping):
            raise ConfigError(f"bad config value for {where}: expected a mapping, got {value!r}; "
                              "write NAME: VALUE pairs indented under it")
        item = typing.get_args(tp)[1]
        return {str(k): from_yaml(item, v, f"{where}.{k}") for k, v in value.items()}
    if origin is tuple:
        if isinstance(value, str):
            value = [v for v in value.split(",") if v]
        if not isinstance(value, (list, tuple)):
            raise ConfigError(f"bad config value for {where}: expected a list, got {value!r}; "
                              "write [a, b] or a comma-separated string")
        item = typing.get_args(tp)[0]
        return tuple(from_yaml(item, v, where) for v in value)
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
