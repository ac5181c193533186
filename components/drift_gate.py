"""DriftGate: stop the run before training when the new data's distribution has moved away
from the previous span's data (drift) or from the data the serving model was trained on.

TFDV's own comparators do the measuring (no hand-written distance): each checked feature
gets a ``drift_comparator`` in a copy of the schema (Jensen-Shannon divergence for numeric
features, L-infinity distance for categorical ones), and ``tfdv.validate_statistics``
compares the new train split's statistics with each reference's train split:
  - the previous span: the newest span below this one in the span ledger
    (``<pipeline root>/spans/<span>.json``, one record per span this gate has seen: span,
    version, statistics and examples URIs);
  - the serving model's training data: the Pusher records its statistics URI in the
    version's ``push_metadata.json``.
Free text is compared by its tokens with the serving model's text (components/text_drift.py).
Each feature over its threshold is named in the one-line error, with the distance, the
reference and the threshold, e.g. ``fare: Jensen-Shannon divergence 0.93 vs the previous
span (span 2) > 0.2``.

No previous span and nothing serving (the first run), or reference statistics that are gone:
nothing to compare with; the gate passes and says so in its output's ``compared_with``
property. Like the baseline, the references are found in files (the ledger, the serving
directory), so the gate is a plain container component on every orchestrator. Transform
runs after it (``add_upstream_node``).
"""
from __future__ import annotations

import json
import os
import uuid
from typing import Any, Dict, List, Optional, Sequence, Tuple

from absl import logging
from tfx import types
from tfx.dsl.components.base import base_component, base_executor, executor_spec
from tfx.dsl.io import fileio
from tfx.types import artifact_utils, standard_artifacts
from tfx.types.component_spec import ChannelParameter, ExecutionParameter
from tfx.utils import io_utils

from tfxline.components import metric_samples, run_metrics, text_drift
from tfxline.components.anomalies_files import ANOMALIES_FILE, DRIFT_SPLIT
from tfxline.components.anomalies_gate import DataAnomaliesError
from tfxline.components.spans import span_of, version_of
from tfxline.serving import push as serving_push
from tfxline.serving import release as serving_release

STATISTICS_KEY, SCHEMA_KEY, EXAMPLES_KEY, DRIFT_KEY = "statistics", "schema", "examples", "drift_anomalies"
SPAN_LEDGER = "spans"  # below the pipeline root
TEXT_KEYS = ", drift.text_token_threshold, drift.text_oov_rise, drift.text_length_ratio"
MEASURE_NAMES = {"JENSEN_SHANNON_DIVERGENCE": "Jensen-Shannon divergence", "L_INFTY": "L-infinity distance"}


class DataDriftError(DataAnomaliesError):
    """The new data drifted from the serving model's training data beyond a threshold.
    ``drift_samples``: the measurements as run metrics (components/run_metrics.py), carried
    here because TFX deletes a failed execution's outputs, the DriftGate's anomalies file too."""

    def __init__(self, message: str, drift_samples: Sequence[Any] = ()):
        super().__init__(message)
        self.drift_samples = list(drift_samples)


def serving_reference(serving_dir: str) -> Tuple[str, str, str]:
    """(statistics URI of the serving model's training data, 'serving version N', the serving
    model's directory: its text statistics are in it); all empty when nothing is serving, the URI
    when the version did not record its statistics."""
    version = serving_release.serving_version(serving_dir)  # the stable label, or the highest version
    if version is None:
        return "", "", ""
    meta = serving_push.read_metadata(serving_dir, version)
    return (meta.get("data", {}).get("statistics_uri", ""), f"serving version {version}",
            serving_push.version_dir(serving_dir, version))


def record_span(ledger: str, examples, statistics_uri: str, run_id: str) -> None:
    """The span ledger's record of this span (written atomically; a new version replaces it)."""
    fileio.makedirs(ledger)
    span = span_of(examples)
    record = {"span": span, "version": version_of(examples), "examples_uri": examples.uri,
              "statistics_uri": statistics_uri, "pipeline_run_id": run_id}
    path = f"{ledger.rstrip('/')}/{span}.json"
    partial = f"{path}.{uuid.uuid4().hex}.partial"  # its own: runs on a shared store may record a span at once
    io_utils.write_string_file(partial, json.dumps(record, indent=2, sort_keys=True))
    try:
        fileio.rename(partial, path, overwrite=True)
    except Exception:
        fileio.remove(partial)
        raise


