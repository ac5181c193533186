"""The model's inputs and head as the spec and the Transform output size them (the Trainer's
and the trees' side read them alike: trainer/run.py, trainer/trees_run.py)."""
from __future__ import annotations

from typing import List

import tensorflow as tf

from tfxline import task_types
from tfxline.trainer import data
from tfxline.trainer import model as model_lib
from tfxline.transforms import features as F
from tfxline.transforms import text as text_lib


def model_inputs(spec: F.FeatureSpec, tf_transform_output) -> List[model_lib.ModelInput]:
    """Model inputs with their cardinalities, from the spec and the Transform output."""
    inputs = []
    for f in spec.inputs:
        name = F.transformed_name(f.name)
        if f.is_text and tf_transform_output.transformed_feature_spec()[name].dtype == tf.string:
            inputs.append(model_lib.ModelInput(name, raw_text=True))  # the text itself (a pretrained encoder)
            continue
        if f.is_text:  # [length] n-gram ids (transforms/text.py)
            vocab = tf_transform_output.vocabulary_size_by_name(F.vocabulary_name(f.name))
            inputs.append(model_lib.ModelInput(name, text_lib.cardinality(f, vocab), text_lib.length(f),
                                               text_lib.setting(f, "max_tokens")))
            continue
        if not f.is_categorical:
            inputs.append(model_lib.ModelInput(name))
            continue
        vocab = (tf_transform_output.vocabulary_size_by_name(F.vocabulary_name(f.name))
                 if f.transform == "vocabulary" else None)
        inputs.append(model_lib.ModelInput(name, F.categorical_cardinality(f, vocab)))
    inputs += [model_lib.ModelInput(F.transformed_name(c.name), c.hash_buckets) for c in spec.crosses]
    return inputs


def make_head(spec: F.FeatureSpec, tf_transform_output, train_files=()) -> model_lib.Head:
    """The task's head, as its task type sizes it: e.g. a multi-class head by the label
    vocabulary, a regression head at the train split's label scale (mean and standard
    deviation), so the network learns a standardised target whatever the label's unit, and
    bounded to the split's label range (min and max, widened)."""
    def label_moments():
        return data.label_moments(train_files, spec.label.name, data.transformed_decoder(tf_transform_output))

    fields = task_types.get(spec.task).head_fields(
        lambda: tf_transform_output.vocabulary_size_by_name(F.LABEL_VOCABULARY),
        label_moments if train_files else None)
    return model_lib.Head(spec.task, **fields)
