"""AnomaliesGate: stop the pipeline before training when ExampleValidator found anomalies.

TFX 1.16's ExampleValidator records anomalies but never fails, and Transform/Trainer do
not read its output. This component reads the anomalies of every split and raises
``DataAnomaliesError`` naming them, so nothing is trained or pushed from bad data; the
pipeline makes Transform depend on it (``add_upstream_node``).

It is a class-based component (spec + executor) rather than a ``@component`` function:
TFX packages the module of a function component into an ephemeral wheel at run time
(and uploads it to the pipeline root on Kubeflow), which a class-based one avoids.
"""
from __future__ import annotations

import os
from typing import Any, Dict, List

import tensorflow as tf
from tensorflow_metadata.proto.v0 import anomalies_pb2
from tfx import types
from tfx.dsl.components.base import base_component, base_executor, executor_spec
from tfx.types import artifact_utils, standard_artifacts
from tfx.types.component_spec import ChannelParameter

ANOMALIES_FILE = "SchemaDiff.pb"
ANOMALIES_KEY = "anomalies"


class DataAnomaliesError(RuntimeError):
    """The data violates the schema."""


def anomaly_records(artifact: types.Artifact) -> List[Dict[str, str]]:
    """One {split, feature, short, description} per anomaly in an ExampleAnomalies artifact
    (feature "(dataset)" for a dataset-level one)."""
    found = []
    for split in artifact_utils.decode_split_names(artifact.split_names):
        path = os.path.join(artifact_utils.get_split_uri([artifact], split), ANOMALIES_FILE)
        with tf.io.gfile.GFile(path, "rb") as f:
            anomalies = anomalies_pb2.Anomalies.FromString(f.read())
        infos = sorted(anomalies.anomaly_info.items())
        if anomalies.HasField("dataset_anomaly_info"):
            infos.append(("(dataset)", anomalies.dataset_anomaly_info))
        found += [{"split": split, "feature": feature, "short": info.short_description,
                   "description": info.description} for feature, info in infos]
    return found


def read_anomalies(artifact: types.Artifact) -> List[str]:
    """'split: feature: description' for each anomaly in an ExampleAnomalies artifact."""
    return [f"{a['split']}: {a['feature']}: {a['short'] or a['description']}" for a in anomaly_records(artifact)]


class Executor(base_executor.BaseExecutor):
    def Do(self, input_dict: Dict[str, List[types.Artifact]], output_dict: Dict[str, List[types.Artifact]],
           exec_properties: Dict[str, Any]) -> None:
        found = [a for artifact in input_dict[ANOMALIES_KEY] for a in read_anomalies(artifact)]
        if found:
            raise DataAnomaliesError(
                f"the data violates the schema ({len(found)} anomalies: {'; '.join(found)}); "
                "fix the data, or if the change is expected review and update the schema "
                "(tfxline schema draft --diff)")


class AnomaliesGateSpec(types.ComponentSpec):
    PARAMETERS: Dict[str, Any] = {}
    INPUTS = {ANOMALIES_KEY: ChannelParameter(type=standard_artifacts.ExampleAnomalies)}
    OUTPUTS: Dict[str, Any] = {}


class AnomaliesGate(base_component.BaseComponent):
    SPEC_CLASS = AnomaliesGateSpec
    EXECUTOR_SPEC = executor_spec.ExecutorClassSpec(Executor)

    def __init__(self, anomalies: types.BaseChannel):
        super().__init__(spec=AnomaliesGateSpec(anomalies=anomalies))
