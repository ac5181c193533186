"""The names a Transform's graph saves its learnt values under (one definition, read by the
Transform's analyzers, their frozen copy and the run report)."""
from __future__ import annotations

from tfxline.transforms import features as F

NAME_PREFIX = "tfxline_analyzer"


class AnalyzerValuesError(ValueError):
    """A Transform output lacks the analyzer values a frozen preprocessing needs."""


def analyzer_name(feature: F.InputFeature, kind: str) -> str:
    """The op name a value is saved under; feature names may hold any character, so the
    name carries a hex form of it."""
    return f"{NAME_PREFIX}_{feature.name.encode().hex()}_{kind}"
