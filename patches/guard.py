"""The one guard every run-time patch goes through (patches/registry.py lists them).

:func:`applies` says whether a patch may change its library now: not where
``TFXLINE_RUNTIME_PATCHES=off`` turns them all off, and not where the library's installed
version is not one the patch was tested on; then it logs one line (once per process and
version) saying which patch stood down, the version found, the versions tested and how to add
one, and the library is left as it is. The version is the installed distribution's
(``importlib.metadata``), read without importing the library.
"""
from __future__ import annotations

import importlib.metadata
import logging
import os
from typing import Set, Tuple

from tfxline.patches.registry import BY_NAME, PATCHES

ENV_VAR = "TFXLINE_RUNTIME_PATCHES"
OFF_VALUES = ("off", "0", "false", "no")
log = logging.getLogger("tfxline.patches")
_told: Set[Tuple[str, str]] = set()


def enabled() -> bool:
    """False where ``TFXLINE_RUNTIME_PATCHES`` is ``off`` (or 0, false, no)."""
    return os.environ.get(ENV_VAR, "on").strip().lower() not in OFF_VALUES


def installed_version(distribution: str) -> str:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def tested_here(name: str) -> bool:
    """Whether the patch's library is installed at a version it was tested on (no log line)."""
    patch = BY_NAME[name]
    return installed_version(patch.distribution) in patch.tested


def applies(name: str) -> bool:
    """Whether the patch ``name`` may be applied now; one log line where its version stands it down."""
    if not enabled():
        return False
    patch = BY_NAME[name]
    version = installed_version(patch.distribution)
    if version in patch.tested:
        return True
    if (name, version) not in _told:
        _told.add((name, version))
        log.warning("runtime patch %s stood down: %s is %s, tested on %s only; %s is left as it is (to add this "
                    "version, run %s on it and add it to patches/registry.py)", name, patch.distribution, version,
                    ", ".join(patch.tested), patch.target, patch.tests)
    return False


def status() -> str:
    """The run log's line: ``runtime patches: on`` or ``off``, with any patch that stands down here."""
    if not enabled():
        return f"runtime patches: off ({ENV_VAR}={os.environ.get(ENV_VAR)})"
    down = [p.name for p in PATCHES if not tested_here(p.name)]
    return "runtime patches: on" + (f" except {', '.join(down)} (untested library versions)" if down else "")
