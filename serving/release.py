"""Which pushed versions serve: the label moves (``tfxline serving canary / promote / rollback /
settle`` and the Pusher share them; no TFX or TensorFlow here), and the release's files written
together: release.json (serving/release_state.py, which also reads it), TF Serving's files
(serving/tf_serving_files.py) and KServe's (serving/kserve_files.py); docs/serving.md, "Release
labels", says what each holds. The serving directory may be a local path or an object-store URI.

**Two phases.** TF Serving labels only a version it has loaded, and checks a config's labels
before it loads its new versions (server_core.cc:574-584 at 9d981c5c; tests/tf_serving_rules.py).
So a move onto a version not loaded yet is written twice: models.config loads it with the labels
where they were (the move is ``pending``), then ``settle`` moves the labels once TF Serving
reports it AVAILABLE. A move between loaded versions (a promote) is one write; the KServe
manifest names the move's target at once.

**Writing.** On a local disk ``release`` is a link to a hidden directory, replaced in one rename,
so a crash leaves the old release whole; on an object store each file is one object, written in
``WRITE_ORDER`` (release.json last), so a crash leaves the previous release.json.
"""
from __future__ import annotations

import dataclasses
import os
import time
import uuid
from typing import Any, Callable, Dict, List, Optional

from tfxline.serving import kserve_files, storage, tf_serving_files
from tfxline.serving import push as serving_push
from tfxline.serving.kserve_files import KSERVE_DIR, KSERVE_FILE, kserve_dir  # noqa: F401 - kserve_dir: callers' name

# the release's record: used here, and found by callers as serving.release.<name>
from tfxline.serving.release_state import (  # noqa: F401
    CANARY,
    LINK,
    RELEASES,
    STABLE,
    STATE_FILE,
    Release,
    ReleaseError,
    Settings,
    previous_stable,
    read,
    release_dir,
    serving_version,
    serving_version_dir,
    state_text,
)
from tfxline.serving.tf_serving_files import BATCHING_FILE, MODELS_CONFIG, MONITORING_FILE

HIDDEN_PREFIX = ".release-"
WRITE_ORDER = (BATCHING_FILE, MONITORING_FILE, KSERVE_FILE, MODELS_CONFIG, STATE_FILE)
SETTLE = "tfxline serving settle --server http://<tf-serving-host>:8501"  # what finishes a pending move
NO_SERVER = "tfxline serving settle --without-server"  # its form where no TF Serving reads the release


def _record(event: str, stable: Optional[int], canary: Optional[int], canary_percent: int, by: str = "",
            reason: str = "", now: Optional[float] = None) -> Dict[str, Any]:
    record = {"event": event, "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now)),
              STABLE: stable, CANARY: canary, "canary_percent": canary_percent}
    if by:
        record["by"] = by
    if reason:
        record["reason"] = reason
    return record


# --- the label moves -----------------------------------------------------------------------------

def _known(serving_dir: str, version: int, found: Optional[List[int]] = None) -> None:
    """ReleaseError unless ``version`` is in the serving directory (``found``: its versions, when
    already listed)."""
    found = serving_push.versions(serving_dir) if found is None else found
    if version not in found:
        raise ReleaseError(f"version {version} is not in {serving_dir} (it holds "
                           f"{', '.join(map(str, found)) or 'no version'}); 'tfxline serving' lists them")


def _move(serving_dir: str, current: Release, record: Dict[str, Any], settings: Settings) -> Release:
    """Move the labels as ``record`` says: at once when TF Serving has every version of it
    loaded (the labelled ones), else pending (models.config loads the new versions first). A
    pending move is replaced."""
    wanted = {v for v in (record[STABLE], record[CANARY]) if v is not None}
    if wanted <= set(current.in_force):
        return write(serving_dir, Release(stable=record[STABLE], canary=record[CANARY],
                                          canary_percent=record["canary_percent"],
                                          history=current.history + (record,)), settings)
    return write(serving_dir, dataclasses.replace(current, pending=record), settings)