def previous_span(ledger: str, span: int) -> Dict[str, Any]:
    """The ledger's record of the newest span below ``span`` ({} when there is none)."""
    if not fileio.isdir(ledger):
        return {}
    spans = sorted(int(name[:-5]) for name in map(os.fsdecode, fileio.listdir(ledger))
                   if name.endswith(".json") and name[:-5].isdigit() and int(name[:-5]) < span)
    if not spans:
        return {}
    return json.loads(io_utils.read_string_file(f"{ledger.rstrip('/')}/{spans[-1]}.json"))


def drift_schema(schema, thresholds: Dict[str, Any]):
    """A copy of the schema with a drift comparator on each checked feature."""
    from tensorflow_metadata.proto.v0 import schema_pb2

    out = schema_pb2.Schema()
    out.CopyFrom(schema)
    per_feature = thresholds.get("features", {})
    for feature in out.feature:
        if feature.name not in thresholds["columns"]:
            continue
        limit = per_feature.get(feature.name)
        categorical = feature.type == schema_pb2.BYTES or feature.int_domain.is_categorical
        if limit is None:
            limit = thresholds["categorical_threshold"] if categorical else thresholds["numeric_threshold"]
        if limit <= 0:
            continue  # 0 turns this feature's check off
        if categorical:
            feature.drift_comparator.infinity_norm.threshold = limit
        else:
            jsd = feature.drift_comparator.jensen_shannon_divergence
            jsd.threshold = limit
            jsd.source.type = jsd.source.QUANTILES  # robust to outliers (equal-width bins are not)
    return out


def drifted_features(anomalies, versus: str = "", of: str = "") -> List[str]:
    """'feature[of]: <measure> <value> [vs <reference>] > <threshold>' for each drift measurement
    over its threshold (``of``: what of the feature was measured, "'s tokens")."""
    from tensorflow_metadata.proto.v0 import anomalies_pb2

    measure = anomalies_pb2.DriftSkewInfo.Measurement.Type.Name
    vs = f" vs {versus}" if versus else ""
    found = [f"{'.'.join(info.path.step)}{of}: {MEASURE_NAMES.get(measure(m.type), measure(m.type))} "
             f"{m.value:.3g}{vs} > {m.threshold:g}"
             for info in anomalies.drift_skew_info for m in info.drift_measurements if m.value > m.threshold]
    if not found:  # a TFDV without measurements: the comparator anomalies' descriptions
        reason = anomalies_pb2.AnomalyInfo.Type.Name
        found = [f"{name}{of}: {info.short_description or info.description}{vs}"
                 for name, info in sorted(anomalies.anomaly_info.items())
                 if any(reason(r.type).startswith("COMPARATOR_") for r in info.reason)]
    return found


def load_split_statistics(uri: str):
    from tfx.components.statistics_gen import stats_artifact_utils

    artifact = standard_artifacts.ExampleStatistics()
    artifact.uri = uri
    artifact.split_names = artifact_utils.encode_split_names([DRIFT_SPLIT])
    return stats_artifact_utils.load_statistics(artifact, DRIFT_SPLIT).proto()


