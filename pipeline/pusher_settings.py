"""The Pusher's parameters from the ``serving`` config section: the release (labels, TF Serving
and KServe files) and the TFLite model. One copy: the DAG factory passes them to the Pusher
(components/safe_pusher.py), and ``tfxline serving`` (runs/versions.py) renders the same
release files from the same settings."""
from __future__ import annotations

import json
from typing import Dict

from tfxline.pipeline.config import PipelineConfig
from tfxline.serving import release as serving_release


def release_properties(cfg: PipelineConfig) -> Dict:
    """The Pusher's release parameters (components/safe_pusher.py), from the serving section."""
    return {"release": cfg.serving.release, "canary_percent": cfg.serving.canary_percent,
            "model_name": cfg.serving.model_name or cfg.name, "tf_serving_base_path": cfg.serving.tf_serving_base_path,
            "kserve_storage_uri": cfg.serving.kserve_storage_uri, "batch_threads": cfg.serving.batch_threads}


def release_settings(cfg: PipelineConfig) -> serving_release.Settings:
    """How ``tfxline serving`` renders the release files: as the Pusher does."""
    return serving_release.Settings.from_properties(release_properties(cfg))


def tflite_properties(cfg: PipelineConfig) -> Dict:
    """The Pusher's TFLite parameters (serving/tflite.py); none when it is off."""
    if cfg.serving.tflite == "off":
        return {}
    return {"tflite": cfg.serving.tflite, "tflite_tolerance": cfg.serving.tflite_tolerance,
            "features": json.dumps(cfg.features.to_dict(), sort_keys=True)}
