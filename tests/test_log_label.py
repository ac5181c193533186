"""A regression label learnt in log space (``log: true``): Transform gives log1p of the label,
and the exported signatures give the model's output and the label back in the label's unit."""
import os

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_transform as tft
import tensorflow_transform.beam as tft_beam
from tensorflow_transform.tf_metadata import dataset_metadata, metadata_io, schema_utils

from tfxline.trainer.export import SERVING_SIGNATURE, TRANSFORM_SIGNATURE, build_signatures
from tfxline.trainer.model import Head, ModelInput, build_model
from tfxline.transforms.features import FeatureSpec, FeatureSpecError
from tfxline.transforms.preprocessing import make_preprocessing_fn

SPEC = FeatureSpec.from_dict({"label": {"name": "price", "transform": "regression", "log": True},
                              "inputs": [{"name": "carat", "transform": "zscore"}]})
RAW_SPEC = {"price": tf.io.VarLenFeature(tf.float32), "carat": tf.io.VarLenFeature(tf.float32)}
PRICES = [326.0, 0.0, 18823.0, 2500.5, -3.0]
CARATS = [0.2, 0.3, 2.5, 1.0, 0.7]


@pytest.fixture(scope="module")
def analyzed(tmp_path_factory):
    metadata = dataset_metadata.DatasetMetadata(schema_utils.schema_from_feature_spec(RAW_SPEC))
    rows = [{"price": [p], "carat": [c]} for p, c in zip(PRICES, CARATS)]
    output = str(tmp_path_factory.mktemp("transform_output"))
    with tft_beam.Context(temp_dir=str(tmp_path_factory.mktemp("tft"))):
        (out, _), transform_fn = (rows, metadata) | tft_beam.AnalyzeAndTransformDataset(make_preprocessing_fn(SPEC))
        _ = transform_fn | tft_beam.WriteTransformFn(output)
    metadata_io.write_metadata(metadata, os.path.join(output, "metadata"))  # the raw schema, as Transform writes it
    return out, output


def test_log_is_for_regression_labels_only():
    with pytest.raises(FeatureSpecError, match="log applies to transform regression"):
        FeatureSpec.from_dict({"label": {"name": "y", "transform": "binary", "log": True},
                               "inputs": [{"name": "x", "transform": "zscore"}]})
    with pytest.raises(FeatureSpecError, match="true or false"):
        FeatureSpec.from_dict({"label": {"name": "y", "transform": "regression", "log": "yes"},
                               "inputs": [{"name": "x", "transform": "zscore"}]})
    assert not FeatureSpec.from_dict({"label": {"name": "y", "transform": "regression"},
                                      "inputs": [{"name": "x", "transform": "zscore"}]}).label.log


def test_transform_learns_log1p_of_the_label_negatives_at_zero(analyzed):
    out, _ = analyzed
    got = np.array([r["price"] for r in out])
    np.testing.assert_allclose(got, np.log1p(np.maximum(PRICES, 0.0)), rtol=1e-6)


def test_signatures_serve_and_evaluate_in_the_labels_unit(analyzed):
    _, output = analyzed
    tf_transform_output = tft.TFTransformOutput(output)
    model = build_model([ModelInput("carat_xf")], Head("regression", label_mean=7.0, label_scale=1.5),
                        hidden_units=(4,))
    signatures = build_signatures(model, tf_transform_output, SPEC)

    def example(p, c):
        feature = {"carat": tf.train.Feature(float_list=tf.train.FloatList(value=[c]))}
        if p is not None:
            feature["price"] = tf.train.Feature(float_list=tf.train.FloatList(value=[p]))
        return tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()

    with_label = tf.constant([example(p, c) for p, c in zip(PRICES, CARATS)])
    labels = signatures[TRANSFORM_SIGNATURE](examples=with_label)["price"].numpy()
    np.testing.assert_allclose(labels, np.maximum(PRICES, 0.0), rtol=1e-4, atol=1e-3)  # TFMA's label: the price
    served = signatures[SERVING_SIGNATURE](examples=tf.constant([example(None, c) for c in CARATS]))["predictions"]
    log_space = model({"carat_xf": signatures[TRANSFORM_SIGNATURE](examples=with_label)["carat_xf"]}).numpy()
    np.testing.assert_allclose(served.numpy(), np.exp(log_space.reshape(-1)) - 1.0, rtol=1e-5)


