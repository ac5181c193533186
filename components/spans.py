"""The span and version of an Examples artifact, wherever the TFX version keeps them: ExampleGen
writes them as custom properties (TFX 1.16), newer artifact types also declare them as
properties. Reading ``artifact.span`` alone gives 0 where only the custom property is set."""
from __future__ import annotations

from typing import Optional


def _custom(artifact, name: str) -> Optional[int]:
    if not artifact.has_custom_property(name):
        return None
    text = artifact.get_string_custom_property(name)  # older TFX stored span as a string
    return int(text) if text else artifact.get_int_custom_property(name)


def span_of(artifact) -> int:
    found = _custom(artifact, "span")
    return found if found is not None else int(artifact.span or 0)


def version_of(artifact) -> Optional[int]:
    found = _custom(artifact, "version")
    if found is not None:
        return found
    return artifact.version if artifact.has_property("version") else None
