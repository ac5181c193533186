"""``tuning.reuse``: the saved best hyperparameters a local run's Trainer takes instead of tuning,
resolved before the run (the pipeline's Importer gets a folder holding exactly that one file,
which TFX's Trainer requires: components/trainer/executor.py:90-97 at v1.16.0)."""
from __future__ import annotations

import hashlib
import json
import os

from tfxline.pipeline.config import PipelineConfig
from tfxline.pipeline.data.source import DataError
from tfxline.runs import store as store_lib
from tfxline.trainer import tuning_settings as T


def hyperparameters_uri(cfg: PipelineConfig) -> str:
    """The folder the Importer reads ('' when tuning.reuse is unset); DataError in one line when
    there is nothing to reuse."""
    reuse = cfg.tuning.reuse
    if not reuse:
        return ""
    if reuse == T.REUSE_LATEST:
        found = (store_lib.newest_tuned(store_lib.open_store(cfg.metadata_store), cfg.name)
                 if store_lib.store_exists(cfg.metadata_store) else None)
        if not found:
            raise DataError(f"tuning.reuse: latest: no tuned run of {cfg.name!r} in "
                            f"{store_lib.describe_store(cfg.metadata_store)}; run once with "
                            "--set tuning.enabled=true, or name a best_hyperparameters.txt")
        return found
    path = os.path.join(reuse, T.BEST_FILE) if os.path.isdir(reuse) else reuse
    if not os.path.isfile(path):
        raise DataError(f"tuning.reuse: {reuse}: no such file; name a {T.BEST_FILE} a Tuner wrote "
                        "(tfxline runs show lists a tuned run's), its folder, or latest")
    with open(path, "rb") as f:
        raw = f.read()
    try:
        values = json.loads(raw).get("values")
    except (ValueError, AttributeError):
        values = None
    if not isinstance(values, dict):
        raise DataError(f"tuning.reuse: {path} is not a Tuner's best hyperparameters (JSON with \"values\"); "
                        f"name the {T.BEST_FILE} a Tuner wrote")
    # by content, alone in its folder: an edited file is a new import, and the Trainer finds one file
    folder = os.path.join(cfg.output_root, "hyperparameters", hashlib.sha256(raw).hexdigest()[:16])
    target = os.path.join(folder, T.BEST_FILE)
    if not os.path.isfile(target):
        os.makedirs(folder, exist_ok=True)
        with open(f"{target}.{os.getpid()}.tmp", "wb") as f:
            f.write(raw)
        os.replace(f"{target}.{os.getpid()}.tmp", target)
    return folder
