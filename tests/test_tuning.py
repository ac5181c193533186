"""Tuning without a pipeline run: upstream keras-tuner's refusal of tf_keras (pinned), the tuning
config, the search space per task, the values laid over the Trainer's settings, the Tuner and the
Importer in the pipeline, ``tuning.reuse`` resolved before a run, ``init --tune`` and the console's
progress lines. The search loop: tests/test_tuning_search.py; the tuned run itself:
tests/test_tuning_e2e.py."""
import json
import os
import subprocess
import sys
import textwrap

import pytest
import yaml
from tfx import v1 as tfx

from tfxline.pipeline.config import ConfigError
from tfxline.pipeline.config.load import load_config
from tfxline.pipeline.factory import create_pipeline, trainer_custom_config
from tfxline.pipeline.tuning import REUSED_ID, TUNER_ID, tuner_custom_config
from tfxline.trainer import tuning_settings as T

STOCK_SEARCH = textwrap.dedent("""
    import os, tempfile
    os.environ["TF_USE_LEGACY_KERAS"] = "1"
    import numpy as np, tf_keras, keras_tuner as kt

    def build(hp):
        model = tf_keras.Sequential([tf_keras.layers.Dense(hp.Choice("units", [2, 4]), input_shape=(3,)),
                                     tf_keras.layers.Dense(1)])
        model.compile("adam", "mse")
        return model

    tuner = kt.RandomSearch(build, objective="val_loss", max_trials=1, directory=tempfile.mkdtemp(), overwrite=True)
    try:
        tuner.search(np.zeros((8, 3)), np.zeros(8), validation_data=(np.zeros((4, 3)), np.zeros(4)), epochs=1,
                     verbose=0)
        print("ACCEPTED", kt.__version__)
    except kt.errors.FatalTypeError as e:
        print("REFUSED", kt.__version__, e)
""")


def test_stock_keras_tuner_still_refuses_a_tf_keras_model():
    """Pins upstream: keras-tuner builds with Keras 3 whenever `keras` is installed, whatever
    TF_USE_LEGACY_KERAS says (keras_tuner/src/backend/config.py:15-23 at 1.4.8), and its stock
    search refuses a tf_keras model (src/engine/tuner.py:159-172; keras-team/keras-tuner#1039, fix
    #1040). trainer/tune.py's TrialTuner exists for this alone."""
    done = subprocess.run([sys.executable, "-c", STOCK_SEARCH], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    line = next((x for x in done.stdout.splitlines() if x.startswith(("ACCEPTED", "REFUSED"))), "")
    assert line, done.stdout[-2000:] + done.stderr[-2000:]
    assert not line.startswith("ACCEPTED"), (
        f"keras-tuner {line.split()[1]} now tunes a tf_keras model through its stock search: the TrialTuner "
        "subclass in trainer/tune.py (its run_trial) can go in favour of a HyperModel; update this test")
    assert "Expected the model-building function" in line and "tf_keras" in line


@pytest.mark.parametrize("override, message", [
    ("tuning.algorithm=grid", "tuning.algorithm"),
    ("tuning.max_trials=0", "tuning.max_trials"),
    ("tuning.objective=auc", "tuning.objective"),
    ("tuning.space.dropout=[0.1, 1.5]", "tuning.space.dropout"),
    ("tuning.space.learning_rate=[0.1]", "tuning.space.learning_rate"),
    ("tuning.space.class_weight=[even]", "tuning.space.class_weight"),
    ("tuning.space.learning_rat=[0.1, 0.2]", "did you mean 'learning_rate'"),
])
def test_bad_tuning_values_are_one_line(override, message):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace("[", r"\[")):
        load_config(overrides=[override])


def test_the_space_is_the_tasks_default_where_unset():
    binary = T.SearchSpace().resolved("binary", 128)
    assert binary["batch_size"] == (64, 128, 256)  # around the batch the training length was sized for
    assert binary["learning_rate"] == (5e-4, 2e-2) and "class_weight" not in binary
    assert T.SearchSpace().resolved("multiclass", 32)["class_weight"] == ("none", "balanced")
    narrowed = T.SearchSpace(dropout=(), hidden_layers=(2,), batch_size=(64, 256)).resolved("regression", 128)
    assert "dropout" not in narrowed and "hidden_layers" not in narrowed  # [] and one value: nothing to choose
    assert narrowed["batch_size"] == (64, 256)


@pytest.mark.parametrize("task, objective, expected", [
    ("binary", "auto", ("val_auc", "max")), ("multiclass", "auto", ("val_accuracy", "max")),
    ("regression", "auto", ("val_rmse", "min")), ("binary", "val_loss", ("val_loss", "min")),
    ("binary", "val_accuracy", ("val_accuracy", "max"))])
def test_the_objective_follows_the_task(task, objective, expected):
    assert T.objective(T.TuningConfig(objective=objective), task) == expected


