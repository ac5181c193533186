"""Parallel trials on Vertex AI: TFX's Vertex Tuner extension (``tuning.parallel_trials`` > 1 with
``vertex_training`` enabled, whose project, region and machine it uses; kubeflow/vertex.py for the
Trainer). Never tensorflow-cloud's CloudTuner (unmaintained since 2021).

What the extension does with it (tfx/extensions/google_cloud_ai_platform at v1.16.0):
``tune_args.num_parallel_trials`` N makes worker pool 1 hold N-1 replicas beside the chief
(tuner/executor.py:111-154); it starts one Vertex AI CustomJob (runner.py:194-206) whose every pool
runs our image with the command ``python -m tfx.scripts.run_executor --executor_class_path
...tuner.executor._WorkerExecutor`` and the Tuner's inputs, outputs and exec properties
(training_clients.py:134-161, :370-379), so each replica calls our ``tuner_fn`` (the exec property
``tuner_fn``, components/tuner/executor.py:96-101). Each replica's keras-tuner learns its part from
KERASTUNER_* variables the extension sets from Vertex AI's CLUSTER_SPEC (tuner/executor.py:318-358):
the chief machine runs the oracle in a subprocess (:209-223, :263-278) and trials like every worker
(:285-307); the oracle's process writes best_hyperparameters (:224). Our executor
(components/tuning.py TuningExecutor) does not run there, so no tuning_run.json is written: the run
report shows no trials table for such a run.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional

from tfxline.kubeflow.vertex import worker_pool_specs
from tfxline.pipeline.config import ConfigError, PipelineConfig


def parallel(cfg: PipelineConfig) -> bool:
    """The Tuner runs its trials on Vertex AI, several at once."""
    return cfg.tuning.tunes and cfg.tuning.parallel_trials > 1


def check(cfg: PipelineConfig) -> None:
    """ConfigError in one line when parallel trials have no Vertex AI Training to run on."""
    if parallel(cfg) and not cfg.vertex_training.enabled:
        raise ConfigError(
            f"tuning.parallel_trials {cfg.tuning.parallel_trials} runs on Vertex AI only (TFX's Vertex Tuner "
            "extension: one machine per trial, of vertex_training's machine type); set vertex_training.enabled=true "
            "with vertex_training.project and vertex_training.region, or --set tuning.parallel_trials=1 "
            "(one Tuner task, its trials one after another)")


def tuner_pool_specs(cfg: PipelineConfig, image: str) -> List[Dict[str, Any]]:
    """Pool 0 the chief (one machine), pool 1 the other N-1 trials' workers: vertex_training's
    machine and our image. The extension would set pool 1's count to N-1 itself
    (tuner/executor.py:148-154); we write it so the compiled spec says what runs."""
    pools = worker_pool_specs(cfg.vertex_training, image)[:1]
    return pools + [dict(pools[0], replica_count=cfg.tuning.parallel_trials - 1)]


def tuning_custom_config(cfg: PipelineConfig, image: str) -> Dict[str, Any]:
    """The extension's keys (trainer/settings.py CLOUD_EXTENSION_KEYS: our reader leaves them out).
    ``ai_platform_tuning_args`` must be a CustomJob with ``job_spec`` on Vertex AI: the executor
    reads ``training_inputs['job_spec']`` (tuner/executor.py:121); ``project`` rides along and is
    popped as the job's project (runner.py:194)."""
    from tfx.extensions.google_cloud_ai_platform import constants
    from tfx.extensions.google_cloud_ai_platform.tuner import executor

    vt = cfg.vertex_training
    return {
        constants.ENABLE_VERTEX_KEY: True,
        constants.VERTEX_REGION_KEY: vt.region,
        executor.TUNING_ARGS_KEY: {"project": vt.project,
                                   "job_spec": {"worker_pool_specs": tuner_pool_specs(cfg, image)}},
    }


def tuner_factory(cfg: PipelineConfig, image: str = "") -> Optional[Callable[..., Any]]:
    """None (the one-task Tuner, components/tuning.py) unless the trials run in parallel; else a
    maker of the extension's Tuner with the same arguments, N parallel trials and its custom_config."""
    if not parallel(cfg):
        return None
    check(cfg)

    def make(**kwargs):
        from tfx.extensions.google_cloud_ai_platform.tuner.component import Tuner
        from tfx.proto import tuner_pb2

        custom = dict(kwargs.pop("custom_config") or {})
        custom.update(tuning_custom_config(cfg, image))
        return Tuner(custom_config=custom, tune_args=tuner_pb2.TuneArgs(num_parallel_trials=cfg.tuning.parallel_trials),
                     **kwargs)

    return make
