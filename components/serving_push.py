"""Atomic, versioned pushes into a TF Serving model directory (no TFX imports here).

Layout: ``<serving_dir>/<version>/`` with integer versions, as TF Serving's
``--model_base_path`` expects; each version also holds ``push_metadata.json``.

A push copies the SavedModel into a hidden temporary directory beside the target
(``.tmp-<version>-<pid>``), writes the metadata, then renames it into place. A rename within
one local file system is atomic, so TF Serving never sees a partial version; a crash
leaves only a hidden temporary directory, which the next push removes. (On object stores
such as GCS a rename is a copy: there, point TF Serving at the bucket only through
versions that have a ``push_metadata.json``.) Existing versions are never overwritten; the
newest ``keep_versions`` are kept.

A rollback is a push too: the chosen older version is copied in again as a new, highest
version (TF Serving serves the highest), with a ``rollback`` record in its metadata. The
version rolled back from stays on disk, for the post-mortem, until retention prunes it.
"""
from __future__ import annotations

import json
import os
import shutil
import time
from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple

METADATA_FILE = "push_metadata.json"
TMP_PREFIX = ".tmp-"


class PushError(RuntimeError):
    """A push could not be completed; the serving directory is unchanged."""


class RollbackError(ValueError):
    """A rollback that cannot be done as asked; the serving directory is unchanged."""


def versions(serving_dir: str) -> List[int]:
    """Complete versions, oldest first (hidden temporary directories are not versions)."""
    if not os.path.isdir(serving_dir):
        return []
    return sorted(int(d) for d in os.listdir(serving_dir)
                  if d.isdigit() and os.path.isdir(os.path.join(serving_dir, d)))


def read_metadata(serving_dir: str, version: int) -> Dict[str, Any]:
    path = os.path.join(serving_dir, str(version), METADATA_FILE)
    if not os.path.isfile(path):
        return {}
    with open(path) as f:
        return json.load(f)


def find_pushed(serving_dir: str, model_uri: str) -> Optional[int]:
    """The version that already holds this model artifact, if any."""
    for v in reversed(versions(serving_dir)):
        if read_metadata(serving_dir, v).get("model_uri") == model_uri:
            return v
    return None


def next_version(serving_dir: str, now: Optional[float] = None) -> int:
    """Seconds since the epoch (TFX's convention), but always above every existing version."""
    existing = versions(serving_dir)
    candidate = int(now if now is not None else time.time())
    return max([candidate] + [v + 1 for v in existing])