def test_tuned_values_land_on_the_trainers_settings_through_tfxs_json():
    """The values round-trip as TFX's Tuner writes them (HyperParameters.get_config() as JSON) and the
    Trainer reads them (fn_args.hyperparameters), keras-tuner's own tuner/ keys ignored."""
    import keras_tuner as kt

    from tfxline.trainer.tune import search_space

    hp = search_space(T.SearchSpace().resolved("multiclass", 128))
    for key, value in {"learning_rate": 0.004, "hidden_layers": 3, "hidden_units": 64, "batch_size": 256,
                       "class_weight": "balanced", "dropout": 0.1}.items():
        hp.values[key] = value
    hp.values["tuner/epochs"] = 4
    written = json.loads(json.dumps(hp.get_config()))  # tfx components/tuner/executor.py:64-70
    assert isinstance(kt.HyperParameters.from_config(written), kt.HyperParameters)
    settings = load_config(overrides=["model.hidden_units=[8]"]).trainer_settings
    tuned = T.tuned(settings, T.best_values(written))
    assert tuned.model.hidden_units == (64, 32, 16) and tuned.model.learning_rate == 0.004
    assert tuned.model.dropout == 0.1 and tuned.training.batch_size == 256
    assert tuned.training.class_weight == "balanced"
    assert tuned.features == settings.features and tuned.runtime == settings.runtime
    assert T.tuned(settings, T.best_values(None)) == settings
    assert T.layer_widths(4, 32) == (32, 16, 8, 8)


@pytest.mark.parametrize("algorithm", ["random", "bayesian", "hyperband"])
def test_each_algorithm_proposes_values_inside_the_space(algorithm, tmp_path):
    from tfxline.trainer.tune import make_oracle

    cfg = load_config(overrides=["tuning.enabled=true", f"tuning.algorithm={algorithm}", "tuning.max_trials=5"])
    oracle = make_oracle(cfg.trainer_settings, cfg.tuning)
    assert oracle.max_trials == 5  # hyperband's bracket too: max_trials caps it
    oracle._set_project_dir(str(tmp_path), "trials")  # what the Tuner does with its directory
    values = oracle.create_trial("t").hyperparameters.values
    space = cfg.tuning.space.resolved("binary", cfg.training.batch_size)
    assert set(space) <= set(values) <= set(space) | {"tuner/epochs", "tuner/initial_epoch", "tuner/bracket",
                                                       "tuner/round", "tuner/trial_id"}
    assert space["learning_rate"][0] <= values["learning_rate"] <= space["learning_rate"][1]
    assert all(values[k] in v for k, v in space.items() if k != "learning_rate")


def test_progress_and_summary_lines():
    trial = {"trial": "01", "score": 0.94123, "epochs": 4, "best_epoch": 3, "seconds": 12.34,
             "values": {"learning_rate": 0.0031234, "hidden_layers": 2}}
    assert T.trial_line(2, 10, "val_auc", trial) == (
        "tuning: trial 2/10: val_auc 0.9412 (4 epochs, 12.3s) learning_rate=0.00312 hidden_layers=2")
    record = T.tuning_record(T.TuningConfig(max_trials=3), "val_auc", "max", [trial, dict(trial, score=0.5)], 41.2,
                             out_of_time=True)
    assert record["best"]["score"] == 0.94123 and record["ended_by"] == "max_minutes"
    assert T.summary_line(record) == ("tuning: 2 trials in 41s (the max_minutes budget ended it), best val_auc "
                                      "0.9412: learning_rate=0.00312 hidden_layers=2")
    with_own = T.tuning_record(T.TuningConfig(), "val_auc", "max", [trial], 41.2, False,
                               baseline=dict(trial, trial="config", score=0.8, noise=0.01, rows=500, values={}))
    assert T.summary_line(with_own).endswith("best val_auc 0.9412 (the config's own 0.8000 ±0.0100): "
                                             "learning_rate=0.00312 hidden_layers=2")


def test_the_console_shows_the_tuners_lines():
    from tests.test_console import progress_of

    out, _ = progress_of("Component Tuner is running.",
                         "tuning: trial 1/3: val_auc 0.9412 (4 epochs, 12.3s) learning_rate=0.00312",
                         "Best Hyperparameters are written to /x.",  # TFX's own lines stay in the log
                         "Component Tuner is finished.")
    lines = out.getvalue().splitlines()
    assert lines[1] == "          tuning: trial 1/3: val_auc 0.9412 (4 epochs, 12.3s) learning_rate=0.00312"
    assert len(lines) == 3


def _components(cfg, root, hyperparameters_uri=""):
    p = create_pipeline(cfg, data_root="/data", data_pattern="taxi.csv", schema_path="/s/taxi.pbtxt",
                        pipeline_root=str(root / "pr"), serving_dir=str(root / "serving"),
                        metadata_connection_config=tfx.orchestration.metadata.sqlite_metadata_connection_config(
                            str(root / "m.sqlite")), hyperparameters_uri=hyperparameters_uri)
    return {c.id: c for c in p.components}


