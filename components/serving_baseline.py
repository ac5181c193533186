"""The gate's baseline: the model version currently in the serving directory.

One mechanism for every orchestrator. TFX's ``Resolver`` (latest blessed model in MLMD)
compiles to *resolver* executors, which Vertex AI runs and open-source Kubeflow Pipelines
rejects (its v2 backend runs only container and importer executors). These two
class-based components compile to plain container executors instead:

- ``ServingBaseline`` copies the newest complete version under ``serving_dir`` (the model
  that clients are being served right now) into its ``baseline_model`` output, a real
  Model artifact (``Format-Serving/``, as TFX's Trainer lays it out) that the Evaluator
  loads. The copy also keeps the baseline readable if retention prunes that version
  mid-run. Nothing serving yet: the artifact holds no model and says so in
  ``baseline.json``.
- ``GatedEvaluator`` is TFX's Evaluator with one change: a baseline artifact that holds no
  model is dropped before TFMA runs, so the first model is judged on its value thresholds
  alone (TFMA skips change thresholds without a baseline), as with the Resolver.

It is arguably the right baseline, too: a candidate must not be worse than what is serving,
whatever MLMD remembers as "last blessed" (a rollback or a pruned version changes what
serves, not what MLMD remembers).

``ServingBaseline`` takes the candidate model as an input: the baseline is resolved per
candidate (after training, right before evaluation), and MLMD's cache re-uses a baseline
only together with the same candidate. The serving directory is a path or an object-store URI
(gs://, s3://), as for the Pusher (serving/storage.py).
"""
from __future__ import annotations

import json
import os
from typing import Any, Dict, List, Optional

from absl import logging
from tensorflow_model_analysis.proto import config_pb2 as tfma_pb2
from tfx import types
from tfx.components import Evaluator
from tfx.components.evaluator import executor as evaluator_executor
from tfx.dsl.components.base import base_component, base_executor, executor_spec
from tfx.dsl.io import fileio
from tfx.types import standard_artifacts, standard_component_specs
from tfx.types.component_spec import ChannelParameter, ExecutionParameter
from tfx.utils import io_utils, path_utils, proto_utils

from tfxline.components import decision_threshold, evaluator_models
from tfxline.serving import push as serving_push
from tfxline.serving import release as serving_release
from tfxline.trainer import decision as trainer_decision

CANDIDATE_KEY, BASELINE_KEY = "candidate_model", "baseline_model"
BASELINE_FILE = "baseline.json"


def describe(artifact_uri: str) -> Dict[str, Any]:
    """What a baseline artifact holds: ``{"found": bool, "serving_version", "serving_dir",
    "source_model_uri"}`` (the one reader of ``baseline.json``)."""
    path = os.path.join(artifact_uri, BASELINE_FILE)
    if not fileio.exists(path):
        return {"found": False}
    with fileio.open(path) as f:
        return json.loads(f.read())


def describe_recorded(artifact: types.Artifact) -> Dict[str, Any]:
    """``describe`` from what the executor recorded in MLMD (custom properties), which outlives
    the artifact's files (retention deletes the copy); the file for artifacts without them."""
    if not artifact.has_custom_property("baseline_found"):
        return describe(artifact.uri)
    info: Dict[str, Any] = {"found": bool(artifact.get_int_custom_property("baseline_found"))}
    if info["found"]:
        info["serving_version"] = int(artifact.get_string_custom_property("serving_version"))
        info["source_model_uri"] = artifact.get_string_custom_property("source_model_uri")
    return info


def has_model(artifact: types.Artifact) -> bool:
    return bool(describe(artifact.uri).get("found"))


