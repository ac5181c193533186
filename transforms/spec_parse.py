"""Reading a config's ``features`` section into the spec's dataclasses (transforms/features.py):
a value that is not a mapping, an unknown key or a missing name is refused in one line."""
from __future__ import annotations

import dataclasses
from typing import Any, Dict, Mapping


class FeatureSpecError(ValueError):
    """The feature spec in a config is invalid."""


def drop_none(d: Dict[str, Any]) -> Dict[str, Any]:
    return {k: v for k, v in d.items() if v is not None}


def check_keys(where: str, raw: Mapping[str, Any], allowed: set) -> None:
    unknown = sorted(set(raw) - allowed)
    if unknown:
        raise FeatureSpecError(
            f"{where}: unknown key(s) {', '.join(unknown)}; allowed: {', '.join(sorted(allowed))}")


def build(kind, where: str, raw: Any):
    """A ``kind`` (InputFeature, Cross, Label: a dataclass) from its mapping."""
    fields = {f.name for f in dataclasses.fields(kind)}
    if not isinstance(raw, Mapping):
        raise FeatureSpecError(f"{where}: expected a mapping, got {raw!r}; "
                               "write name: and transform: keys indented under it")
    check_keys(where, raw, fields)
    if "name" not in raw:
        raise FeatureSpecError(f"{where}: 'name' is required; "
                               "add name: (the column it reads, unless column: says otherwise)")
    values = dict(raw)
    if "inputs" in fields:  # a cross's inputs: a YAML list, kept as a tuple (the spec is frozen)
        values["inputs"] = tuple(values.get("inputs") or ())
    try:
        return kind(**values)
    except TypeError as e:
        raise FeatureSpecError(f"{where}: {e}; the keys of each kind are in docs/your-data.md") from None
