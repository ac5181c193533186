"""Typed pipeline config: one file drives the local run and the Kubeflow compile.

``PipelineConfig`` composes the sections, each a dataclass that checks its own values beside its
fields (``problems()``): data, gates and serving in pipeline/config/sections.py; runtime, beam,
metadata, monitoring and Vertex in pipeline/config/platform.py; the Trainer's (model, training and
its part of runtime) in trainer/settings.py; the feature spec in transforms/features.py. The rules
that span sections are ``PipelineConfig.problems``'. ``pipeline.config.load`` reads the YAML and
its overrides through the one reader, typed_config/read.py, which raises ``ConfigError`` in one
line that names the key and the fix.
"""
from __future__ import annotations

import dataclasses
import os
from typing import Any, Dict, Iterator

from tfxline.pipeline.config.platform import (
    BeamConfig,
    MetadataConfig,
    MonitoringConfig,
    RuntimeConfig,
    VertexTrainingConfig,
)
from tfxline.pipeline.config.sections import (
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
from tfxline.trainer.settings import ModelConfig, TrainerRuntime, TrainerSettings, TrainingConfig
from tfxline.trainer.text_settings import PRETRAINED
from tfxline.trainer.tuning_settings import TuningConfig
from tfxline.transforms.features import FeatureSpec
from tfxline.trees.settings import encoding_problem, trained_family, trees_problem
from tfxline.typed_config.problems import ConfigError, Problem, bad, section_problems
from tfxline.typed_config.read import FROM_YAML, REQUIRED

__all__ = ["DEFAULT_CONFIG", "TRAIN_SPLIT", "VALIDATION_SPLIT", "EVAL_SPLIT", "ConfigError", "PipelineConfig",
           "DataConfig", "ModelConfig", "TrainingConfig", "RuntimeConfig", "EvaluationConfig", "DriftConfig",
           "ServingConfig", "MetadataConfig", "MonitoringConfig", "BeamConfig", "RetentionConfig",
           "TuningConfig", "VertexTrainingConfig"]

DEFAULT_CONFIG = "taxi"


@dataclasses.dataclass(frozen=True)
class PipelineConfig:
    features: FeatureSpec = dataclasses.field(metadata={
        FROM_YAML: lambda raw, where: FeatureSpec.from_dict(raw),
        REQUIRED: "add one (pipeline/configs/taxi.yaml has an example, `tfxline schema draft` writes one from a CSV)"})
    name: str = "taxi"             # the pipeline's name: MLMD's pipeline, the serving model's default name
    output_root: str = "output"    # where local runs write: pipeline_root/, metadata.sqlite, runs/, serving/, logs/
    data: DataConfig = DataConfig()
    model: ModelConfig = ModelConfig()
    training: TrainingConfig = TrainingConfig()
    tuning: TuningConfig = TuningConfig()
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

    @property
    def trainer_settings(self) -> TrainerSettings:
        """What the Trainer reads (its custom_config): the feature spec, model, training, the
        Trainer's runtime settings and the threshold objective; no Beam or Transform setting."""
        runtime = TrainerRuntime(**{f.name: getattr(self.runtime, f.name) for f in dataclasses.fields(TrainerRuntime)})
        # auto with a TFLite export trains the network alone (trees/settings.py trained_family)
        model = dataclasses.replace(self.model, family=trained_family(self.model.family, self.serving.tflite != "off"))
        return TrainerSettings(self.features, model, self.training, runtime, self.evaluation.threshold)

    def problems(self) -> Iterator[Problem]:
        """The top-level keys' rules, each section's in field order, then those that span
        sections (the first is raised; the feature spec raises its own, FeatureSpec.validate)."""
        if not self.name.replace("-", "").replace("_", "").isalnum():
            yield bad(self, "name", "use letters, digits, '-' or '_'")
        for f in dataclasses.fields(self):
            yield from (problem.within(f.name) for problem in section_problems(getattr(self, f.name)))
        yield from self.cross_section_problems()

    def cross_section_problems(self) -> Iterator[Problem]:
        """Drift thresholds and slices name declared feature columns, and a TFLite model has no
        datetime feature (its text parsing has no TFLite builtins)."""
        unknown = sorted(set(self.drift.features) - set(self.features.raw_columns))
        if unknown:
            yield Problem("drift.features", f"{', '.join(unknown)} not among the declared feature columns",
                          "set thresholds for columns listed under features")
        unknown = [s for s in self.evaluation.slices if s not in self.features.raw_columns]
        if unknown:
            yield Problem("evaluation.slices", f"{', '.join(unknown)} not among the declared feature columns",
                          "slice on a column listed under features")
        image = self.features.data_kind == "image"
        if (self.data.format == "images" and not image) or (image and self.data.format == "csv"):
            yield Problem("data.format", f"{self.data.format} with a {self.features.data_kind} feature spec",
                          "an image folder (format: images) needs one input with transform: image, which reads "
                          "an image folder or TFRecords of encoded images: `tfxline init --data FOLDER` writes both")
        yield from self.text_folder_problems()
        dated = [f.name for f in self.features.inputs if f.transform == "datetime"]
        if dated and self.serving.tflite != "off":
            yield Problem("serving.tflite", f"{self.serving.tflite}: the datetime feature(s) {', '.join(dated)} parse "
                          "text with TensorFlow string ops, which TFLite has no builtins for",
                          "fix: set serving.tflite: off, or remove the datetime features")
        trees = trees_problem(self.features, self.model.family, self.serving.tflite != "off")
        if trees:
            yield Problem("model.family", f"trees: {trees}",
                          "fix: set model.family: network (or auto, which trains trees only where they can serve)")
        encoding = encoding_problem(self.features, trained_family(self.model.family, self.serving.tflite != "off"),
                                    self.model.trees.encoding)
        if encoding:
            yield Problem("model.trees.encoding", f"rate: {encoding}",
                          "fix: set model.trees.encoding: auto or category")
        texts = [f.name for f in self.features.text_inputs]
        if texts and self.model.text_encoder == PRETRAINED and self.runtime.jit_compile == "true":
            yield Problem("runtime.jit_compile", "true: a pretrained text encoder tokenizes the raw text with string "
                          "ops, which have no XLA kernel", "fix: set runtime.jit_compile: auto (it trains without XLA)")
        if texts and self.serving.tflite != "off":  # transforms/text.py: the ops TFLite lacks, cited
            yield Problem("serving.tflite", f"{self.serving.tflite}: the text feature(s) {', '.join(texts)} are "
                          "tokenised with string ops (StringSplitV2, RegexReplace, StringLower, a hash table) that "
                          "TFLite has only as Flex ops, which TF 2.20+ interpreters lack",
                          "fix: set serving.tflite: off (TF Serving and KServe serve the SavedModel), or remove the "
                          "text features")

    def text_folder_problems(self) -> Iterator[Problem]:
        """A folder of .txt files (format: text) holds a document and its class: the spec reads them as
        one text input and a class label, no other input."""
        if self.data.format != "text":
            return
        spec, fix = self.features, ("a folder of .txt files (format: text) holds each document's text and its "
                                    "class: one input with transform: text and a class label (binary or "
                                    "class_vocabulary); `tfxline init --data FOLDER` writes both")
        if not spec.text_inputs or len(spec.inputs) > 1:
            inputs = ", ".join(f"{f.name} ({f.transform})" for f in spec.inputs)
            yield Problem("data.format", f"text with the inputs {inputs}", fix)
        elif spec.label.transform not in ("binary", "class_vocabulary"):
            yield Problem("data.format", f"text with a {spec.label.transform} label (the classes are folder "
                          "names)", fix)

    def to_dict(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if isinstance(value, FeatureSpec):
                out[f.name] = value.to_dict()
            elif dataclasses.is_dataclass(value) and not isinstance(value, type):  # a section, not a class
                out[f.name] = _plain(dataclasses.asdict(value))
            else:
                out[f.name] = value
        return out


def _plain(value: Any) -> Any:
    """A section as YAML-shaped data: tuples as lists, nested sections as mappings."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value
