"""Training/serving skew, on the shared run: the features the Trainer computes from the raw
examples (trainer/data.py: every column, the label's too, through the Transform graph) equal
the features the exported model computes at serving time (the Transform layer inside the
SavedModel, fed raw examples without the label columns, as a client sends them), row for row
over the whole split the Trainer validated on.
"""
import glob
import os

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_transform as tft

from tfxline.trainer import data
from tfxline.transforms import features as F

pytestmark = pytest.mark.e2e


def records(uri, split):
    files = glob.glob(os.path.join(uri, f"Split-{split}", "*"))
    assert files, f"no {split} split under {uri}"
    return tf.constant([r.numpy() for r in tf.data.TFRecordDataset(files, compression_type="GZIP")])


def matrix(columns, names):
    """Rows as a float matrix, columns in ``names`` order."""
    return np.stack([np.asarray(columns[n], dtype=np.float64).reshape(-1) for n in names], axis=1)


def test_the_trainers_features_equal_the_serving_transform(pipeline_run):
    cfg, summary, _ = pipeline_run
    spec = cfg.features
    transform = summary.component("Transform").outputs
    tf_transform_output = tft.TFTransformOutput(transform["transform_graph"][0])
    names = list(spec.model_feature_names)

    # Training side: what the Trainer reads, the raw records through its decoder.
    split = cfg.data.trainer_eval_split
    raw_uri = summary.component("CsvExampleGen").outputs["examples"][0]
    serialized = records(raw_uri, split)
    trained = data.transformed_decoder(tf_transform_output)(serialized)
    assert spec.label.name in trained

    # Serving side: the same raw examples, label columns dropped as a client would, through
    # the Transform layer that serving_default calls inside the exported model.
    raw_spec = tf_transform_output.raw_feature_spec()
    serving_spec = {k: raw_spec[k] for k in spec.serving_columns}
    label_only = set(spec.label.source_columns) - set(spec.serving_columns)
    assert label_only and not label_only & set(serving_spec)  # e.g. tips: never sent to serving
    raw = tf.io.parse_example(serialized, serving_spec)
    model = tf.saved_model.load(summary.model_uri + "/Format-Serving")
    served = model.tft_layer(raw)

    assert set(names) <= set(served), "the serving transform lacks model features"
    assert spec.label.name not in served
    expected, actual = matrix(trained, names), matrix(served, names)
    assert expected.shape == actual.shape and expected.shape[0] > 100
    np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-5)
    # Sanity: the comparison covers every kind of transform in the spec.
    kinds = {f.transform for f in spec.inputs}
    assert {"log_zscore", "vocabulary", "bucketize", "identity"} <= kinds and spec.crosses
    assert any(f.column for f in spec.inputs)  # and a column that feeds two features
    assert F.transformed_name(spec.crosses[0].name) in names


def test_transformed_sample_is_what_the_trainer_reads(pipeline_run):
    """trainer.data.transformed_sample (what the notebooks show): the first raw rows of a split and
    the same rows through the Trainer's decoder, column by column, one Python value per row; a
    row without a value is None."""
    _, summary, _ = pipeline_run
    graph = summary.component("Transform").outputs["transform_graph"][0]
    raw_uri = summary.component("CsvExampleGen").outputs["examples"][0]
    raw, transformed = data.transformed_sample(graph, [os.path.join(raw_uri, "Split-train", "*")], rows=50)
    expected = data.transformed_decoder(tft.TFTransformOutput(graph))(records(raw_uri, "train")[:50])
    assert set(transformed) == set(expected)
    for name, values in transformed.items():
        assert len(values) == 50
        np.testing.assert_allclose(np.asarray(values, dtype=np.float64),
                                   expected[name].numpy().reshape(50).astype(np.float64), err_msg=name)
    assert set(raw) == set(tft.TFTransformOutput(graph).raw_feature_spec())
    assert all(isinstance(v, str) for v in raw["payment_type"]) and all(isinstance(v, float) for v in raw["fare"])
    assert None in raw["company"] and any(isinstance(v, str) for v in raw["company"])  # a third have no company


def test_the_transform_output_transforms_raw_features_eagerly(pipeline_run):
    """What a TFX user calls on a Transform output, in eager mode:
    ``TFTransformOutput.transform_raw_features`` gives the Trainer's features. (A TF1 transform
    graph, TFX's ``force_tf_compat_v1``, is ~4.5 s faster to build and fails here:
    "Exporting/importing meta graphs is not supported when eager execution is enabled".)"""
    cfg, summary, _ = pipeline_run
    spec = cfg.features
    tf_transform_output = tft.TFTransformOutput(summary.component("Transform").outputs["transform_graph"][0])
    serialized = records(summary.component("CsvExampleGen").outputs["examples"][0], cfg.data.trainer_eval_split)
    assert tf.executing_eagerly()
    raw = tf.io.parse_example(serialized, tf_transform_output.raw_feature_spec())
    transformed = tf_transform_output.transform_raw_features(raw)
    trained = data.transformed_decoder(tf_transform_output)(serialized)
    names = list(spec.model_feature_names)
    np.testing.assert_allclose(matrix(transformed, names), matrix(trained, names), rtol=1e-5, atol=1e-5)
