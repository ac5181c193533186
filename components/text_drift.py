"""The DriftGate's check of free text: a new day's documents against the serving model's.

A text column is one document per row, so its values have no distribution to compare; its tokens
have. The serving model carries TFDV's natural-language statistics of its validation documents as
it read them (transforms/text_statistics.py, written by the Trainer). The new span's train split
(its first ``MAX_DOCUMENTS`` documents) is tokenised by the same rules, capped at the serving
model's ``max_tokens``, each token outside the serving model's vocabulary written ``[UNK]``, and
profiled by TFDV the same way. Three measures per column, each against its threshold:

- the **tokens' distribution**: TFDV's L-infinity comparator (``drift_comparator.infinity_norm``,
  the one categorical columns use) on the tokens' top values, ``[UNK]`` among them;
- the **out-of-vocabulary rate** (1 - TFDV's ``feature_coverage``): its rise over the reference's;
- the **length**: the mean tokens per document, as a ratio either way.

Thresholds: ``drift.text_token_threshold``, ``drift.text_oov_rise``, ``drift.text_length_ratio``;
``drift.features.<column>`` replaces the first for one column, and 0 there turns the column's text
checks off. Measured on public reviews (docs/text.md): two halves of one table differ by L-infinity
0.001, a holdout by 0.012 (out-of-vocabulary 0.03 against 0.02); tweets against reviews 0.18, an
out-of-vocabulary rate of 0.20 against 0.03 and 24 tokens a document against 80.
"""
from __future__ import annotations

import os
from typing import Any, Dict, List, Tuple

from tfx.dsl.io import fileio
from tfx.types import artifact_utils

from tfxline.components.anomalies_files import DRIFT_SPLIT
from tfxline.transforms import text_statistics as stats_lib

TEXT_DRIFT_PREFIX = "text_"  # the drift section's keys of this check (a pipeline without text has none)


def read_documents(examples, columns: List[str], limit: int = stats_lib.MAX_DOCUMENTS) -> Dict[str, List[str]]:
    """The first ``limit`` documents of each of ``columns`` in the examples' train split (a row
    without the column an empty document)."""
    import tensorflow as tf

    split = artifact_utils.get_split_uri([examples], DRIFT_SPLIT)
    files = sorted(os.fsdecode(f) for f in fileio.glob(os.path.join(split, "*")))
    out: Dict[str, List[str]] = {c: [] for c in columns}
    if not files:
        return out
    records = tf.data.TFRecordDataset(files, compression_type="GZIP" if files[0].endswith(".gz") else "")
    for record in records.take(limit).as_numpy_iterator():
        feature = tf.train.Example.FromString(record).features.feature
        for column in columns:
            values = feature[column].bytes_list.value if column in feature else []
            out[column].append(values[0].decode("utf-8", "replace") if values else "")
    return out


def comparator_schema(thresholds: Dict[str, float]):
    """The token lists' schema with TFDV's L-infinity comparator on each column at its threshold."""
    schema = stats_lib.nl_schema(sorted(thresholds))
    for feature in schema.feature:
        feature.drift_comparator.infinity_norm.threshold = thresholds[feature.name]
    return schema


def token_threshold(column: str, thresholds: Dict[str, Any]) -> float:
    """A text column's L-infinity threshold: its ``drift.features`` entry, or the text default."""
    return float(thresholds.get("features", {}).get(column, thresholds["text_token_threshold"]))


def compare(examples, model_dir: str, versus: str,
            thresholds: Dict[str, Any]) -> Tuple[Any, List[str], List[str], List[str]]:
    """(TFDV's anomalies of the tokens' comparator, the out-of-vocabulary and length lines over their
    thresholds, the columns compared, the columns whose check is off: drift.features.<column>: 0) of
    the new span's text against the model in ``model_dir``; nothing compared for a model without
    text statistics or a column today's data lacks."""
    import tensorflow_data_validation as tfdv
    from tensorflow_metadata.proto.v0 import anomalies_pb2

    # no text in this pipeline (no text_* keys), or a serving model without text statistics
    reference = stats_lib.read_reference(model_dir) if model_dir and "text_token_threshold" in thresholds else None
    anomalies = anomalies_pb2.Anomalies()
    if reference is None:
        return anomalies, [], [], []
    ref_stats, settings = reference
    off = sorted(s["column"] for s in settings if token_threshold(s["column"], thresholds) <= 0)
    settings = [s for s in settings if s["column"] not in off]
    docs = read_documents(examples, [s["column"] for s in settings])
    tokens: Dict[str, List[List[str]]] = {}
    for s in settings:
        vocabulary = stats_lib.read_vocabulary(model_dir, s["vocabulary"])
        if vocabulary is not None and any(docs[s["column"]]):
            tokens[s["column"]] = stats_lib.tokens_from_text(docs[s["column"]], int(s["max_tokens"]), vocabulary)
    if not tokens:
        return anomalies, [], [], off
    new_stats = stats_lib.statistics(tokens)
    limits = {c: token_threshold(c, thresholds) for c in tokens}
    anomalies = tfdv.validate_statistics(new_stats, comparator_schema(limits), previous_statistics=ref_stats)
    lines = []
    for column in sorted(tokens):
        new, ref = stats_lib.figures(new_stats, column), stats_lib.figures(ref_stats, column)
        if not (new and ref):
            continue
        rise = new["oov_rate"] - ref["oov_rate"]
        if rise > thresholds["text_oov_rise"]:
            lines.append(f"{column}: out-of-vocabulary rate {new['oov_rate']:.3g} vs {ref['oov_rate']:.3g} in "
                         f"{versus} (a rise of {rise:.3g} > {thresholds['text_oov_rise']:g})")
        ratio = max(new["mean_tokens"], 0.1) / max(ref["mean_tokens"], 0.1)
        if max(ratio, 1 / ratio) > thresholds["text_length_ratio"]:
            lines.append(f"{column}: {new['mean_tokens']:g} tokens a document vs {ref['mean_tokens']:g} in {versus} "
                         f"(x{ratio:.3g}, beyond x{thresholds['text_length_ratio']:g} either way)")
    return anomalies, lines, sorted(tokens), off
