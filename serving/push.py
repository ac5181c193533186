"""Versioned pushes into a TF Serving model directory, on a local file system or an object
store (no TFX imports here; files go through serving/storage.py).

Layout: ``<serving_dir>/<version>/`` with integer versions, as TF Serving's
``--model_base_path`` expects; each version also holds ``push_metadata.json``. A version is
complete when it holds ``saved_model.pb``: every reader here counts only complete versions.

How a version appears, so that a server polling the base path never loads half of one:

- **Local file system** (a disk, a Kubernetes volume): the SavedModel is copied into a hidden
  staging directory beside the target (``.tmp-<version>-<pid>``), the metadata is written, and
  the directory is renamed into place: one atomic rename, so no poll sees a partial version.
- **Object store** (gs://, s3://, any URI; TensorFlow's GCS and S3 file systems "rename" by
  copying every object), and a FUSE mount that refuses a directory rename (Cloud Storage FUSE
  without ``--rename-dir-limit``): the same staging directory is written first (slow part:
  the upload), then its files are copied to ``<version>/`` with ``push_metadata.json`` and
  ``saved_model.pb`` last, then the staging directory is deleted. TF Serving's file system
  source counts any numeric child as a version (tensorflow/serving 9d981c5c,
  ``sources/storage_path/file_system_storage_path_source.cc:87-110``), so for the seconds of
  those copies a server following the *latest* version could see a version without
  ``saved_model.pb``: its load fails and is retried (``--max_num_load_retries``, default 5,
  ``--load_retry_interval_micros``, default one minute: ``model_servers/main.cc``). A server
  started with the release's ``models.config`` (docs/serving.md) never does: its
  ``model_version_policy { specific }`` names only versions the release has written after
  they were complete (``AspireSpecificVersions``, same file, 167-210).

A crash leaves only a hidden staging directory (or, on an object store, a numeric directory
without ``saved_model.pb``, which is not a version); the next push removes both. Existing
versions are never overwritten; the newest ``keep_versions`` are kept.

A rollback is a push too: the chosen older version is copied in again as a new, highest
version (TF Serving serves the highest), with a ``rollback`` record in its metadata. The
version rolled back from stays on disk, for the post-mortem, until retention prunes it.
"""
from __future__ import annotations

import json
import os
import time
from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple

from tfxline.serving import storage

METADATA_FILE = "push_metadata.json"
SAVED_MODEL_FILE = "saved_model.pb"
TMP_PREFIX = ".tmp-"
LAST_FILES = (METADATA_FILE, SAVED_MODEL_FILE)  # a version is complete once saved_model.pb is in


class PushError(RuntimeError):
    """A push could not be completed; the serving directory is unchanged."""


class RollbackError(ValueError):
    """A rollback that cannot be done as asked; the serving directory is unchanged."""


def _numeric(serving_dir: str) -> List[int]:
    """Every numeric child, complete or not (a version number is never reused)."""
    return sorted(int(d) for d in storage.listdir(serving_dir) if d.isdigit())


def version_dir(serving_dir: str, version: int) -> str:
    return storage.join(serving_dir, str(version))


def is_complete(serving_dir: str, version: int) -> bool:
    return storage.isfile(storage.join(version_dir(serving_dir, version), SAVED_MODEL_FILE))


def versions(serving_dir: str) -> List[int]:
    """Complete versions, oldest first (staging directories and half-copied versions are not)."""
    return [v for v in _numeric(serving_dir) if is_complete(serving_dir, v)]


def read_metadata(serving_dir: str, version: int) -> Dict[str, Any]:
    path = storage.join(version_dir(serving_dir, version), METADATA_FILE)
    if not storage.isfile(path):
        return {}
    return storage.read_json(path)


def find_pushed(serving_dir: str, model_uri: str) -> Optional[int]:
    """The version that already holds this model artifact, if any."""
    for v in reversed(versions(serving_dir)):
        if read_metadata(serving_dir, v).get("model_uri") == model_uri:
            return v
    return None


def next_version(serving_dir: str, now: Optional[float] = None) -> int:
    """Seconds since the epoch (TFX's convention), but always above every existing version."""
    candidate = int(now if now is not None else time.time())
    return max([candidate] + [v + 1 for v in _numeric(serving_dir)])


