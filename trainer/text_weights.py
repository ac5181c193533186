"""The n-grams a bag encoder leans on: its linear part's weight per n-gram (trainer/text.py's
``{feature}_linear`` table) read back with the Transform's vocabulary, the largest toward each
class (binary: toward the positive class and away from it). Recorded in training_run.json and shown
in the run report, so a user sees what the model reads in the text ("not good", "refund", a
signature line that gives the label away)."""
from __future__ import annotations

from typing import Any, Dict, List

import numpy as np

from tfxline.transforms import features as F

TOP = 8


def leaned_on_ngrams(model, tf_transform_output, spec: F.FeatureSpec) -> List[Dict[str, Any]]:
    """[{column, toward: {class: [n-gram, ...]}}] for each text input whose encoder has linear
    weights (the bag); [] for none."""
    out = []
    layers = {layer.name: layer for layer in model.layers}
    for feature in spec.text_inputs:
        layer = layers.get(f"{F.transformed_name(feature.name)}_linear")
        if layer is None:  # the transformer has no per-n-gram weight
            continue
        weights = np.asarray(layer.get_weights()[0])  # [vocabulary + OOV buckets, units]
        vocabulary = [v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v)
                      for v in tf_transform_output.vocabulary_by_name(F.vocabulary_name(feature.name))]
        weights = weights[:len(vocabulary)]  # the out-of-vocabulary buckets name no n-gram
        out.append({"column": feature.source, "toward": toward(weights, vocabulary, classes(tf_transform_output,
                                                                                           spec, weights.shape[1]))})
    return out


def classes(tf_transform_output, spec: F.FeatureSpec, units: int) -> List[str]:
    """The names of the weights' columns: the classes (multi-class), or the positive class and its
    opposite (binary: one logit)."""
    if units == 1:
        positive = spec.label.positive if spec.label.positive is not None else "1"
        return [str(positive), f"not {positive}"]
    return [v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v)
            for v in tf_transform_output.vocabulary_by_name(F.LABEL_VOCABULARY)][:units]


def toward(weights: np.ndarray, vocabulary: List[str], names: List[str]) -> Dict[str, List[str]]:
    """{class: the TOP n-grams whose weight pushes most toward it}. One logit: its largest weights
    toward the first name, its most negative toward the second."""
    if weights.shape[1] == 1:
        w = weights[:, 0]
        return {names[0]: [vocabulary[i] for i in np.argsort(-w)[:TOP] if w[i] > 0],
                names[1]: [vocabulary[i] for i in np.argsort(w)[:TOP] if w[i] < 0]}
    # a class's own weight against the mean of the others': what tells it apart
    relative = weights - weights.mean(axis=1, keepdims=True)
    return {name: [vocabulary[i] for i in np.argsort(-relative[:, c])[:TOP] if relative[i, c] > 0]
            for c, name in enumerate(names)}