def canary(serving_dir: str, version: int, percent: int, settings: Settings, by: str = "",
           now: Optional[float] = None) -> Release:
    """Label ``version`` canary with ``percent`` of the traffic; stable keeps the rest."""
    if not 0 < percent < 100:
        raise ReleaseError(f"--percent {percent} is outside 1-99; give the canary's share of the traffic "
                           "(promote moves it to 100)")
    _known(serving_dir, version)
    current = read(serving_dir)
    stable = serving_version(serving_dir, current)
    if stable is None or stable == version:
        raise ReleaseError(f"version {version} has no stable version beside it to share traffic with; "
                           "a canary needs a stable version that is not itself (promote or push one first)")
    return _move(serving_dir, current, _record("canary", stable, version, percent, by=by, now=now), settings)


def promote(serving_dir: str, settings: Settings, by: str = "", now: Optional[float] = None) -> Release:
    """The canary becomes stable, with all the traffic."""
    current = read(serving_dir)
    if current.canary is None:
        pending = current.target[1] if current.pending else None
        how = (f"version {pending}'s canary move is pending: finish it first with '{SETTLE}'" if pending is not None
               else "start one with 'tfxline serving canary VERSION --percent P'")
        raise ReleaseError(f"no canary in {serving_dir} to promote; {how}")
    return _move(serving_dir, current, _record("promote", current.canary, None, 0, by=by, now=now), settings)


def on_push(serving_dir: str, version: int, release_mode: str, percent: int, settings: Settings,
            now: Optional[float] = None) -> Release:
    """What a pipeline push does to the labels: ``stable`` makes the new version stable (the
    canary, if any, ends); ``canary`` starts it as the canary at ``percent`` when a stable one
    exists (a first push is stable). The new version is not loaded yet: the move is pending
    (``push_summary`` says how it finishes)."""
    current = read(serving_dir)
    stable = serving_version(serving_dir, current) if (current.stable is not None or current.pending) else None
    if stable is None:  # no release yet: what served before this push was the highest older version
        stable = max((v for v in serving_push.versions(serving_dir) if v < version), default=None)
    if release_mode == CANARY and stable is not None and stable != version:
        record = _record("push as canary", stable, version, percent, now=now)
    else:
        record = _record("push", version, None, 0, now=now)
    return _move(serving_dir, current, record, settings)


def push_summary(release: Release, version: int) -> str:
    """What a push did to the release, in a few words (the Pusher's PushedModel; the run's
    summary puts it beside the pushed path). A stable push is what ``serving_version`` reads at
    once, pending or not: ``predict``, the next run's baseline and drift check. TF Serving's
    labels follow on ``settle``, which only a TF Serving reader needs: the run names it where the
    config says one reads the release (serving.tf_serving_url), ``tfxline serving`` always. A
    canary's share starts once its label moves."""
    stable, canary_version, percent = release.target
    if canary_version != version:
        return "stable: predict and the next run's baseline use it"
    return (f"canary at {percent} % beside stable version {stable}"
            + (" once its label moves ('tfxline serving' says how)" if release.pending else ""))


def on_rollback(serving_dir: str, new_version: int, restored: int, settings: Settings, by: str = "",
                reason: str = "", now: Optional[float] = None) -> Release:
    """After ``serving_push.rollback`` copied ``restored`` in as ``new_version``: it becomes
    stable, and no canary runs (pending until TF Serving has loaded it)."""
    current = read(serving_dir)
    return _move(serving_dir, current, _record(f"rollback to {restored}", new_version, None, 0, by=by, reason=reason,
                                               now=now), settings)