def push(model_dir: str, serving_dir: str, metadata: Dict[str, Any], keep_versions: int,
         copytree: Callable[[str, str], Any] = storage.copytree, now: Optional[float] = None,
         protect: Iterable[int] = (), extra_files: Optional[Dict[str, bytes]] = None) -> int:
    """Copy ``model_dir`` in as a new version (the module's docstring says how it appears);
    return the version number. Pruning never deletes a ``protect``ed version (the release's
    stable and canary). ``extra_files`` ({name: content}, e.g. model.tflite) are written into
    the version before it appears."""
    if keep_versions < 1:
        raise PushError(f"keep_versions must be >= 1, got {keep_versions}; set serving.keep_versions to 1 or more")
    if not storage.isfile(storage.join(model_dir, SAVED_MODEL_FILE)):
        raise PushError(f"{model_dir} is not a SavedModel (no {SAVED_MODEL_FILE}); nothing pushed")
    storage.makedirs(serving_dir)
    version = next_version(serving_dir, now)  # above a cut-short one too: a server may have failed on it
    remove_leftovers(serving_dir)
    target = version_dir(serving_dir, version)
    staging = storage.join(serving_dir, f"{TMP_PREFIX}{version}-{os.getpid()}")
    try:
        copytree(model_dir, staging)
        for name, content in (extra_files or {}).items():
            storage.write_bytes(storage.join(staging, name), content)
        storage.write_text(storage.join(staging, METADATA_FILE), json.dumps(dict(metadata, version=version),
                                                                             indent=2, sort_keys=True))
        if storage.exists(target):  # never overwrite a version
            raise PushError(f"version {target} appeared during the push; nothing overwritten")
        publish(staging, target)
    except BaseException:
        storage.rmtree(staging)
        raise
    prune(serving_dir, keep_versions, protect)
    return version


def publish(staging: str, target: str) -> None:
    """Make the complete ``staging`` directory the version ``target``: one rename where the file
    system has one; else a copy with ``push_metadata.json`` and ``saved_model.pb`` last, then
    the staging directory removed. A copy that fails removes what it wrote of ``target``."""
    if storage.renames_atomically(target):
        try:
            storage.rename_dir(staging, target)
            return
        except FileExistsError:
            raise PushError(f"version {target} appeared during the push; nothing overwritten") from None
        except OSError:  # a FUSE mount without directory renames (Cloud Storage FUSE): copy
            pass
    try:
        storage.copytree(staging, target, last=LAST_FILES)
    except BaseException:
        storage.rmtree(target)
        raise
    storage.rmtree(staging)


def prune(serving_dir: str, keep_versions: int, protect: Iterable[int] = ()) -> List[int]:
    """Delete all but the newest ``keep_versions`` versions and the protected ones; return the
    deleted ones."""
    old = [v for v in versions(serving_dir)[:-keep_versions] if v not in set(protect)]
    for v in old:
        remove_version(serving_dir, v)
    return old


def remove_version(serving_dir: str, version: int) -> None:
    """Delete a version so that it stops being one first: hidden by a rename where there is one,
    else its saved_model.pb removed before the rest."""
    path = version_dir(serving_dir, version)
    if storage.renames_atomically(path):
        hidden = storage.join(serving_dir, f"{TMP_PREFIX}deleting-{version}")
        try:
            storage.rename_dir(path, hidden)
            path = hidden
        except OSError:
            storage.remove(storage.join(path, SAVED_MODEL_FILE))
    else:
        storage.remove(storage.join(path, SAVED_MODEL_FILE))
    storage.rmtree(path)


def remove_leftovers(serving_dir: str) -> None:
    """What a crashed push leaves: staging directories, and numeric directories without a
    saved_model.pb (a copy to an object store cut short)."""
    for name in storage.listdir(serving_dir):
        if name.startswith(TMP_PREFIX) or (name.isdigit() and not is_complete(serving_dir, int(name))):
            storage.rmtree(storage.join(serving_dir, name))


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
    new = push(version_dir(serving_dir, target), serving_dir, meta, max(keep_versions, 2), now=now,
               protect=set(protect) | {current})
    return new, current, target
