"""Typed pipeline config: one file drives the local run and the Kubeflow compile.

``PipelineConfig`` composes the sections, each a dataclass that checks its own values beside its
fields: data, gates and serving in pipeline/config_sections.py; beam, metadata, monitoring and
Vertex in pipeline/config_platform.py; the Trainer's (model, training, runtime) in
trainer/settings.py, their rules in pipeline/config_trainer.py. ``pipeline.config_loader`` reads
the YAML and raises ``ConfigError`` in one line that names the key and the fix.
"""
from __future__ import annotations

import dataclasses
import os
from typing import Any, Dict, Iterator

from tfxline.pipeline import config_trainer
from tfxline.pipeline.config_parse import ConfigError, Problem, bad
from tfxline.pipeline.config_platform import BeamConfig, MetadataConfig, MonitoringConfig, VertexTrainingConfig
from tfxline.pipeline.config_sections import (
    EVAL_SPLIT,
    TRAIN_SPLIT,
    VALIDATION_SPLIT,
    DataConfig,
    DriftConfig,
    EvaluationConfig,
    RetentionConfig,
    ServingConfig,
)

# The sections the Trainer reads live with the model code (trainer/ never imports pipeline/).
from tfxline.trainer.settings import ModelConfig, RuntimeConfig, TrainingConfig
from tfxline.transforms.features import FeatureSpec

__all__ = ["DEFAULT_CONFIG", "TRAIN_SPLIT", "VALIDATION_SPLIT", "EVAL_SPLIT", "ConfigError", "PipelineConfig",
           "DataConfig", "ModelConfig", "TrainingConfig", "RuntimeConfig", "EvaluationConfig", "DriftConfig",
           "ServingConfig", "MetadataConfig", "MonitoringConfig", "BeamConfig", "RetentionConfig",
           "VertexTrainingConfig"]

DEFAULT_CONFIG = "taxi"


@dataclasses.dataclass(frozen=True)
class PipelineConfig:
    features: FeatureSpec
    name: str = "taxi"             # the pipeline's name: MLMD's pipeline, the serving model's default name
    output_root: str = "output"    # where local runs write: pipeline_root/, metadata.sqlite, runs/, serving/, logs/
    data: DataConfig = DataConfig()
    model: ModelConfig = ModelConfig()
    training: TrainingConfig = TrainingConfig()
    runtime: RuntimeConfig = RuntimeConfig()
    evaluation: EvaluationConfig = EvaluationConfig()
    drift: DriftConfig = DriftConfig()
    serving: ServingConfig = ServingConfig()
    metadata: MetadataConfig = MetadataConfig()
    monitoring: MonitoringConfig = MonitoringConfig()
    beam: BeamConfig = BeamConfig()
    retention: RetentionConfig = RetentionConfig()
    vertex_training: VertexTrainingConfig = VertexTrainingConfig()

    # Paths derived from output_root; runners own them, create_pipeline receives them.
    @property
    def pipeline_root(self) -> str:
        return os.path.join(self.output_root, "pipeline_root")

    @property
    def metadata_path(self) -> str:
        return os.path.join(self.output_root, "metadata.sqlite")

    @property
    def metadata_store(self) -> Any:
        """The store as plain data: the SQLite file's path, or {"mysql": {host, port, database,
        user, password_env}} (runs.store.connection_config turns it into MLMD's config)."""
        if self.metadata.backend == "sqlite":
            return self.metadata_path
        return {"mysql": {k: v for k, v in dataclasses.asdict(self.metadata).items() if k != "backend"}}

    @property
    def serving_dir(self) -> str:
        root = self.serving.serving_root or os.path.join(self.output_root, "serving")
        return os.path.join(root, self.serving.model_name or self.name)

    def problems(self) -> Iterator[Problem]:
        """The top-level keys' rules, then each section's, in field order (the first is raised).
        The rules across sections are config_loader.validate's."""
        if not self.name.replace("-", "").replace("_", "").isalnum():
            yield bad(self, "name", "use letters, digits, '-' or '_'")
        for f in dataclasses.fields(self):
            section = getattr(self, f.name)
            rules = config_trainer.RULES.get(type(section)) or getattr(type(section), "problems", None)
            if rules:
                yield from (problem.within(f.name) for problem in rules(section))

    def to_dict(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if isinstance(value, FeatureSpec):
                out[f.name] = value.to_dict()
            elif dataclasses.is_dataclass(value):
                out[f.name] = {k: list(v) if isinstance(v, tuple) else v
                               for k, v in dataclasses.asdict(value).items()}
            else:
                out[f.name] = value
        return out
