"""The Data section: per-feature statistics (StatisticsGen), anomalies (ExampleValidator)
and the schema in use, read through TFX's artifact utilities and TFDV."""
from __future__ import annotations

import os
from typing import Any, Dict

from tfxline.components.anomalies_gate import anomaly_records
from tfxline.pipeline.data import source as data_source
from tfxline.runs.report.artifacts import RunArtifacts
from tfxline.runs.report.clipping import clipped_counts

SCHEMA_FILE = "schema.pbtxt"
TOP_VALUES = 3


def data_section(run: RunArtifacts) -> Dict[str, Any]:
    schema = run.artifact("ImportSchemaGen", "schema") or run.artifact("SchemaGen", "schema")
    section = statistics_section(run.artifact("StatisticsGen", "statistics"), schema,
                                 run.artifact("ExampleValidator", "anomalies"))
    section["clipped"] = clipped_counts(run)  # inputs outside the range the Transform learnt
    return section


def statistics_section(stats, schema=None, anomalies=None) -> Dict[str, Any]:
    """The section from the artifacts themselves (TFX Artifacts, each may be None): a
    StatisticsGen's statistics, a schema, ExampleValidator's anomalies. A notebook that runs
    components one at a time shows it with ``render.fragment({"data": ...}, ["data"])``."""
    section: Dict[str, Any] = {"splits": [], "examples": {}, "features": [], "anomalies": [], "schema_path": "",
                               "schema_text": "", "available": stats is not None, "validated": anomalies is not None}
    if schema is not None:
        from google.protobuf import text_format

        section["schema_path"] = os.path.join(schema.uri, SCHEMA_FILE)
        section["schema_text"] = text_format.MessageToString(data_source.load_schema(section["schema_path"]))
    if anomalies is not None:
        section["anomalies"] = anomaly_records(anomalies)
    if stats is None:
        return section
    from tfx.components.statistics_gen import stats_artifact_utils
    from tfx.types import artifact_utils

    splits = artifact_utils.decode_split_names(stats.split_names)
    section["splits"] = splits
    by_feature: Dict[str, Dict[str, Any]] = {}
    for split in splits:
        dataset = stats_artifact_utils.load_statistics(stats, split).proto().datasets[0]
        section["examples"][split] = int(dataset.num_examples)
        for feature in dataset.features:
            name = feature.path.step[0] if feature.path.step else feature.name
            entry = by_feature.setdefault(name, {"name": name, "splits": {}})
            entry["splits"][split] = feature_stats(feature, dataset.num_examples)
            entry["type"] = entry["splits"][split]["type"]
    flagged = {a["feature"] for a in section["anomalies"]}
    for name in sorted(by_feature):
        by_feature[name]["anomalous"] = name in flagged
        section["features"].append(by_feature[name])
    return section


def feature_stats(feature, num_examples: int) -> Dict[str, Any]:
    """count / missing % and min-mean-max or top values, and a histogram, for one split.

    Missing counts the examples without a value: absent, or present with no value (how
    CsvExampleGen writes an empty CSV cell), so ``count`` is the examples with a value.
    """
    from tensorflow_metadata.proto.v0 import statistics_pb2

    kind = feature.WhichOneof("stats")
    common = getattr(feature, kind).common_stats if kind in ("num_stats", "string_stats") else None
    with_value = examples_with_a_value(common) if common is not None else 0
    out: Dict[str, Any] = {
        "type": statistics_pb2.FeatureNameStatistics.Type.Name(feature.type).lower(),
        "count": int(with_value),
        "missing_pct": round(100.0 * (num_examples - with_value) / num_examples, 2) if num_examples else 0.0,
        "histogram": [],
    }
    if kind == "num_stats":
        s = feature.num_stats
        out.update(min=s.min, mean=s.mean, max=s.max)
        standard = [h for h in s.histograms if h.type == statistics_pb2.Histogram.STANDARD]
        if standard:
            out["histogram"] = [{"low": b.low_value, "high": b.high_value, "count": b.sample_count}
                                for b in standard[0].buckets]
    elif kind == "string_stats":
        s = feature.string_stats
        out["unique"] = s.unique
        out["top_values"] = [{"value": v.value, "count": v.frequency} for v in s.top_values[:TOP_VALUES]]
        out["histogram"] = [{"label": b.label, "count": b.sample_count}
                            for b in s.rank_histogram.buckets[:20]]
    return out


def examples_with_a_value(common) -> int:
    """TFDV counts a feature present with an empty value list as not missing. For a feature
    with at most one value per example (every CSV column) the examples with a value are
    exactly ``tot_num_values``; for multi-valued features, the examples where it is present."""
    if common.max_num_values <= 1:
        return int(common.tot_num_values)
    return int(common.num_non_missing)
