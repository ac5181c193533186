"""AnomaliesGate: stop the pipeline before training when the data is unfit to train on.

TFX 1.16's ExampleValidator records anomalies but never fails, and Transform/Trainer do
not read its output. This component reads the anomalies of every split and raises
``DataAnomaliesError`` naming them, so nothing is trained or pushed from bad data; the
pipeline makes Transform depend on it (``add_upstream_node``).

It also stops on the one defect TFDV does not report: a split that holds no rows (data too
small for its hash buckets). ExampleValidator finds no anomaly in an empty split, even with
the schema's ``min_examples_count``, yet an empty train split cannot train, an empty
validation split silently turns early stopping off, and an empty eval split leaves nothing to
judge the model on. The split sizes come from StatisticsGen's ``num_examples``.

It is a class-based component (spec + executor) rather than a ``@component`` function:
TFX packages the module of a function component into an ephemeral wheel at run time
(and uploads it to the pipeline root on Kubeflow), which a class-based one avoids.
"""
from __future__ import annotations

import os
from typing import Any, Dict, List, Optional

import tensorflow as tf
from tensorflow_metadata.proto.v0 import anomalies_pb2
from tfx import types
from tfx.dsl.components.base import base_component, base_executor, executor_spec
from tfx.types import artifact_utils, standard_artifacts
from tfx.types.component_spec import ChannelParameter, ExecutionParameter

from tfxline.components import metric_samples, run_metrics
from tfxline.components.anomalies_files import ANOMALIES_FILE

ANOMALIES_KEY, STATISTICS_KEY = "anomalies", "statistics"


class DataAnomaliesError(RuntimeError):
    """The data violates the schema, or a split of it is empty."""


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
    """'split: feature: what (TFDV's words, naming the values)' for each anomaly in an
    ExampleAnomalies artifact: 'eval: payment_type: Unexpected string values (Examples contain
    values missing from the schema: Bitcoin (~2%))'."""
    return [f"{a['split']}: {a['feature']}: {_what(a['short'], a['description'])}" for a in anomaly_records(artifact)]


# the most of an anomaly's description a line shows: TFDV lists every unexpected value, and a text
# column's values are whole documents (a 100-review table's line was 60,000 characters)
MAX_DESCRIPTION = 300


def _what(short: str, description: str) -> str:
    description = description.strip().rstrip(".")
    if len(description) > MAX_DESCRIPTION:
        description = description[:MAX_DESCRIPTION].rstrip() + f"... ({len(description)} characters)"
    if not short or not description or description == short:
        return short or description
    return f"{short} ({description})"


def split_sizes(artifact: types.Artifact) -> Dict[str, int]:
    """{split: rows} from an ExampleStatistics artifact, in the artifact's split order."""
    from tfx.components.statistics_gen import stats_artifact_utils

    return {split: sum(d.num_examples for d in stats_artifact_utils.load_statistics(artifact, split).proto().datasets)
            for split in artifact_utils.decode_split_names(artifact.split_names)}


def empty_split_message(sizes: Dict[str, int]) -> str:
    """'' when every split holds rows, else one line naming the empty splits and the fix."""
    empty = [split for split, rows in sizes.items() if rows == 0]
    if not empty:
        return ""
    which = " and ".join(f"the {split} split" for split in empty)
    counts = ", ".join(f"{split} {rows}" for split, rows in sizes.items())
    return (f"{which} {'holds' if len(empty) == 1 else 'hold'} no rows (the data has {sum(sizes.values())} "
            f"rows, hash-split {counts}); give it more rows, or change data.train_buckets / "
            "data.validation_buckets / data.eval_buckets (validation_buckets: 0 drops the validation split)")


class Executor(base_executor.BaseExecutor):
    def Do(self, input_dict: Dict[str, List[types.Artifact]], output_dict: Dict[str, List[types.Artifact]],
           exec_properties: Dict[str, Any]) -> None:
        try:
            self._check(input_dict)
        except DataAnomaliesError:
            # a compiled run stops here: this task tells Prometheus (the local runner does it for a local run)
            if exec_properties.get("pushgateway_url"):
                metric_samples.report_stop(exec_properties, "anomalies", "AnomaliesGate")
            raise

    def _check(self, input_dict: Dict[str, List[types.Artifact]]) -> None:
        for artifact in input_dict.get(STATISTICS_KEY, []):
            message = empty_split_message(split_sizes(artifact))
            if message:
                raise DataAnomaliesError(message)
        found = [a for artifact in input_dict[ANOMALIES_KEY] for a in read_anomalies(artifact)]
        if found:
            raise DataAnomaliesError(
                f"the data violates the schema ({len(found)} anomalies: {'; '.join(found)}); "
                "fix the data, or if the change is expected review and update the schema "
                "(tfxline schema draft --config CONFIG --data DATA --diff, with this run's config and data)")


class AnomaliesGateSpec(types.ComponentSpec):
    # a compiled run's metrics when the gate stops it (components/run_metrics.py); serving_dir: what still serves
    PARAMETERS: Dict[str, Any] = {"serving_dir": ExecutionParameter(type=str, optional=True),
                                  **run_metrics.task_parameters()}
    INPUTS = {ANOMALIES_KEY: ChannelParameter(type=standard_artifacts.ExampleAnomalies),
              STATISTICS_KEY: ChannelParameter(type=standard_artifacts.ExampleStatistics, optional=True)}
    OUTPUTS: Dict[str, Any] = {}


class AnomaliesGate(base_component.BaseComponent):
    SPEC_CLASS = AnomaliesGateSpec
    EXECUTOR_SPEC = executor_spec.ExecutorClassSpec(Executor)

    def __init__(self, anomalies: types.BaseChannel, statistics: Optional[types.BaseChannel] = None,
                 serving_dir: str = "", monitoring: Optional[Dict[str, Any]] = None):
        extra = {"serving_dir": serving_dir, **monitoring} if monitoring else {}
        super().__init__(spec=AnomaliesGateSpec(anomalies=anomalies, statistics=statistics, **extra))
