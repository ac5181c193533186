"""Files that appear whole or not at all (write beside, then rename)."""
from __future__ import annotations

import hashlib
import json
import os
import shutil
from typing import Any, Sequence


def write_text_atomic(path: str, text: str) -> None:
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = f"{path}.{os.getpid()}.tmp"  # its own: another process may write the same file
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def write_json_atomic(path: str, data: Any) -> None:
    write_text_atomic(path, json.dumps(data, indent=2, sort_keys=True, default=str))


def content_digest(paths: Sequence[str], root: str = "") -> str:
    """sha256 of the files' names (relative to ``root``: an image's class folder is part of its
    name) and bytes, read a MiB at a time (a 1M-row CSV: ~0.3 s)."""
    digest = hashlib.sha256()
    for path in paths:
        digest.update((os.path.relpath(path, root) if root else os.path.basename(path)).encode() + b"\0")
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                digest.update(chunk)
    return digest.hexdigest()


def content_copy(path: str, directory: str) -> str:
    """A copy of ``path`` in ``directory`` named by its content (``<sha256 prefix>-<name>``):
    a path that changes exactly when the file does. The local runner hands the schema to
    ImportSchemaGen this way, so an edit in place re-runs what depends on it instead of being
    served from MLMD's cache (whose key holds the path, not the content)."""
    with open(path, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()[:16]
    target = os.path.join(directory, f"{digest}-{os.path.basename(path)}")
    if not os.path.isfile(target):
        os.makedirs(directory, exist_ok=True)
        tmp = f"{target}.{os.getpid()}.tmp"
        shutil.copyfile(path, tmp)
        os.replace(tmp, target)
    return target
