"""create_pipeline: component list and wiring, built from the config alone (no run)."""
import json

import pytest
from tfx import v1 as tfx

from tfxline.pipeline.config.load import load_config
from tfxline.pipeline.factory import PREPROCESSING_FN, BASELINE_ID, RUN_FN, create_pipeline


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("p")
    return build(load_config(overrides=[f"output_root={root}", "data.train_buckets=3", "data.eval_buckets=2"]), root)


def build(cfg, root):
    p = create_pipeline(cfg, data_root="/data", data_pattern="taxi.csv", schema_path="/s/taxi.pbtxt",
                        pipeline_root=str(root / "pr"), serving_dir=str(root / "serving"),
                        metadata_connection_config=tfx.orchestration.metadata.sqlite_metadata_connection_config(
                            str(root / "m.sqlite")), beam_pipeline_args=["--direct_num_workers=1"])
    return cfg, p, {c.id: c for c in p.components}


def producer(channel):
    return channel.producer_component_id


def test_components_are_all_there(built):
    _, p, c = built
    assert set(c) == {"CsvExampleGen", "StatisticsGen", "ImportSchemaGen", "ExampleValidator",
                      "AnomaliesGate", "DriftGate", "Transform", "Trainer", BASELINE_ID, "Evaluator", "Pusher"}
    assert p.enable_cache
    assert p.beam_pipeline_args == ["--direct_num_workers=1"]


def test_wiring(built):
    _, _, c = built
    assert producer(c["StatisticsGen"].inputs["examples"]) == "CsvExampleGen"
    assert producer(c["ExampleValidator"].inputs["schema"]) == "ImportSchemaGen"
    assert producer(c["AnomaliesGate"].inputs["anomalies"]) == "ExampleValidator"
    assert producer(c["AnomaliesGate"].inputs["statistics"]) == "StatisticsGen"  # its empty-split check
    assert c["AnomaliesGate"] in c["Transform"].upstream_nodes
    assert c["DriftGate"] in c["Transform"].upstream_nodes  # no training on drifted data
    assert producer(c["DriftGate"].inputs["statistics"]) == "StatisticsGen"
    assert producer(c["Pusher"].inputs["statistics"]) == "StatisticsGen"  # the next runs' reference
    assert producer(c["Transform"].inputs["examples"]) == "CsvExampleGen"
    # The Trainer runs the Transform graph on the raw examples; Transform writes none.
    assert producer(c["Trainer"].inputs["examples"]) == "CsvExampleGen"
    assert producer(c["Trainer"].inputs["transform_graph"]) == "Transform"  # after the gates
    assert "transformed_examples" not in c["Transform"].outputs
    assert producer(c["Evaluator"].inputs["model"]) == "Trainer"
    assert producer(c["Evaluator"].inputs["baseline_model"]) == BASELINE_ID
    # The baseline is resolved per candidate (and re-resolved whenever a new one is trained).
    assert producer(c[BASELINE_ID].inputs["candidate_model"]) == "Trainer"
    assert producer(c["Evaluator"].inputs["examples"]) == "CsvExampleGen"
    assert producer(c["Pusher"].inputs["model_blessing"]) == "Evaluator"
    assert producer(c["Pusher"].inputs["evaluation"]) == "Evaluator"


def test_config_reaches_the_components(built):
    cfg, _, c = built
    gen = c["CsvExampleGen"].exec_properties
    assert '"hash_buckets": 3' in gen["output_config"] and '"hash_buckets": 2' in gen["output_config"]
    assert '"pattern": "taxi.csv"' in gen["input_config"]
    assert c["Transform"].exec_properties["preprocessing_fn"] == PREPROCESSING_FN
    assert c["Trainer"].exec_properties["run_fn"] == RUN_FN
    assert '"num_steps"' not in c["Trainer"].exec_properties["train_args"]  # epochs mode: no budget
    assert "big_tipper" in c["Trainer"].exec_properties["custom_config"]
    assert c["Pusher"].exec_properties["serving_dir"].endswith("serving")
    assert c["Pusher"].exec_properties["keep_versions"] == cfg.serving.keep_versions
    assert not c["Transform"].exec_properties.get("module_file")
    drift = json.loads(c["DriftGate"].exec_properties["thresholds"])
    assert drift["numeric_threshold"] == cfg.drift.numeric_threshold and "fare" in drift["columns"]
    assert c["DriftGate"].exec_properties["serving_dir"] == c["Pusher"].exec_properties["serving_dir"]


def test_tflite_wires_the_transform_graph_into_the_pusher_only_when_on(built, tmp_path):
    cfg, _, c = built
    assert "transform_graph" not in c["Pusher"].inputs and "tflite" not in c["Pusher"].exec_properties
    on, _, components = build(load_config(overrides=[f"output_root={tmp_path}", "serving.tflite=float16"]), tmp_path)
    pusher = components["Pusher"]
    assert pusher.exec_properties["tflite"] == "float16" and pusher.exec_properties["tflite_tolerance"] == 0.0
    assert json.loads(pusher.exec_properties["features"]) == on.features.to_dict()
    assert "transform_graph" in pusher.inputs


def split_config(component, prop, field=None):
    value = json.loads(component.exec_properties[prop] or "null")
    return value.get(field, []) if field else value


