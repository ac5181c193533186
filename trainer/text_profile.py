"""What a text input's documents look like to the model, on the validation rows (the first
``MAX_DOCUMENTS``; held out from the vocabulary, as a new day's text is): their length in tokens
(quantiles, and the share cut at ``max_tokens``), the out-of-vocabulary rate of their tokens, and
their commonest tokens. Read off the Transform's ids block (transforms/text.py: the first
``max_tokens`` ids are the document's tokens in order, ids at or past the vocabulary's size its
out-of-vocabulary buckets), so it is what the model read, not a second tokenisation. Recorded in
training_run.json and shown per text column in the run report; TFDV's statistics of the same
documents are written beside the model (``write_statistics``), for the drift check of later runs."""
from __future__ import annotations

import os
from typing import Any, Dict, List

import numpy as np

from tfxline.transforms import features as F
from tfxline.transforms import text as text_lib
from tfxline.transforms import text_statistics

TOP = 12
QUANTILES = (0.1, 0.5, 0.9)
MAX_DOCUMENTS = 10_000  # validation documents read (a large split's ids would not fit memory whole)


def validation_ids(validation, steps: int, spec: F.FeatureSpec) -> Dict[str, np.ndarray]:
    """The first ``MAX_DOCUMENTS`` of the validation batches' text ids ({transformed name: ids},
    only those columns read); {} for a model without text, or whose text is raw (a pretrained encoder)."""
    names = [F.transformed_name(f.name) for f in spec.text_inputs]
    chunks: Dict[str, List[np.ndarray]] = {n: [] for n in names}
    read = 0
    for features, _ in validation.take(steps) if names else ():
        if any(np.asarray(features[n]).ndim != 2 for n in names):
            return {}  # raw text, no ids to read
        for n in names:
            chunks[n].append(np.asarray(features[n]))
        read += len(chunks[names[0]][-1])
        if read >= MAX_DOCUMENTS:
            break
    return {n: np.concatenate(v)[:MAX_DOCUMENTS] for n, v in chunks.items()} if read else {}


def vocabulary(tf_transform_output, feature: Any) -> List[str]:
    """A text input's vocabulary (tft's file: its n-grams, commonest first) as text."""
    return [v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v)
            for v in tf_transform_output.vocabulary_by_name(F.vocabulary_name(feature.name))]


def write_statistics(model_dir: str, columns: Dict[str, np.ndarray], tf_transform_output,
                     spec: F.FeatureSpec) -> None:
    """TFDV's natural-language statistics of each text input's validation documents beside the
    model (transforms/text_statistics.py), the reference of the next runs' text drift check."""
    tokens, settings = {}, []
    for feature in spec.text_inputs:
        ids = columns.get(F.transformed_name(feature.name))
        if ids is None or ids.ndim != 2 or not len(ids):
            continue
        cap = text_lib.setting(feature, "max_tokens")
        tokens[feature.source] = text_statistics.tokens_from_ids(ids, vocabulary(tf_transform_output, feature), cap)
        file = tf_transform_output.vocabulary_file_by_name(F.vocabulary_name(feature.name))
        settings.append({"column": feature.source, "max_tokens": cap, "vocabulary": os.path.basename(file)})
    text_statistics.write_reference(model_dir, tokens, settings)


def text_profiles(columns: Dict[str, np.ndarray], tf_transform_output, spec: F.FeatureSpec) -> List[Dict[str, Any]]:
    """[{column, documents, tokens: {p10, p50, p90, max}, at_cap, cap, oov_rate, empty, top_tokens:
    [[token, share of tokens], ...]}] for each text input, from ``columns`` (the validation rows'
    transformed features, as validation_ids reads them); [] for a model without text."""
    out = []
    for feature in spec.text_inputs:
        ids = columns.get(F.transformed_name(feature.name))
        if ids is None or ids.ndim != 2 or not len(ids):
            continue
        out.append(profile(ids, vocabulary(tf_transform_output, feature), feature))
    return out


def profile(ids: np.ndarray, vocabulary: List[str], feature: Any) -> Dict[str, Any]:
    """One text input's profile from its [documents, length] ids block and its vocabulary."""
    cap = text_lib.setting(feature, "max_tokens")
    tokens = ids[:, :cap]
    present = tokens >= 0
    lengths = present.sum(axis=1)
    seen = tokens[present]
    known = seen[seen < len(vocabulary)]
    counts = np.bincount(known, minlength=len(vocabulary)) if len(known) else np.zeros(len(vocabulary), int)
    top = [i for i in np.argsort(-counts, kind="stable")[:TOP] if counts[i]]
    total = max(int(seen.size), 1)
    return {
        "column": feature.source, "documents": int(len(ids)), "cap": cap,
        "tokens": {**{f"p{int(q * 100)}": round(float(np.quantile(lengths, q)), 1) for q in QUANTILES},
                   "max": int(lengths.max())},
        "at_cap": float(np.mean(lengths >= cap)),  # cut at max_tokens (or exactly that long)
        "empty": float(np.mean(lengths == 0)),
        "oov_rate": float((seen.size - known.size) / total) if seen.size else 0.0,
        "top_tokens": [[vocabulary[i], float(counts[i] / total)] for i in top],
    }