def settle(serving_dir: str, settings: Settings, now: Optional[float] = None) -> Release:
    """The pending move's labels in force, once TF Serving has loaded its versions (the caller
    checks: runs/versions.py asks TF Serving); models.config stops loading what no label
    names. The release unchanged when nothing is pending."""
    current = read(serving_dir)
    if current.pending is None:
        return current
    record = dict(current.pending, settled_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now)))
    return write(serving_dir, Release(stable=record[STABLE], canary=record[CANARY],
                                      canary_percent=int(record["canary_percent"] or 0),
                                      history=current.history + (record,)), settings)


# --- writing -------------------------------------------------------------------------------------

def write(serving_dir: str, release: Release, settings: Settings,
          step: Callable[[str], None] = lambda name: None) -> Release:
    """Render every file of ``release`` and publish them together (module docstring): the KServe
    trees first, then the release files. ``step(name)`` runs after each (tests inject a crash)."""
    found = serving_push.versions(serving_dir)  # listed once: on an object store each listing is requests
    for v in release.labelled:
        _known(serving_dir, v, found)
    metadata = {v: serving_push.read_metadata(serving_dir, v) for v in release.labelled}
    files = render(serving_dir, release, settings, metadata)
    kserve_files.sync_kserve(serving_dir, release.labelled, found)
    step(KSERVE_DIR)
    if storage.links(serving_dir):
        _publish_by_link(serving_dir, files, step)
    else:
        storage.makedirs(release_dir(serving_dir))
        for name in WRITE_ORDER:
            storage.write_text(storage.join(release_dir(serving_dir), name), files[name])
            step(name)
    return release


def _publish_by_link(serving_dir: str, files: Dict[str, str], step: Callable[[str], None]) -> None:
    hidden = storage.join(serving_dir, f"{HIDDEN_PREFIX}{time.time_ns()}-{uuid.uuid4().hex[:8]}")
    storage.makedirs(hidden)
    try:
        for name in WRITE_ORDER:
            storage.write_text(storage.join(hidden, name), files[name])
            step(name)
        link = storage.join(serving_dir, f".{LINK}.{uuid.uuid4().hex[:8]}")
        os.symlink(os.path.basename(hidden), storage.local(link))
        step("link")
        os.replace(storage.local(link), storage.local(release_dir(serving_dir)))  # the commit: one rename
    except BaseException:
        storage.rmtree(hidden)
        raise
    remove_old(serving_dir)


def remove_old(serving_dir: str) -> None:
    """Hidden release directories and links the current link does not point at (a crash's
    leftovers included)."""
    link = storage.local(release_dir(serving_dir))
    current = os.path.realpath(link) if os.path.islink(link) else ""
    for name in storage.listdir(serving_dir):
        path = storage.join(serving_dir, name)
        if name.startswith(HIDDEN_PREFIX) and os.path.realpath(storage.local(path)) != current:
            storage.rmtree(path)
        elif name.startswith(f".{LINK}.") and os.path.islink(storage.local(path)):
            storage.remove(path)


def render(serving_dir: str, release: Release, settings: Settings,
           metadata: Dict[int, Dict[str, Any]]) -> Dict[str, str]:
    """{file name: its text} for ``release`` (pure: no file is touched)."""
    stable = release.stable if release.stable is not None else release.target[0]
    held = metadata.get(stable) if stable is not None else None
    batching = tf_serving_files.batching_choice((held or {}).get("batching"), settings.batch_threads)
    target_stable, target_canary, percent = release.target
    return {
        STATE_FILE: state_text(release, settings, batching),
        MODELS_CONFIG: tf_serving_files.models_config(
            settings.model_name, tf_serving_files.base_path(serving_dir, settings.base_path), release.labelled,
            ((STABLE, release.stable), (CANARY, release.canary))),
        BATCHING_FILE: tf_serving_files.batching_parameters(batching),
        MONITORING_FILE: tf_serving_files.monitoring_config(),
        KSERVE_FILE: kserve_files.inference_service(
            settings.model_name, kserve_files.storage_uri(settings.kserve_storage_uri, settings.model_name),
            target_stable, target_canary, percent),
    }