def test_each_split_has_one_job(built):
    """Train fits, validation picks the epoch (early stopping), eval is the Evaluator's alone:
    no model selection on the data the gate judges."""
    _, _, c = built
    gen = json.loads(c["CsvExampleGen"].exec_properties["output_config"])["split_config"]["splits"]
    assert [(s["name"], s["hash_buckets"]) for s in gen] == [("train", 3), ("validation", 1), ("eval", 2)]
    assert split_config(c["Trainer"], "train_args", "splits") == ["train"]
    assert split_config(c["Trainer"], "eval_args", "splits") == ["validation"]
    assert split_config(c["Transform"], "splits_config") == {"analyze": ["train"]}  # and writes no split
    assert split_config(c["Evaluator"], "example_splits") == ["eval"]


def test_without_a_validation_split_the_trainer_validates_on_eval(tmp_path):
    cfg = load_config(overrides=[f"output_root={tmp_path}", "data.validation_buckets=0"])
    assert cfg.data.splits == ("train", "eval")
    p = create_pipeline(cfg, data_root="/data", data_pattern="taxi.csv", schema_path="/s/taxi.pbtxt",
                        pipeline_root=str(tmp_path / "pr"), serving_dir=str(tmp_path / "serving"))
    c = {c.id: c for c in p.components}
    assert "validation" not in c["CsvExampleGen"].exec_properties["output_config"]
    assert split_config(c["Trainer"], "eval_args", "splits") == ["eval"]


def test_epochs_mode_gives_the_trainer_no_step_budget(tmp_path):
    from tfxline.pipeline.config.steps import step_budget

    steps = load_config(overrides=["training.mode=steps", "training.train_steps=37", "training.epochs=3"])
    assert step_budget(steps.training) == 37
    assert step_budget(load_config().training) == 0  # the default: passes over the data
    _, _, c = build(steps, tmp_path)
    assert json.loads(c["Trainer"].exec_properties["train_args"])["num_steps"] == 37  # TFX's name for it


def test_train_steps_becomes_tfx_num_steps_in_one_place():
    """training.train_steps is TrainArgs.num_steps in the factory's proto and in a compiled
    pipeline's train_args parameter alike (its default and submit / run-compiled --train-steps)."""
    from tfxline.pipeline.config.steps import train_args, train_args_json

    assert train_args(7) == {"num_steps": 7}
    assert train_args_json(7) == '{"num_steps": 7}'


def test_eval_config_has_gates_and_slices(built):
    from tfxline.pipeline.eval_config import build_eval_config

    cfg, _, _ = built
    ec = build_eval_config(cfg.evaluation, cfg.features)
    assert [list(s.feature_keys) for s in ec.slicing_specs] == [[], ["payment_type"], ["trip_start_hour"]]
    metrics = {m.class_name: m for m in ec.metrics_specs[0].metrics}
    assert {"AUC", "AUCPrecisionRecall", "HistogramBinaryAccuracy", "HistogramPrecision", "HistogramRecall",
            "HistogramCalibration", "HistogramExampleCount", "BinaryCrossentropy"} <= set(metrics)
    auc = metrics["AUC"].per_slice_thresholds[0]
    assert auc.threshold.value_threshold.lower_bound.value == cfg.evaluation.min_auc
    assert auc.threshold.change_threshold.absolute.value == -cfg.evaluation.max_auc_drop
    assert list(auc.slicing_specs[0].feature_keys) == []  # gates the overall slice only
    assert ec.model_specs[0].label_key == "big_tipper"
    # The metrics listed are the metrics: no second copy from the model's compile(), and the
    # model is loaded as a plain SavedModel (its signatures), not revived as Keras.
    assert ec.options.include_default_metrics.value is False
    assert ec.model_specs[0].model_type == "tf_generic"


def test_a_span_and_a_window_of_spans(tmp_path):
    """The pre-flight check's span is what ExampleGen reads (a static range); a window adds TFX's
    rolling-range Resolver between ExampleGen and Transform, while the data checks and the
    Evaluator stay on today's span."""
    from tfxline.pipeline.factory import WINDOW_ID

    cfg = load_config(overrides=[f"output_root={tmp_path}", "data.pattern=span-{SPAN}/*.csv",
                                 "data.spans=window:3"])
    p = create_pipeline(cfg, data_root="/data", data_pattern=cfg.data.pattern, schema_path="/s/taxi.pbtxt",
                        span=7, pipeline_root=str(tmp_path / "pr"), serving_dir=str(tmp_path / "serving"))
    c = {x.id: x for x in p.components}
    range_config = json.loads(c["CsvExampleGen"].exec_properties["range_config"])
    assert range_config["static_range"] == {"start_span_number": 7, "end_span_number": 7}
    window = c[WINDOW_ID]
    config = next(v for v in window.exec_properties.values() if isinstance(v, dict))  # key differs by TFX version
    assert config["range_config"].rolling_range.num_spans == 3
    assert c["CsvExampleGen"] in window.upstream_nodes
    assert producer(c["Transform"].inputs["examples"]) == WINDOW_ID
    assert producer(c["Pusher"].inputs["examples"]) == WINDOW_ID  # it records the spans trained on
    for checks_today in ("StatisticsGen", "Evaluator", "DriftGate"):
        assert producer(c[checks_today].inputs["examples"]) == "CsvExampleGen"
    assert c["DriftGate"].exec_properties["span_ledger"] == str(tmp_path / "pr" / "spans")
    latest = create_pipeline(load_config(overrides=[f"output_root={tmp_path}"]), data_root="/d", data_pattern="x",
                             schema_path="/s", pipeline_root="/pr", serving_dir="/sv")
    assert WINDOW_ID not in {x.id for x in latest.components}
    assert not latest.components[0].exec_properties.get("range_config")  # ExampleGen's driver picks the span
