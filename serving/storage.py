"""Files by local path or by object-store URI (``gs://``, ``s3://``, any scheme TensorFlow's
file systems know), for the code that reads and writes serving directories, span ledgers and
run files: the Pusher, the release, the baseline, the drift check, the run's metrics.

A local path goes through ``os`` and ``shutil`` (no TensorFlow import: ``tfxline serving``
stays quick); a URI goes through ``tf.io.gfile``, as TFX's own ``fileio`` does. A KFP pipeline
root is gs://, s3:// or minio:// (kubeflow/pipelines ``backend/src/v2/config/env.go``), and
Vertex AI hands out gs:// URIs, so nothing that a compiled run reaches may assume a POSIX path.

What differs between the two, and what callers must ask rather than assume:

- ``renames_atomically(path)``: a local file system renames a directory in one step; an object
  store has no rename (TensorFlow's GCS and S3 file systems copy each object, then delete it),
  and Cloud Storage FUSE refuses a directory rename without ``--rename-dir-limit``. Code that
  publishes a directory asks this first (serving/push.py).
- ``write_bytes`` is whole or nothing on both: a temporary file renamed over the target
  locally; one object upload, which the store makes visible only when it completes, on an
  object store.
- ``links(path)``: symbolic and hard links exist on local file systems only.
"""
from __future__ import annotations

import json
import os
import shutil
import uuid
from typing import Any, List, Sequence


def is_uri(path: str) -> bool:
    """A path with a scheme (gs://, s3://, ...) other than file://."""
    return "://" in path and not path.startswith("file://")


def local(path: str) -> str:
    return path[len("file://"):] if path.startswith("file://") else path


def join(base: str, *parts: str) -> str:
    """``os.path.join`` that keeps a URI's ``//`` (posixpath does already; spelled out here)."""
    if is_uri(base):
        return "/".join([base.rstrip("/")] + [p.strip("/") for p in parts])
    return os.path.join(local(base), *parts)


def _gfile():
    import tensorflow as tf

    return tf.io.gfile


def renames_atomically(path: str) -> bool:
    """Whether a directory under ``path`` can be published by one atomic rename."""
    return not is_uri(path)


def links(path: str) -> bool:
    """Whether links (symbolic or hard) can be made under ``path``."""
    return not is_uri(path)


def exists(path: str) -> bool:
    return _gfile().exists(path) if is_uri(path) else os.path.exists(local(path))


def isdir(path: str) -> bool:
    return _gfile().isdir(path) if is_uri(path) else os.path.isdir(local(path))


def isfile(path: str) -> bool:
    if is_uri(path):
        gfile = _gfile()
        return gfile.exists(path) and not gfile.isdir(path)
    return os.path.isfile(local(path))


def listdir(path: str) -> List[str]:
    """The names directly under ``path`` ([] when it does not exist), without trailing slashes
    (object stores list "directories" as ``name/``)."""
    if is_uri(path):
        gfile = _gfile()
        if not gfile.isdir(path):
            return []
        return sorted({name.rstrip("/") for name in gfile.listdir(path)} - {""})
    path = local(path)
    return sorted(os.listdir(path)) if os.path.isdir(path) else []


def makedirs(path: str) -> None:
    if is_uri(path):
        _gfile().makedirs(path)
    else:
        os.makedirs(local(path), exist_ok=True)


def read_bytes(path: str) -> bytes:
    if is_uri(path):
        with _gfile().GFile(path, "rb") as f:
            return f.read()
    with open(local(path), "rb") as f:
        return f.read()


def read_text(path: str) -> str:
    return read_bytes(path).decode("utf-8")


def read_json(path: str) -> Any:
    return json.loads(read_text(path))


def write_bytes(path: str, content: bytes) -> None:
    """Write ``path`` whole or not at all (a reader never sees half of it)."""
    if is_uri(path):
        with _gfile().GFile(path, "wb") as f:  # one object, visible when the upload completes
            f.write(content)
        return
    path = local(path)
    tmp = os.path.join(os.path.dirname(path) or ".", f".{os.path.basename(path)}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        with open(tmp, "wb") as f:
            f.write(content)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def write_text(path: str, text: str) -> None:
    write_bytes(path, text.encode("utf-8"))


def remove(path: str) -> None:
    """Remove a file; nothing when it is gone already."""
    if is_uri(path):
        gfile = _gfile()
        if gfile.exists(path):
            gfile.remove(path)
    elif os.path.lexists(local(path)):
        os.unlink(local(path))


def rmtree(path: str) -> None:
    """Remove a directory and everything under it; nothing when it is gone already."""
    if is_uri(path):
        gfile = _gfile()
        if gfile.exists(path):
            gfile.rmtree(path)
    else:
        path = local(path)
        if os.path.islink(path):
            os.unlink(path)
        else:
            shutil.rmtree(path, ignore_errors=True)


def rename_dir(src: str, dst: str) -> None:
    """Publish ``src`` as ``dst`` in one atomic rename; only where ``renames_atomically``.
    An existing ``dst`` is never replaced (FileExistsError)."""
    if not renames_atomically(dst):
        raise OSError(f"{dst}: an object store has no atomic directory rename")
    if os.path.lexists(local(dst)):
        raise FileExistsError(dst)
    os.rename(local(src), local(dst))


def files(root: str) -> List[str]:
    """Every file under ``root``, as paths relative to it ('/'-separated), sorted."""
    out: List[str] = []
    if is_uri(root):
        for directory, _, names in _gfile().walk(root):
            rel = directory[len(root.rstrip("/")):].strip("/")
            out += [f"{rel}/{n}".strip("/") for n in (name.rstrip("/") for name in names) if n]
    else:
        root = local(root)
        for directory, _, names in os.walk(root):
            rel = os.path.relpath(directory, root)
            out += [n if rel == "." else f"{rel}/{n}".replace(os.sep, "/") for n in names]
    return sorted(out)


def copy_file(src: str, dst: str) -> None:
    """Copy one file (server-side between two URIs of one object store, where it supports it)."""
    if not is_uri(src) and not is_uri(dst):
        shutil.copyfile(local(src), local(dst))
    else:
        _gfile().copy(src, dst, overwrite=True)


def copytree(src: str, dst: str, last: Sequence[str] = (), hardlink: bool = False) -> List[str]:
    """Copy every file under ``src`` to ``dst`` (created); the files named in ``last``
    (relative paths) are copied after all the others, in that order. ``hardlink``: link
    instead of copying where both sides are local and on one file system. Returns the
    relative paths in the order they were written."""
    names = files(src)
    order = [n for n in names if n not in last] + [n for n in last if n in names]
    made = set()
    for name in order:
        parent = os.path.dirname(name)
        if parent not in made:
            makedirs(join(dst, parent) if parent else dst)
            made.add(parent)
        source, target = join(src, name), join(dst, name)
        if hardlink and links(src) and links(dst):
            try:
                os.link(local(source), local(target))
                continue
            except OSError:  # another file system, or links refused: copy
                pass
        copy_file(source, target)
    if not order:
        makedirs(dst)
    return order

