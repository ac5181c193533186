"""A release's record, ``<serving_dir>/release/release.json``: the labels in force (``stable``,
``canary`` and its traffic percent), the move waiting for its versions to load (``pending``), the
settings the release's files were rendered with, and the history of every label move; read here,
moved and written by serving/release.py (docs/serving.md, "Release labels")."""
from __future__ import annotations

import dataclasses
import json
import os
from typing import Any, Dict, List, Optional, Tuple

from tfxline.serving import push as serving_push
from tfxline.serving import storage

LINK = "release"
STATE_FILE = "release.json"
STABLE, CANARY = "stable", "canary"
RELEASES = (STABLE, CANARY)  # serving.release: what a push does to the labels


class ReleaseError(ValueError):
    """A label move that cannot be done as asked, or a release that cannot be read; the release
    is unchanged."""


@dataclasses.dataclass(frozen=True)
class Settings:
    """How the files are rendered (the ``serving`` config section; recorded in release.json)."""
    model_name: str
    base_path: str = ""            # the serving directory as TF Serving sees it; empty: its absolute path
    kserve_storage_uri: str = ""   # the serving directory as KServe sees it; empty: pvc://tfxline-serving/<name>
    batch_threads: int = 0         # TF Serving's num_batch_threads; 0: this machine's CPU count

    @classmethod
    def from_properties(cls, properties: Dict[str, Any]) -> "Settings":
        """From the Pusher's release parameters (pipeline/pusher_settings.py makes them)."""
        return cls(model_name=properties.get("model_name") or "model",
                   base_path=properties.get("tf_serving_base_path") or "",
                   kserve_storage_uri=properties.get("kserve_storage_uri") or "",
                   batch_threads=int(properties.get("batch_threads") or 0))


@dataclasses.dataclass(frozen=True)
class Release:
    stable: Optional[int] = None      # the labels in force (in models.config)
    canary: Optional[int] = None
    canary_percent: int = 0
    history: Tuple[Dict[str, Any], ...] = ()
    pending: Optional[Dict[str, Any]] = None  # the move waiting for its versions to load: its history record

    @property
    def in_force(self) -> List[int]:
        return sorted({v for v in (self.stable, self.canary) if v is not None})

    @property
    def target(self) -> Tuple[Optional[int], Optional[int], int]:
        """(stable, canary, canary percent) once the pending move is settled."""
        if self.pending is None:
            return self.stable, self.canary, self.canary_percent
        return self.pending.get(STABLE), self.pending.get(CANARY), int(self.pending.get("canary_percent") or 0)

    @property
    def labelled(self) -> List[int]:
        """The versions models.config loads: the labelled ones and the pending move's (never pruned)."""
        stable, canary, _ = self.target
        return sorted(set(self.in_force) | {v for v in (stable, canary) if v is not None})


def release_dir(serving_dir: str) -> str:
    return storage.join(serving_dir, LINK)


def state_text(release: Release, settings: Settings, batching: Dict[str, Any]) -> str:
    """release.json's text (``read`` reads it back)."""
    state = {STABLE: release.stable, CANARY: release.canary, "canary_percent": release.canary_percent,
             "pending": release.pending, "model_name": settings.model_name, "settings": dataclasses.asdict(settings),
             "batching": batching, "history": list(release.history)}
    return json.dumps(state, indent=2, sort_keys=True) + "\n"


def read(serving_dir: str) -> Release:
    """The current release; an empty one when the directory has none yet. A release.json that
    cannot be read, or that names a version not in the directory, is a ``ReleaseError`` naming
    the file and the fix."""
    where = release_dir(serving_dir)
    path = storage.join(where, STATE_FILE)
    if not storage.isfile(path):
        if storage.links(where) and os.path.islink(storage.local(where)):
            _damaged(serving_dir, where,
                     f"it links to {os.readlink(storage.local(where))}, which holds no {STATE_FILE}")
        if storage.exists(where):
            _damaged(serving_dir, where, f"it holds no {STATE_FILE}")
        return Release()
    try:
        state = json.loads(storage.read_text(path))
    except ValueError as e:
        reason = f"{e.msg} at line {e.lineno} column {e.colno}" if isinstance(e, json.JSONDecodeError) else str(e)
        _damaged(serving_dir, path, f"it is not valid JSON ({reason})")
    try:
        release = _from_state(state)
    except ValueError as e:
        _damaged(serving_dir, path, str(e))
    found = serving_push.versions(serving_dir)
    for what, version in _named_versions(release):
        if version not in found:
            _damaged(serving_dir, path, f"its {what} is version {version}, which is not in {serving_dir} (it holds "
                                        f"{', '.join(map(str, found)) or 'no version'})")
    return release