def test_init_learns_a_skewed_non_negative_label_in_log_space(tmp_path):
    """bench/tables.py measured it: better on skewed prices and wages, worse on a symmetric target."""
    from tfxline.cli.init_project import plan

    rng = np.random.default_rng(0)
    x = rng.normal(size=400)
    for name, y, log in (("skewed", np.exp(1.0 + x + rng.normal(scale=0.3, size=400)), True),
                         ("symmetric", 100 + 10 * x, False),
                         ("negative", np.exp(x) - 2.0, False)):
        path = tmp_path / f"{name}.csv"
        path.write_text("x,y\n" + "".join(f"{a:.4f},{b:.4f}\n" for a, b in zip(x, y)))
        p, _, _ = plan(str(path), "y")
        assert p.task == "regression" and bool(p.label.get("log")) is log, name
        assert ("learnt as log(1 + y)" in p.task_why) is log
        FeatureSpec.from_dict({"label": p.label, "inputs": p.inputs})  # the config loads


def test_a_tflite_model_of_a_log_label_serves_in_the_labels_unit(analyzed, tmp_path):
    """The TFLite model answers what serving_default answers (the label's unit, not log space):
    its parity check compares the two on the eval rows."""
    from tfxline.serving import tflite
    from tfxline.trainer.export import export

    _, output = analyzed
    model = build_model([ModelInput("carat_xf")], Head("regression", label_mean=7.0, label_scale=1.5),
                        hidden_units=(4,))
    model_dir = export(model, tft.TFTransformOutput(output), SPEC, str(tmp_path / "model"))
    records = [tf.train.Example(features=tf.train.Features(feature={
        "price": tf.train.Feature(float_list=tf.train.FloatList(value=[p])),
        "carat": tf.train.Feature(float_list=tf.train.FloatList(value=[c]))})).SerializeToString()
        for p, c in zip(PRICES, CARATS)]
    exported = tflite.export(model_dir, output, SPEC, "none", records)
    assert exported.parity.ok, exported.parity.reason
    lite = tflite.predict(tflite.Runner(exported.content), tflite.columns_from_examples(records, SPEC, output))
    saved, _ = tflite.saved_model_outputs(model_dir, records, SPEC)
    np.testing.assert_allclose(lite, saved, rtol=1e-4)
    assert saved.min() > -1.0  # exp(x) - 1: in the price's unit


def _library(model_dir):
    from tensorflow.core.protobuf import saved_model_pb2

    saved = saved_model_pb2.SavedModel()
    with open(os.path.join(model_dir, "saved_model.pb"), "rb") as f:
        saved.ParseFromString(f.read())
    return [fn.signature.name for fn in saved.meta_graphs[0].graph_def.library.function]


def _carat_records():
    """CARATS as serialized tf.Examples without the label, as a serving client sends them."""
    return tf.constant([tf.train.Example(features=tf.train.Features(feature={
        "carat": tf.train.Feature(float_list=tf.train.FloatList(value=[c]))})).SerializeToString() for c in CARATS])


def _traced_calls(model_dir):
    return [n for n in _library(model_dir) if "call_and_return_conditional_losses" in n]


def test_the_export_holds_the_model_and_its_transform_as_functions(analyzed, tmp_path):
    """trainer/export.py keeps the model as one function on the transformed features and the
    Transform layer as ``tft_layer``, callable on parsed raw features; a network keeps Keras's
    per-layer traces (a loaded network's ``variables``); an export written before the function
    (the traces, no such function) is still called through the loaded object itself."""
    from tfxline.trainer.export import MODEL_FUNCTION, export, model_function

    _, output = analyzed
    model = build_model([ModelInput("carat_xf")], Head("regression", label_mean=7.0, label_scale=1.5),
                        hidden_units=(4,))
    features = {"carat_xf": tf.constant([-1.0, 0.0, 2.0])}
    model_dir = export(model, tft.TFTransformOutput(output), SPEC, str(tmp_path / "model"))
    assert _traced_calls(model_dir)
    loaded = tf.saved_model.load(model_dir)
    assert model_function(loaded) is getattr(loaded, MODEL_FUNCTION) and loaded.variables
    np.testing.assert_allclose(model_function(loaded)(features), model(features), rtol=1e-6)
    raw = tf.io.parse_example(_carat_records(), {"carat": RAW_SPEC["carat"]})
    expected = tft.TFTransformOutput(output).transform_raw_features(raw)  # TFX users' loaded.tft_layer(raw)
    np.testing.assert_allclose(loaded.tft_layer(raw)["carat_xf"], expected["carat_xf"], rtol=1e-6)

    before = str(tmp_path / "before")
    delattr(model, MODEL_FUNCTION)
    model.save(before, save_format="tf", include_optimizer=False)
    old = tf.saved_model.load(before)
    assert not hasattr(old, MODEL_FUNCTION) and model_function(old) is old
    np.testing.assert_allclose(model_function(old)(features), model(features), rtol=1e-6)


