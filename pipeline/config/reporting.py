"""The keys a run refused for its config still reports with (local/outcome.py): its name, output
root, serving location and monitoring section, each checked, over the packaged default config."""
from __future__ import annotations

import dataclasses
import os
from typing import Any, Dict, Mapping, Optional, Sequence

from tfxline.pipeline.config import MonitoringConfig, PipelineConfig
from tfxline.pipeline.config.load import load_config, raw_config
from tfxline.typed_config.problems import check
from tfxline.typed_config.read import from_yaml


def load_reporting_config(path: Optional[str] = None, overrides: Sequence[str] = (),
                          output_root: Optional[str] = None) -> PipelineConfig:
    """What a refused run needs to report itself when the rest of its config is refused: the
    config's name, output root, serving location and monitoring section, each checked, over the
    packaged default config. Raises ConfigError when one of those is bad too."""
    raw = raw_config(path, overrides)
    base = load_config()
    values: Dict[str, Any] = {key: from_yaml(str, raw[key], key) for key in ("name", "output_root") if key in raw}
    if output_root:
        values["output_root"] = output_root
    if isinstance(raw.get("monitoring"), Mapping):
        values["monitoring"] = from_yaml(MonitoringConfig, raw["monitoring"], "monitoring")
    found = raw.get("serving")
    serving: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
    where = {key: from_yaml(str, serving[key], f"serving.{key}") for key in ("serving_root", "model_name")
             if key in serving}
    values["serving"] = dataclasses.replace(base.serving, **where)
    cfg = dataclasses.replace(base, **values)
    cfg = dataclasses.replace(cfg, output_root=os.path.abspath(cfg.output_root))
    check(cfg.monitoring.push_problems(), "monitoring")
    return cfg