def _damaged(serving_dir: str, path: str, problem: str) -> None:
    raise ReleaseError(f"the release {path} cannot be used: {problem}; nothing was changed; fix: restore it, or delete "
                       f"{release_dir(serving_dir)} to start a new release (the versions stay; the next push, or "
                       "'tfxline serving rollback --to VERSION', labels one stable)")


def _from_state(state: Any) -> Release:
    if not isinstance(state, dict):
        raise ValueError(f"it holds {type(state).__name__}, not an object")
    stable, canary, percent = _labels(state, "")
    history = state.get("history", [])
    if not isinstance(history, list) or not all(isinstance(r, dict) for r in history):
        raise ValueError("its history is not a list of moves")
    pending = state.get("pending")
    if pending is not None:
        if not isinstance(pending, dict):
            raise ValueError("its pending move is not an object")
        _labels(pending, "pending ")
    return Release(stable=stable, canary=canary, canary_percent=percent, history=tuple(history), pending=pending)


def _labels(state: Dict[str, Any], what: str) -> Tuple[Optional[int], Optional[int], int]:
    def version(key: str) -> Optional[int]:
        value = state.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
            raise ValueError(f"its {what}{key} is {json.dumps(value)}, not a version number")
        return value
    stable, canary, percent = version(STABLE), version(CANARY), state.get("canary_percent") or 0
    if isinstance(percent, bool) or not isinstance(percent, int) or not 0 <= percent < 100:
        raise ValueError(f"its {what}canary_percent is {json.dumps(percent)}, not a share of 0-99")
    if canary is not None and (stable is None or canary == stable or not percent):
        raise ValueError(f"its {what}canary {canary} has no stable version beside it, or no traffic share")
    return stable, canary, percent


def _named_versions(release: Release) -> List[Tuple[str, int]]:
    stable, canary, _ = release.target
    named = [(STABLE, release.stable), (CANARY, release.canary), (f"pending {STABLE}", stable),
             (f"pending {CANARY}", canary)]
    return [(what, v) for what, v in named if v is not None]


def serving_version(serving_dir: str, release: Optional[Release] = None) -> Optional[int]:
    """The version the release serves by default: the stable one of its target, a pending move's
    included (the pipeline blessed and pushed it: the next run's baseline and drift reference,
    and what ``predict`` runs; TF Serving's label follows once ``settle`` moves it); without a
    release the highest version (TF Serving's rule for a bare ``--model_base_path``).
    ``release``: the one already read, if any."""
    release = release or read(serving_dir)
    stable = release.target[0]
    if stable is not None:
        return stable
    found = serving_push.versions(serving_dir)
    return found[-1] if found else None


def serving_version_dir(serving_dir: str) -> str:
    """The directory of ``serving_version``; FileNotFoundError when nothing was pushed."""
    version = serving_version(serving_dir)
    if version is None:
        raise FileNotFoundError(
            f"no pushed model in {serving_dir}: no run of this config has pushed one yet; run 'tfxline run --config "
            "YOUR_CONFIG' (the same config); a run that is not blessed names the gate and its key on its blessing: "
            "line ('tfxline runs show' prints it again)")
    return storage.join(serving_dir, str(version))


def previous_stable(release: Release, exclude: Optional[int] = None) -> Optional[int]:
    """The stable version before the current one, from the history (for a rollback)."""
    for record in reversed(release.history):
        v = record.get(STABLE)
        if v is not None and v != release.stable and v != exclude:
            return v
    return None
