"""How a config value is refused: each section's ``problems()`` (its rules, beside its fields)
yields a ``Problem`` per broken rule, and ``check`` raises the first as a ``ConfigError``, the
one-line refusal 'bad config value for KEY: WHAT; FIX'."""
from __future__ import annotations

from typing import Any, Iterable, NamedTuple


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


def section_problems(section: Any) -> Iterable[Problem]:
    """A section's own rules (its ``problems()``; none when it has no rules)."""
    rules = getattr(section, "problems", None)
    return rules() if rules else ()