def test_the_tuner_runs_before_the_trainer_and_hands_it_the_best_values(tmp_path):
    cfg = load_config(overrides=[f"output_root={tmp_path}", "tuning.enabled=true", "tuning.max_trials=4"])
    c = _components(cfg, tmp_path)
    tuner, trainer = c[TUNER_ID], c["Trainer"]
    assert trainer.inputs["hyperparameters"].producer_component_id == TUNER_ID
    assert tuner.inputs["transform_graph"].producer_component_id == "Transform"
    assert tuner.exec_properties["tuner_fn"] == "tfxline.trainer.tune.tuner_fn"
    # the trials fit and validate on the Trainer's splits, with its settings and the search
    assert tuner.exec_properties["train_args"] == trainer.exec_properties["train_args"]
    assert tuner.exec_properties["eval_args"] == trainer.exec_properties["eval_args"]
    config = json.loads(tuner.exec_properties["custom_config"])
    assert config == json.loads(json.dumps(tuner_custom_config(cfg)))
    assert config["tuning"]["max_trials"] == 4 and "reuse" not in config["tuning"]
    # the Trainer's cache key does not move with the search's settings
    other = load_config(overrides=[f"output_root={tmp_path}", "tuning.enabled=true", "tuning.max_trials=9"])
    assert trainer_custom_config(other) == trainer_custom_config(cfg)
    assert TUNER_ID not in _components(load_config(overrides=[f"output_root={tmp_path}"]), tmp_path)


def test_reuse_imports_saved_values_instead_of_tuning(tmp_path):
    cfg = load_config(overrides=[f"output_root={tmp_path}", "tuning.enabled=true", "tuning.reuse=latest"])
    c = _components(cfg, tmp_path, hyperparameters_uri="/saved/hp")
    assert TUNER_ID not in c
    assert c[REUSED_ID].exec_properties["artifact_uri"] == "/saved/hp"
    assert c["Trainer"].inputs["hyperparameters"].producer_component_id == REUSED_ID


def test_reuse_is_resolved_before_the_run(tmp_path):
    from tfxline.local import reuse
    from tfxline.pipeline.data.source import DataError

    def resolve(value):
        return reuse.hyperparameters_uri(load_config(overrides=[f"output_root={tmp_path / 'out'}",
                                                                f"tuning.reuse={value}"]))

    with pytest.raises(DataError, match="tuning.reuse: latest: no tuned run of 'taxi'"):
        resolve("latest")
    with pytest.raises(DataError, match="no such file"):
        resolve(str(tmp_path / "missing.txt"))
    (tmp_path / "bad.txt").write_text("learning_rate=0.1")
    with pytest.raises(DataError, match="is not a Tuner's best hyperparameters"):
        resolve(str(tmp_path / "bad.txt"))
    saved = tmp_path / "saved"
    saved.mkdir()
    (saved / "best_hyperparameters.txt").write_text(json.dumps({"space": [], "values": {"dropout": 0.1}}))
    (saved / "notes.md").write_text("not for the Trainer")
    folder = resolve(str(saved))  # a folder with the file in it, or the file itself: the same import
    assert folder == resolve(str(saved / "best_hyperparameters.txt"))
    assert os.listdir(folder) == ["best_hyperparameters.txt"]  # alone: TFX's Trainer reads the only file


def test_init_tune_writes_a_budget_that_fits_the_table(capsys, tmp_path):
    from tfxline.cli import main as cli

    data = os.path.join(os.path.dirname(__file__), "data", "tables", "mortgage_denial.csv")
    assert cli.main(["init", "--data", data, "--label", "deny", "--dir", str(tmp_path / "p"), "--tune"]) == 0
    assert "tuning: 2381 labelled rows: up to 20 trials within 5 minutes" in capsys.readouterr().out
    path = tmp_path / "p" / "config.yaml"
    assert yaml.safe_load(path.read_text())["tuning"]["max_minutes"] == 5
    cfg = load_config(str(path))
    assert cfg.tuning.enabled and cfg.tuning.tunes and cfg.tuning.max_trials == 20
    assert cfg.tuning.algorithm == "bayesian" and cfg.tuning.objective == "auto"
    assert cli.main(["init", "--data", data, "--label", "deny", "--dir", str(tmp_path / "q")]) == 0
    assert "tuning" not in yaml.safe_load((tmp_path / "q" / "config.yaml").read_text())


def test_the_documented_defaults_are_the_task_types():
    """tuning.space's field comments (docs/configuration.md) state the task type's defaults."""
    from tfxline import task_types
    from tools.config_reference import field_comments

    comments = field_comments(T.SearchSpace)
    for key, values in task_types.get("binary").tuning_space().items():
        assert f"default [{', '.join(f'{v:g}' for v in values)}]" in comments[key], key
