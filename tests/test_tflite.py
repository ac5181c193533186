"""The TFLite model a push writes (serving/tflite.py): the real converter and
interpreter on the shared run's model, the parity gate per task and mode, and a push the gate
refuses."""
import json
import os
import shutil

import numpy as np
import pytest

from tfxline.serving import push as sp
from tfxline.serving import tflite as T
from tfxline.transforms import features as F


# ---- the gate's rules (no TensorFlow model) -----------------------------------------------

def test_float_modes_gate_on_the_largest_output_difference():
    saved = np.array([0.1, 0.9, 0.4, 0.6])
    labels = np.array([0, 1, 0, 1])
    ok = T.parity("dynamic", F.TASK_BINARY, saved, saved + 0.01, labels)
    assert ok.ok and ok.max_abs_diff == pytest.approx(0.01) and ok.tolerance == T.DEFAULT_TOLERANCE["dynamic"]
    off = T.parity("none", F.TASK_BINARY, saved, saved + np.array([0, 0, 0.002, 0]), labels)
    assert not off.ok and off.reason == ("its outputs differ from the SavedModel's by up to 0.002 on 4 eval rows "
                                         "(allowed 0.0001)")
    assert T.parity("none", F.TASK_BINARY, saved, saved + 0.002, labels, tolerance=0.01).ok


def test_regression_differences_are_in_prediction_standard_deviations():
    saved = np.array([1000.0, 3000.0, 5000.0, 7000.0])  # std 2236
    lite = saved + np.array([0.0, 50.0, 0.0, 0.0])
    result = T.parity("float16", F.TASK_REGRESSION, saved, lite, saved)
    assert result.max_abs_diff == pytest.approx(50 / np.std(saved), rel=1e-4) and result.ok
    assert result.metric == "rmse" and result.saved_model_metric == 0.0


def test_int8_gates_on_the_task_metric():
    labels = np.array([0, 0, 1, 1, 0, 1])
    saved = np.array([0.1, 0.2, 0.8, 0.9, 0.3, 0.7])
    swapped = np.array([0.1, 0.8, 0.2, 0.9, 0.3, 0.7])  # two rows ranked wrong
    refused = T.parity("int8", F.TASK_BINARY, saved, swapped, labels)
    assert not refused.ok and refused.reason.startswith("auc 0.6667 is 0.3333 below the SavedModel's 1.0000")
    assert T.parity("int8", F.TASK_BINARY, saved, saved * 0.9, labels).ok  # far apart, same ranking
    classes = np.array([0, 1, 2])
    probs = np.eye(3)
    wrong = probs[[1, 1, 2]]
    assert not T.parity("int8", F.TASK_MULTICLASS, probs, wrong, classes).ok
    values = np.array([1.0, 2.0, 3.0])
    rising = T.parity("int8", F.TASK_REGRESSION, values + 0.1, values + 0.2, values)
    assert not rising.ok and "% above the SavedModel's" in rising.reason and "(allowed increase 2%)" in rising.reason


def test_nan_outputs_are_refused_whatever_the_tolerance():
    saved = np.array([0.1, 0.9])
    result = T.parity("dynamic", F.TASK_BINARY, saved, np.array([0.1, np.nan]), np.array([0, 1]), tolerance=10)
    assert not result.ok and "NaN" in result.reason


def test_modes_and_int8_with_string_inputs_are_refused_in_one_line():
    with pytest.raises(T.TFLiteError, match="unknown TFLite mode 'int4'; fix: set serving.tflite"):
        T.check_mode("int4")
    with pytest.raises(T.TFLiteError, match=r"cannot feed the string input\(s\) company; fix: use serving.tflite: dynamic"):
        T.check_mode("int8", ["company"])
    T.check_mode("int8", [])
    T.check_mode("float16", ["company"])


def test_input_names_are_op_names():
    assert T.input_name("trip_miles") == "trip_miles"
    assert T.input_name("trip miles (km)") == "trip_miles__km_"
    assert T.input_name("_x") == "x_x"


# ---- the shared run's TFLite model ---------------------------------------------------------

def pushed(pipeline_run):
    cfg, _, _ = pipeline_run
    version = sp.versions(cfg.serving_dir)[-1]
    return cfg, version, sp.read_metadata(cfg.serving_dir, version)


def transform_dir(meta):
    """The Transform output the pushed TFLite model was built from (the shared output root holds
    other runs' too)."""
    return meta["tflite"]["transform_graph"]

def pusher_inputs(pipeline_run, tmp_path):
    """(config, Model, ModelBlessing, Examples, TransformGraph): the Pusher's inputs, from the
    shared run's pushed version (its SavedModel copied in as a new model artifact)."""
    from tfx.types import standard_artifacts

    cfg, version, meta = pushed(pipeline_run)
    model = standard_artifacts.Model()
    model.uri = str(tmp_path / "model")
    shutil.copytree(os.path.join(cfg.serving_dir, str(version)), os.path.join(model.uri, "Format-Serving"),
                    ignore=shutil.ignore_patterns(sp.METADATA_FILE, T.FILE))
    blessing = standard_artifacts.ModelBlessing()
    blessing.set_int_custom_property("blessed", 1)
    examples = standard_artifacts.Examples()
    examples.uri, examples.span = meta["data"]["examples_uri"], 0
    graph = standard_artifacts.TransformGraph()
    graph.uri = transform_dir(meta)
    return cfg, model, blessing, examples, graph