def test_a_model_holding_a_forest_is_exported_without_keras_per_layer_traces(analyzed, tmp_path):
    """A forest (alone or in the average) is saved without Keras's per-layer traces (most of a
    wide table's export time: bench/export_traces.py); served through its signatures and the
    model function, it gives what the model in memory gives."""
    import ydf

    from tfxline.trainer import family, trees
    from tfxline.trainer.export import SERVING_SIGNATURE, export, model_function
    from tfxline.trainer.keras_compat import keras

    _, output = analyzed
    k = keras()
    carats = np.linspace(0.2, 3.0, 60).astype(np.float32)
    forest = ydf.GradientBoostedTreesLearner(label="y", task=ydf.Task.REGRESSION, num_trees=5, min_examples=2,
                                             num_threads=1).train({"carat_xf": carats, "y": carats * 2.0}, verbose=0)
    inputs = {"carat_xf": k.Input(shape=(), name="carat_xf", dtype="float32")}
    forest_model = k.Model(inputs, trees.output_layer(forest.to_tensorflow_function(), ["carat_xf"], [])(inputs))
    network = build_model([ModelInput("carat_xf")], Head("regression", label_mean=7.0, label_scale=1.5),
                          hidden_units=(4,))
    average = family.average_model([network, forest_model])
    assert trees.holds_forest(forest_model) and trees.holds_forest(average) and not trees.holds_forest(network)
    model_dir = export(average, tft.TFTransformOutput(output), SPEC, str(tmp_path / "model"))
    assert not _traced_calls(model_dir)
    loaded = tf.saved_model.load(model_dir)
    features = {"carat_xf": tf.constant([-1.0, 0.0, 2.0])}
    np.testing.assert_allclose(model_function(loaded)(features), average(features), rtol=1e-5)
    assert loaded.signatures[SERVING_SIGNATURE](examples=_carat_records())["predictions"].shape[0] == len(CARATS)


def test_a_log_labels_prediction_stays_inside_its_widened_range_in_its_unit(analyzed, tmp_path):
    """Clipped in log space (the label's range widened by 10% each side), then exp: a carat 50
    standard deviations out serves a price inside exp(widened range) - 1, not an exp() blow-up,
    from the saved model and from its TFLite model alike."""
    from tfxline.serving import tflite
    from tfxline.trainer.export import export

    _, output = analyzed
    logs = np.log1p(np.maximum(PRICES, 0.0))
    tf.keras.utils.set_random_seed(0)
    model = build_model([ModelInput("carat_xf")], Head("regression", label_mean=float(logs.mean()),
                        label_scale=float(logs.std()), label_min=float(logs.min()), label_max=float(logs.max())),
                        hidden_units=(4,))
    low, high = logs.min() - 0.1 * np.ptp(logs), logs.max() + 0.1 * np.ptp(logs)
    log_space = model({"carat_xf": tf.constant([50.0, -50.0])}).numpy()  # past the Transform's own clip
    assert np.all((log_space >= low - 1e-5) & (log_space <= high + 1e-5))
    far = float(np.mean(CARATS) + 50 * np.std(CARATS))
    records = [tf.train.Example(features=tf.train.Features(feature={
        "price": tf.train.Feature(float_list=tf.train.FloatList(value=[p])),
        "carat": tf.train.Feature(float_list=tf.train.FloatList(value=[c]))})).SerializeToString()
        for p, c in zip(PRICES + [1000.0], CARATS + [far])]
    model_dir = export(model, tft.TFTransformOutput(output), SPEC, str(tmp_path / "model"))
    saved, _ = tflite.saved_model_outputs(model_dir, records, SPEC)
    assert np.all((saved >= np.exp(low) - 1.0 - 1e-3) & (saved <= np.exp(high) - 1.0 + 1e-3)), saved
    exported = tflite.export(model_dir, output, SPEC, "none", records)
    assert exported.parity.ok, exported.parity.reason
    lite = tflite.predict(tflite.Runner(exported.content), tflite.columns_from_examples(records, SPEC, output))
    np.testing.assert_allclose(lite, saved, rtol=1e-4)
