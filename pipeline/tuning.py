"""What gives the Trainer its hyperparameters: TFX's Tuner (``tuning.enabled``, our executor:
components/tuning.py), an Importer of saved best hyperparameters (``tuning.reuse``), or nothing."""
from __future__ import annotations

from tfx.dsl.components.common.importer import Importer
from tfx.types import standard_artifacts

from tfxline.components.tuning import TUNER_FN, TunerComponent
from tfxline.pipeline.config import PipelineConfig
from tfxline.trainer.tuning_settings import REUSED_ID, TUNER_ID

__all__ = ["REUSED_ID", "TUNER_ID", "tuned_hyperparameters", "tuner_custom_config", "tuning_component"]



def tuner_custom_config(cfg: PipelineConfig) -> dict:
    """The Tuner's custom_config: the Trainer's, and the tuning section's search (not whether it
    runs or where saved values come from, which never reach it)."""
    tuning = {k: v for k, v in cfg.to_dict()["tuning"].items() if k not in ("enabled", "reuse", "parallel_trials")}
    return dict(cfg.trainer_settings.to_custom_config(), tuning=tuning)


def tuning_component(cfg: PipelineConfig, examples, schema_gen, transform, train_args, eval_args,
                     hyperparameters_uri: str, tuner_factory=None):
    """The Importer of ``hyperparameters_uri`` (tuning.reuse: the runner resolved it), the Tuner
    (tuning.enabled) over the Trainer's examples, Transform graph and splits, or None.
    ``tuner_factory``: a Tuner variant taking the same arguments (Vertex AI's parallel trials,
    kubeflow/vertex_tuning.py); None: ours (components/tuning.py)."""
    if cfg.tuning.reuse:
        return Importer(source_uri=hyperparameters_uri, artifact_type=standard_artifacts.HyperParameters,
                        reimport=False).with_id(REUSED_ID)
    if not cfg.tuning.enabled:
        return None
    return (tuner_factory or TunerComponent)(
        tuner_fn=TUNER_FN, examples=examples, transform_graph=transform.outputs["transform_graph"],
        schema=schema_gen.outputs["schema"], train_args=train_args, eval_args=eval_args,
        custom_config=tuner_custom_config(cfg)).with_id(TUNER_ID)


def tuned_hyperparameters(component):
    """The channel of best hyperparameters ``tuning_component`` made."""
    return component.outputs["result" if component.id == REUSED_ID else "best_hyperparameters"]