@pytest.mark.e2e
def test_the_push_holds_a_checked_tflite_model(pipeline_run):
    from tfxline.runs.console import format_summary

    cfg, version, meta = pushed(pipeline_run)
    _, summary, _ = pipeline_run
    tflite = meta["tflite"]
    path = os.path.join(cfg.serving_dir, str(version), T.FILE)
    assert tflite["mode"] == "dynamic" and tflite["parity"]["ok"] and os.path.getsize(path) == tflite["bytes"]
    assert tflite["flex_ops"] == []  # builtins only: the vocabularies have one OOV bucket each
    assert tflite["inputs"] == {c: c for c in cfg.features.serving_columns}
    assert tflite["transform_graph"].startswith(os.path.join(cfg.pipeline_root, "Transform", "transform_graph"))
    assert summary.tflite == T.summary_line(tflite)
    assert f"  tflite: {summary.tflite}" in format_summary(summary).splitlines()


@pytest.mark.e2e
def test_the_tflite_model_takes_raw_values_with_missing_marks(pipeline_run):
    """The pushed model.tflite in the real interpreter on the eval rows, as raw columns (missing
    values marked), against the SavedModel of the same version on the same rows."""
    from tfxline.serving.batch_latency import eval_records

    cfg, version, meta = pushed(pipeline_run)
    records = eval_records(meta["data"]["examples_uri"], 400)
    inputs = T.columns_from_examples(records, cfg.features, transform_dir(meta))
    assert any(np.isnan(v).any() for v in inputs.values() if v.dtype == np.float32)  # the taxi data has gaps
    assert any((v == b"").any() for v in inputs.values() if v.dtype == object)
    runner = T.Runner(open(os.path.join(cfg.serving_dir, str(version), T.FILE), "rb").read())
    assert runner.flex_ops() == []
    # a device's first call: one example into a fresh interpreter, its inputs at their default shape
    one = runner({k: v[:1] for k, v in inputs.items()})
    lite = T.predict(runner, inputs, batch=64)
    saved, labels = T.saved_model_outputs(os.path.join(cfg.serving_dir, str(version)), records, cfg.features)
    assert lite.shape == saved.shape == (len(records),) and set(labels.tolist()) <= {0, 1}
    assert np.max(np.abs(lite - saved)) <= T.DEFAULT_TOLERANCE["dynamic"]
    assert one.shape == (1,) and abs(one[0] - lite[0]) < 1e-6


@pytest.mark.e2e
def test_float32_tflite_reproduces_the_savedmodel(pipeline_run):
    """No quantization: the rebuilt preprocessing and the network give the SavedModel's numbers."""
    from tfxline.serving.batch_latency import eval_records

    cfg, version, meta = pushed(pipeline_run)
    exported = T.export(os.path.join(cfg.serving_dir, str(version)), transform_dir(meta), cfg.features, "none",
                        eval_records(meta["data"]["examples_uri"], 600))
    assert exported.parity.max_abs_diff < 1e-5 and exported.parity.tflite_metric == pytest.approx(
        exported.parity.saved_model_metric, abs=1e-6)


@pytest.mark.e2e
def test_a_tflite_model_off_its_tolerance_refuses_the_push(pipeline_run, tmp_path):
    """The Pusher's executor on the shared run's real artifacts: dynamic quantization against a
    tolerance it cannot meet. Nothing is pushed, the serving directory is untouched, and the
    PushedModel says why in one line."""
    from tfx.types import standard_artifacts

    from tfxline.components import safe_pusher

    cfg, model, blessing, examples, graph = pusher_inputs(pipeline_run, tmp_path)
    out = standard_artifacts.PushedModel()
    serving = str(tmp_path / "serving")
    safe_pusher.Executor().Do(
        {"model": [model], "model_blessing": [blessing], "examples": [examples], "transform_graph": [graph]},
        {"pushed_model": [out]},
        {"serving_dir": serving, "keep_versions": 5, "tflite": "dynamic", "tflite_tolerance": 1e-9,
         "features": json.dumps(cfg.features.to_dict())})
    assert out.get_int_custom_property("pushed") == 0 and sp.versions(serving) == []
    refused = out.get_string_custom_property("refused")
    assert refused.startswith("the TFLite model (dynamic) does not match the SavedModel: its outputs differ")
    assert "(allowed 1e-09); nothing pushed; fix: " in refused and "\n" not in refused


@pytest.mark.e2e
def test_turning_tflite_on_for_a_pushed_model_pushes_it_again_with_one(pipeline_run, tmp_path):
    """The Pusher's executor on the shared run's real artifacts: a model pushed without TFLite,
    then the same model with serving.tflite on (its cache key changed, and so did what the
    version must hold): a new version, with its model.tflite. The same setting again: no push."""
    from tfx.types import standard_artifacts

    from tfxline.components import safe_pusher

    cfg, model, blessing, examples, graph = pusher_inputs(pipeline_run, tmp_path)
    serving = str(tmp_path / "serving")

    def push(**tflite):
        out = standard_artifacts.PushedModel()
        inputs = {"model": [model], "model_blessing": [blessing], "examples": [examples]}
        if tflite:
            inputs["transform_graph"] = [graph]
            tflite["features"] = json.dumps(cfg.features.to_dict())
        safe_pusher.Executor().Do(inputs, {"pushed_model": [out]}, {"serving_dir": serving, "keep_versions": 5,
                                                                    **tflite})
        return out

    first = push()
    assert first.get_int_custom_property("pushed") == 1 and not first.has_custom_property("already_pushed")
    again = push(tflite="dynamic")
    assert again.get_int_custom_property("pushed") == 1 and not again.has_custom_property("already_pushed")
    newest = sp.versions(serving)[-1]
    assert len(sp.versions(serving)) == 2 and os.path.isfile(os.path.join(serving, str(newest), T.FILE))
    assert push(tflite="dynamic").get_int_custom_property("already_pushed") == 1
    assert len(sp.versions(serving)) == 2