class Executor(base_executor.BaseExecutor):
    def Do(self, input_dict: Dict[str, List[types.Artifact]], output_dict: Dict[str, List[types.Artifact]],
           exec_properties: Dict[str, Any]) -> None:
        import tensorflow_data_validation as tfdv
        from tensorflow_metadata.proto.v0 import anomalies_pb2

        out = output_dict[DRIFT_KEY][0]
        out.split_names = artifact_utils.encode_split_names([DRIFT_SPLIT])
        thresholds = json.loads(exec_properties["thresholds"])
        new = artifact_utils.get_single_instance(input_dict[STATISTICS_KEY])
        examples = artifact_utils.get_single_instance(input_dict[EXAMPLES_KEY])
        ledger = exec_properties["span_ledger"]
        previous = previous_span(ledger, span_of(examples))
        record_span(ledger, examples, new.uri, getattr(self._context, "pipeline_run_id", None) or "")

        references: List[Tuple[str, str]] = []  # (what, statistics URI)
        if previous and fileio.exists(previous.get("statistics_uri", "")):
            references.append((f"the previous span (span {previous['span']})", previous["statistics_uri"]))
        serving_uri, serving, serving_model = serving_reference(exec_properties["serving_dir"])
        serving_ok = bool(serving_uri) and fileio.exists(serving_uri)
        if serving_ok and serving_uri not in {uri for _, uri in references}:
            references.append((f"{serving}'s training data", serving_uri))
        anomalies = anomalies_pb2.Anomalies()
        drifted: List[str] = []
        text_drifted: List[str] = []
        if not thresholds.get("enabled", True):
            compared_with = "not checked: drift.enabled is false"
        else:
            compared = [what for what, _ in references]
            if references:
                schema = drift_schema(io_utils.SchemaReader().read(io_utils.get_only_uri_in_dir(
                    artifact_utils.get_single_uri(input_dict[SCHEMA_KEY]))), thresholds)
                statistics = load_split_statistics(new.uri)
                for what, uri in references:
                    found = tfdv.validate_statistics(statistics, schema,
                                                     previous_statistics=load_split_statistics(uri))
                    drifted += drifted_features(found, versus=what)
                    anomalies.MergeFrom(found)
            # free text: its tokens against the serving model's (its statistics travel with the model)
            versus = f"{serving}'s training data"
            found, lines, text_columns, text_off = text_drift.compare(examples, serving_model, versus, thresholds)
            text_drifted = drifted_features(found, versus=versus, of="'s tokens") + lines
            anomalies.MergeFrom(found)
            if text_columns:
                compared.append(f"{serving}'s text ({', '.join(text_columns)})")
            compared_with = " and ".join(compared) or "nothing to compare with: " + (
                "nothing serving yet" if not serving else f"the statistics of {serving}'s training data are gone")
            if text_off:
                compared_with += f"; text not checked: {', '.join(text_off)} (drift.features.<column>: 0)"
        drifted += text_drifted
        logging.info("drift: compared with %s", compared_with)
        out.set_string_custom_property("compared_with", compared_with)
        split_dir = artifact_utils.get_split_uri([out], DRIFT_SPLIT)
        fileio.makedirs(split_dir)
        io_utils.write_bytes_file(os.path.join(split_dir, ANOMALIES_FILE), anomalies.SerializeToString())
        out.set_int_custom_property("drifted", len(drifted))
        if drifted:
            # Data without spans is all span 0 (as the run summary reads it): no span to name.
            which = f"the data of span {span_of(examples)}" if span_of(examples) else "the new data"
            scores = metric_samples.drift_samples_of(anomalies)
            if exec_properties.get("pushgateway_url"):  # a compiled run stops here: this task tells Prometheus
                metric_samples.report_stop(exec_properties, "drift", "DriftGate", scores)
            raise DataDriftError(
                f"{which} drifted ({'; '.join(drifted)}); if the change is expected, "
                "raise the threshold (drift.features.<name>, drift.numeric_threshold, drift.categorical_threshold"
                f"{TEXT_KEYS if text_drifted else ''}) or skip the check for this run (--set drift.enabled=false)",
                drift_samples=scores)


class DriftGateSpec(types.ComponentSpec):
    PARAMETERS = {"serving_dir": ExecutionParameter(type=str), "span_ledger": ExecutionParameter(type=str),
                  "thresholds": ExecutionParameter(type=str),
                  # a compiled run's metrics when the gate stops it (components/run_metrics.py)
                  **run_metrics.task_parameters()}
    INPUTS = {STATISTICS_KEY: ChannelParameter(type=standard_artifacts.ExampleStatistics),
              SCHEMA_KEY: ChannelParameter(type=standard_artifacts.Schema),
              EXAMPLES_KEY: ChannelParameter(type=standard_artifacts.Examples)}
    OUTPUTS = {DRIFT_KEY: ChannelParameter(type=standard_artifacts.ExampleAnomalies)}


class DriftGate(base_component.BaseComponent):
    SPEC_CLASS = DriftGateSpec
    EXECUTOR_SPEC = executor_spec.ExecutorClassSpec(Executor)

    def __init__(self, statistics: types.BaseChannel, schema: types.BaseChannel, examples: types.BaseChannel,
                 serving_dir: str, span_ledger: str, thresholds: Dict[str, Any],
                 monitoring: Optional[Dict[str, Any]] = None):
        super().__init__(spec=DriftGateSpec(
            statistics=statistics, schema=schema, examples=examples, serving_dir=serving_dir,
            span_ledger=span_ledger,
            thresholds=json.dumps(thresholds, sort_keys=True), **(monitoring or {}),
            drift_anomalies=types.Channel(type=standard_artifacts.ExampleAnomalies)))