class Executor(base_executor.BaseExecutor):
    def Do(self, input_dict: Dict[str, List[types.Artifact]], output_dict: Dict[str, List[types.Artifact]],
           exec_properties: Dict[str, Any]) -> None:
        serving_dir = exec_properties["serving_dir"]
        out = output_dict[BASELINE_KEY][0]
        version = serving_release.serving_version(serving_dir)  # the stable label, or the highest version
        found = version is not None
        info: Dict[str, Any] = {"found": found, "serving_dir": serving_dir}
        if found:
            source = serving_push.version_dir(serving_dir, version)
            io_utils.copy_dir(source, path_utils.serving_model_dir(out.uri))
            info.update(serving_version=version,
                        source_model_uri=serving_push.read_metadata(serving_dir, version).get("model_uri", ""))
            out.set_string_custom_property("serving_version", str(version))
            out.set_string_custom_property("source_model_uri", info["source_model_uri"])
            logging.info("baseline: serving version %s from %s", version, source)
        else:
            logging.info("baseline: nothing serving in %s; the candidate is judged on thresholds alone",
                         serving_dir)
        out.set_int_custom_property("baseline_found", int(bool(found)))
        fileio.makedirs(out.uri)
        with fileio.open(os.path.join(out.uri, BASELINE_FILE), "w") as f:
            f.write(json.dumps(info, indent=2, sort_keys=True))


class ServingBaselineSpec(types.ComponentSpec):
    PARAMETERS = {"serving_dir": ExecutionParameter(type=str)}
    INPUTS = {CANDIDATE_KEY: ChannelParameter(type=standard_artifacts.Model)}
    OUTPUTS = {BASELINE_KEY: ChannelParameter(type=standard_artifacts.Model)}


class ServingBaseline(base_component.BaseComponent):
    SPEC_CLASS = ServingBaselineSpec
    EXECUTOR_SPEC = executor_spec.ExecutorClassSpec(Executor)

    def __init__(self, candidate_model: types.BaseChannel, serving_dir: str):
        super().__init__(spec=ServingBaselineSpec(
            candidate_model=candidate_model, serving_dir=serving_dir,
            baseline_model=types.Channel(type=standard_artifacts.Model)))


class EvaluatorExecutor(evaluator_executor.Executor):
    """TFX's Evaluator executor; a baseline artifact without a model counts as no baseline, and
    each model is measured at its own decision threshold (components/decision_threshold.py)."""

    def Do(self, input_dict: Dict[str, List[types.Artifact]], output_dict: Dict[str, List[types.Artifact]],
           exec_properties: Dict[str, Any]) -> None:
        baseline: Optional[List[types.Artifact]] = input_dict.get(standard_component_specs.BASELINE_MODEL_KEY)
        if baseline and not has_model(baseline[0]):
            logging.info("no model serving yet: evaluating without a baseline")
            input_dict = {k: v for k, v in input_dict.items() if k != standard_component_specs.BASELINE_MODEL_KEY}
            baseline = None
        models = {decision_threshold.CANDIDATE: input_dict[standard_component_specs.MODEL_KEY][0]}
        if baseline:
            models[decision_threshold.BASELINE] = baseline[0]
        # a trees model's ops, where TFMA loads it (components/evaluator_models.py)
        exec_properties = dict(exec_properties, custom_eval_shared_model=evaluator_models.FUNCTION)
        if exec_properties.get(standard_component_specs.EVAL_CONFIG_KEY):
            exec_properties = dict(exec_properties, **{standard_component_specs.EVAL_CONFIG_KEY: _at_thresholds(
                exec_properties[standard_component_specs.EVAL_CONFIG_KEY], models)})
        super().Do(input_dict, output_dict, exec_properties)


def _at_thresholds(eval_config_json: str, models: Dict[str, types.Artifact]) -> str:
    """The eval config (JSON) with each model's threshold metrics at the threshold its Trainer
    chose (components/decision_threshold.py)."""
    thresholds = {}
    for name, artifact in models.items():
        chosen = trainer_decision.read(path_utils.serving_model_path(artifact.uri))
        thresholds[name] = chosen and chosen["threshold"]
    eval_config = tfma_pb2.EvalConfig()
    proto_utils.json_to_proto(eval_config_json, eval_config)
    return proto_utils.proto_to_json(decision_threshold.with_thresholds(eval_config, thresholds))


class GatedEvaluator(Evaluator):
    EXECUTOR_SPEC = executor_spec.BeamExecutorSpec(EvaluatorExecutor)
