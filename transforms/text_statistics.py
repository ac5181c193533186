"""TFDV's natural-language statistics of a text input's documents, as the model reads them.

TFDV's ``NLStatsGenerator`` (tensorflow_data_validation/statistics/generators/
natural_language_stats_generator.py) reads a feature whose schema entry has a
``natural_language_domain`` as a *list of tokens* per example: on the raw column, one string a
document, every document would be one token. So the documents are first tokenised by the
Transform's own rules (transforms/text.py: normalised, split, the first ``max_tokens`` kept), each
token outside the model's vocabulary written ``OOV_TOKEN``, which the schema names an
out-of-vocabulary token (``coverage.oov_string_tokens``). TFDV then gives, per column:

- ``nl_statistics`` (a custom statistic): ``feature_coverage``, the share of tokens in the
  vocabulary (1 - the out-of-vocabulary rate), the sequence and token length histograms;
- the string statistics of the tokens: ``top_values`` (the commonest tokens), and the number of
  tokens per document (``common_stats``: average, quantiles, min, max).

The Trainer writes these for the validation rows (held out from the vocabulary, as a new day's
text is) beside the model (``REFERENCE_FILE``, with the columns' settings in ``COLUMNS_FILE``); the
pushed model carries them, and the next runs' DriftGate compares a new day's text with them
(components/text_drift.py). TFDV's in-memory entry point never calls its generators' ``setup()``
(stats_impl.generate_statistics_in_memory at tensorflow-data-validation 1.16.1), which the
NLStatsGenerator needs to read the schema: ``statistics`` calls it.
"""
from __future__ import annotations

import json
import os
from typing import Any, Dict, List, Optional, Sequence, Tuple

OOV_TOKEN = "[UNK]"
REFERENCE_FILE = os.path.join("assets.extra", "text_statistics.pb")
COLUMNS_FILE = os.path.join("assets.extra", "text_statistics.json")
NL_STATISTICS = "nl_statistics"
TOP_TOKENS = 50  # top_values kept per column (what the drift comparator compares)
MAX_DOCUMENTS = 10_000  # documents read for a column's statistics (memory flat in the data's size)


def nl_schema(columns: Sequence[str]):
    """A schema of ``columns`` as token lists with a natural-language domain whose
    out-of-vocabulary token is ``OOV_TOKEN``."""
    from tensorflow_metadata.proto.v0 import schema_pb2

    schema = schema_pb2.Schema()
    for name in columns:
        feature = schema.feature.add(name=name, type=schema_pb2.BYTES)
        feature.natural_language_domain.coverage.oov_string_tokens.append(OOV_TOKEN)
    return schema


def statistics(columns: Dict[str, List[List[str]]]):
    """TFDV's DatasetFeatureStatisticsList of ``columns`` ({column: a token list per document}, all
    of one length), with TFDV's natural-language statistics of each."""
    import pyarrow as pa
    import tensorflow_data_validation as tfdv
    from tensorflow_data_validation.statistics import stats_impl

    names = sorted(columns)
    batch = pa.RecordBatch.from_arrays(
        [pa.array([[t.encode("utf-8") for t in doc] for doc in columns[n]], type=pa.list_(pa.binary()))
         for n in names], names)
    options = tfdv.StatsOptions(schema=nl_schema(names), num_top_values=TOP_TOKENS)
    # in memory, every generator is a combiner (stats_impl.generate_statistics_in_memory casts alike)
    generators: List[Any] = list(stats_impl.get_generators(options, in_memory=True))
    for generator in generators:
        generator.setup()
    partial = stats_impl.generate_partial_statistics_in_memory(batch, options, generators)
    return stats_impl.extract_statistics_output(partial, generators)


def tokens_from_ids(ids, vocabulary: Sequence[str], cap: int) -> List[List[str]]:
    """A token list per document of a Transform ids block ([documents, length]; the first ``cap``
    ids are the tokens in order, ``PAD`` after the last; an id past the vocabulary an
    out-of-vocabulary bucket)."""
    size = len(vocabulary)
    return [[str(vocabulary[i]) if i < size else OOV_TOKEN for i in row[:cap] if i >= 0] for row in ids.tolist()]