def push(model_dir: str, serving_dir: str, metadata: Dict[str, Any], keep_versions: int,
         copytree: Callable[[str, str], Any] = shutil.copytree, now: Optional[float] = None,
         protect: Iterable[int] = (), extra_files: Optional[Dict[str, bytes]] = None) -> int:
    """Copy ``model_dir`` in as a new version atomically; return the version number. Pruning
    never deletes a ``protect``ed version (the release's stable and canary). ``extra_files``
    ({name: content}, e.g. model.tflite) are written into the version before it appears."""
    if keep_versions < 1:
        raise PushError(f"keep_versions must be >= 1, got {keep_versions}; set serving.keep_versions to 1 or more")
    if not os.path.isfile(os.path.join(model_dir, "saved_model.pb")):
        raise PushError(f"{model_dir} is not a SavedModel (no saved_model.pb); nothing pushed")
    os.makedirs(serving_dir, exist_ok=True)
    remove_stale_temporaries(serving_dir)
    version = next_version(serving_dir, now)
    target = os.path.join(serving_dir, str(version))
    tmp = os.path.join(serving_dir, f"{TMP_PREFIX}{version}-{os.getpid()}")
    try:
        copytree(model_dir, tmp)
        for name, content in (extra_files or {}).items():
            with open(os.path.join(tmp, name), "wb") as f:
                f.write(content)
        with open(os.path.join(tmp, METADATA_FILE), "w") as f:
            json.dump(dict(metadata, version=version), f, indent=2, sort_keys=True)
        if os.path.exists(target):  # never overwrite a version
            raise PushError(f"version {target} appeared during the push; nothing overwritten")
        os.rename(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    prune(serving_dir, keep_versions, protect)
    return version


def prune(serving_dir: str, keep_versions: int, protect: Iterable[int] = ()) -> List[int]:
    """Delete all but the newest ``keep_versions`` versions and the protected ones; return the
    deleted ones."""
    old = [v for v in versions(serving_dir)[:-keep_versions] if v not in set(protect)]
    for v in old:
        # Hide first (rename is atomic), then delete, so no half-deleted version is visible.
        hidden = os.path.join(serving_dir, f"{TMP_PREFIX}deleting-{v}")
        os.rename(os.path.join(serving_dir, str(v)), hidden)
        shutil.rmtree(hidden, ignore_errors=True)
    return old


def remove_stale_temporaries(serving_dir: str) -> None:
    for d in os.listdir(serving_dir):
        if d.startswith(TMP_PREFIX):
            shutil.rmtree(os.path.join(serving_dir, d), ignore_errors=True)




def metadata_by_version(serving_dir: str) -> Dict[int, Dict[str, Any]]:
    """{version: its push_metadata.json}, oldest first."""
    return {v: read_metadata(serving_dir, v) for v in versions(serving_dir)}


def rolled_back(metadata: Dict[int, Dict[str, Any]]) -> Dict[int, int]:
    """{version rolled back from: the version that replaced it}, from ``metadata_by_version``."""
    return {int(meta["rollback"]["from_version"]): v for v, meta in metadata.items() if meta.get("rollback")}


def rolled_back_versions(serving_dir: str) -> Dict[int, int]:
    """``rolled_back`` over the kept versions of ``serving_dir``."""
    return rolled_back(metadata_by_version(serving_dir))


def rollback_target(serving_dir: str, to: Optional[int] = None, current: Optional[int] = None) -> Tuple[int, int]:
    """(the version serving now, the version to serve again). By default the newest older
    version with another model that was not itself rolled back from; ``to`` picks one.
    ``current``: the version serving now when a release labels it (default: the highest)."""
    metadata = metadata_by_version(serving_dir)
    found = list(metadata)
    if not found:
        raise RollbackError(f"no pushed model in {serving_dir}; nothing to roll back")
    current = found[-1] if current is None else current
    current_model = metadata[current].get("model_uri")

    def serves_now(v: int) -> bool:
        return v == current or bool(current_model and metadata[v].get("model_uri") == current_model)

    listing = ", ".join(map(str, found))
    if to is not None:
        if to not in metadata:
            raise RollbackError(f"version {to} is not in {serving_dir} (it holds {listing}); "
                                "'tfxline serving' lists them")
        if serves_now(to):
            raise RollbackError(f"version {to} holds the model serving now (version {current}); "
                                "pick an older one: 'tfxline serving' lists them")
        return current, to
    replaced = rolled_back(metadata)
    older = [v for v in found if v not in replaced and not serves_now(v) and v < current]
    if not older:
        raise RollbackError(f"no earlier model to roll back to in {serving_dir} (it holds {listing}, "
                            "and the older versions were rolled back from or hold the serving model); "
                            "serving.keep_versions sets how many versions are kept")
    return current, older[-1]


def rollback(serving_dir: str, keep_versions: int, to: Optional[int] = None, reason: str = "",
             by: str = "", now: Optional[float] = None, current: Optional[int] = None,
             protect: Iterable[int] = ()) -> Tuple[int, int, int]:
    """Serve an older version again: copy it in as a new version. Returns (new version, the
    version rolled back from, the version restored)."""
    current, target = rollback_target(serving_dir, to, current)
    meta = read_metadata(serving_dir, target)
    meta.pop("version", None)
    meta["rollback"] = {"from_version": current, "restored_version": target, "reason": reason, "by": by,
                        "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now))}
    # Keep the version rolled back from, whatever keep_versions says: it is the evidence.
    new = push(os.path.join(serving_dir, str(target)), serving_dir, meta, max(keep_versions, 2), now=now,
               protect=set(protect) | {current})
    return new, current, target
