"""The Trainer on Vertex AI Training (TFX's google_cloud_ai_platform extension).

Enabled by the config's ``vertex_training`` section. The worker pool spec carries the
machine type, accelerators and replica count: pool 0 is the chief, pool 1 the other
workers, so TF_CONFIG describes several workers and ``runtime.strategy: auto`` picks
MultiWorkerMirroredStrategy.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional

from tfxline.pipeline.config import PipelineConfig, VertexTrainingConfig


def worker_pool_specs(vt: VertexTrainingConfig, image: str) -> List[Dict[str, Any]]:
    machine: Dict[str, Any] = {"machine_type": vt.machine_type}
    if vt.accelerator_count:
        machine.update(accelerator_type=vt.accelerator_type, accelerator_count=vt.accelerator_count)
    pool = {"machine_spec": machine, "container_spec": {"image_uri": image}}
    specs = [dict(pool, replica_count=1)]
    if vt.replica_count > 1:
        specs.append(dict(pool, replica_count=vt.replica_count - 1))
    return specs


def vertex_custom_config(cfg: PipelineConfig, image: str) -> Dict[str, Any]:
    from tfx.v1.extensions import google_cloud_ai_platform as ext

    vt = cfg.vertex_training
    return {
        ext.ENABLE_VERTEX_KEY: True,
        ext.VERTEX_REGION_KEY: vt.region,
        ext.TRAINING_ARGS_KEY: {"project": vt.project, "worker_pool_specs": worker_pool_specs(vt, image)},
    }


def trainer_factory(cfg: PipelineConfig, image: str = "") -> Optional[Callable[..., Any]]:
    """None (the standard Trainer) unless vertex_training.enabled."""
    if not cfg.vertex_training.enabled:
        return None
    from tfx.v1.extensions import google_cloud_ai_platform as ext

    def make(**kwargs):
        custom = dict(kwargs.pop("custom_config") or {})
        custom.update(vertex_custom_config(cfg, image))
        return ext.Trainer(custom_config=custom, **kwargs)

    return make