def tokens_from_text(documents: Sequence[str], cap: int, vocabulary: set) -> List[List[str]]:
    """A token list per raw document, tokenised by the Transform's rules, at most ``cap`` tokens,
    each outside ``vocabulary`` written ``OOV_TOKEN``."""
    import tensorflow as tf

    from tfxline.transforms import text as text_lib

    out: List[List[str]] = []
    for start in range(0, len(documents), 1024):
        rows = text_lib.tokens(tf.constant(list(documents[start:start + 1024]), tf.string), cap).to_list()
        for row in rows:
            tokens = [t.decode("utf-8", "replace") for t in row]
            out.append([t if t in vocabulary else OOV_TOKEN for t in tokens])
    return out


def figures(stats, column: str) -> Optional[Dict[str, Any]]:
    """{documents, oov_rate, mean_tokens, top_tokens: [[token, count], ...] (in the vocabulary)} of
    ``column`` in a statistics list; None when it has none."""
    from tensorflow_metadata.proto.v0 import statistics_pb2

    for feature in stats.datasets[0].features if stats.datasets else ():
        if (feature.path.step[0] if feature.path.step else feature.name) != column:
            continue
        nl = statistics_pb2.NaturalLanguageStatistics()
        for custom in feature.custom_stats:
            if custom.name == NL_STATISTICS:
                custom.any.Unpack(nl)
        common = feature.string_stats.common_stats
        return {"documents": int(common.num_non_missing), "oov_rate": round(1.0 - nl.feature_coverage, 4),
                "mean_tokens": round(float(common.avg_num_values), 1),
                "top_tokens": [[v.value, int(v.frequency)] for v in feature.string_stats.top_values
                               if v.value != OOV_TOKEN][:12]}
    return None


def write_reference(model_dir: str, columns: Dict[str, List[List[str]]], settings: List[Dict[str, Any]]) -> None:
    """The statistics of the validation rows' text beside the model (``REFERENCE_FILE``) and each
    column's settings ({column, max_tokens, vocabulary: its file in the model's assets})."""
    import tensorflow as tf

    if not columns:
        return
    tf.io.gfile.makedirs(os.path.join(model_dir, os.path.dirname(REFERENCE_FILE)))
    with tf.io.gfile.GFile(os.path.join(model_dir, REFERENCE_FILE), "wb") as f:
        f.write(statistics(columns).SerializeToString())
    with tf.io.gfile.GFile(os.path.join(model_dir, COLUMNS_FILE), "w") as f:
        json.dump({"columns": settings}, f, indent=2, sort_keys=True)


def read_reference(model_dir: str) -> Optional[Tuple[Any, List[Dict[str, Any]]]]:
    """(statistics, columns' settings) written beside a model; None for a model without them (no
    text input, or trained before they were written)."""
    import tensorflow as tf
    from tensorflow_metadata.proto.v0 import statistics_pb2

    path, settings = os.path.join(model_dir, REFERENCE_FILE), os.path.join(model_dir, COLUMNS_FILE)
    if not (tf.io.gfile.exists(path) and tf.io.gfile.exists(settings)):
        return None
    stats = statistics_pb2.DatasetFeatureStatisticsList()
    with tf.io.gfile.GFile(path, "rb") as f:
        stats.ParseFromString(f.read())
    with tf.io.gfile.GFile(settings) as f:
        return stats, json.load(f)["columns"]


def read_vocabulary(model_dir: str, name: str) -> Optional[set]:
    """The tokens and n-grams of a model's vocabulary asset ``name`` (a tft vocabulary file in its
    ``assets``); None when the file is not there."""
    import tensorflow as tf

    path = os.path.join(model_dir, "assets", name)
    if not name or not tf.io.gfile.exists(path):
        return None
    with tf.io.gfile.GFile(path, "rb") as f:
        return {line.rstrip(b"\n").decode("utf-8", "replace") for line in f}
