"""The trees family (issue #73): which families a spec trains (trees/settings.py), the forest
trained by YDF and wrapped as the network's Keras shape (trainer/trees.py), the choice among network,
trees and their average (trainer/family.py), its config checks and the summary line."""
import dataclasses

import numpy as np
import pytest

from tfxline.pipeline.config import ConfigError
from tfxline.pipeline.config.load import load_config
from tfxline.runs.training_notes import family_line
from tfxline.trees import settings as T
from tfxline.transforms import features as F


def spec_of(task="binary", text=False):
    label = {"name": "y", "transform": "binary" if task == "binary" else
             "class_vocabulary" if task == "multiclass" else "regression"}
    inputs = [{"name": "x", "transform": "zscore"}, {"name": "c", "transform": "vocabulary"}]
    if text:
        inputs.append({"name": "review", "transform": "text"})
    return F.FeatureSpec.from_dict({"label": label, "inputs": inputs})


def test_which_families_a_spec_trains():
    table, text = spec_of(), spec_of(text=True)
    assert T.families(table, "network") == ("network",)
    assert T.families(table, "trees") == ("trees",)
    assert T.families(table, "auto") == ("network", "trees")
    assert T.families(text, "auto") == ("network",)  # text keeps the network
    assert T.trained_family("auto", tflite=True) == "network" and T.trained_family("auto", tflite=False) == "auto"
    assert T.trees_problem(table, "trees") == "" and T.trees_problem(table, "auto") == ""
    assert "text feature(s) review" in T.trees_problem(text, "trees")
    assert "TFLite has no decision-forest ops" in T.trees_problem(table, "trees", tflite=True)


def test_trees_with_tflite_or_a_bad_value_is_refused_in_one_line():
    with pytest.raises(ConfigError) as e:
        load_config(overrides=["model.family=trees", "serving.tflite=dynamic"])
    message = str(e.value)
    assert "\n" not in message and "model.family" in message and "set model.family: network" in message
    with pytest.raises(ConfigError, match=r"model.family: 'forest'; use one of network, trees, auto"):
        load_config(overrides=["model.family=forest"])
    with pytest.raises(ConfigError, match=r"model.trees.algorithm: 'xgboost'; use one of boosted, forest"):
        load_config(overrides=["model.family=trees", "model.trees.algorithm=xgboost"])
    # auto with a TFLite export trains the network alone, and says nothing of trees to the Trainer
    cfg = load_config(overrides=["model.family=auto", "serving.tflite=dynamic"])
    assert cfg.trainer_settings.model.family == "network"
    assert "family" not in cfg.trainer_settings.to_custom_config()["model"]


def test_a_network_configs_trainer_keys_and_cache_key_are_unchanged():
    """model.family and model.trees reach the Trainer only where read: a network config's
    custom_config (so its cache key) is what it was before the family existed."""
    network = load_config().trainer_settings.to_custom_config()["model"]
    assert "family" not in network and "trees" not in network
    auto = load_config(overrides=["model.family=auto", "model.trees.num_trees=50"]).trainer_settings
    model = auto.to_custom_config()["model"]
    assert model["family"] == "auto" and model["trees"]["num_trees"] == 50
    from tfxline.trainer.settings import TrainerSettings
    assert TrainerSettings.from_custom_config(auto.to_custom_config()) == auto  # read back as written


def test_class_columns_follow_the_label_index_not_ydfs_string_order():
    from tfxline.trainer.trees import class_columns

    ydf_order = [str(i) for i in sorted(range(12), key=str)]  # '0', '1', '10', '11', '2', ...
    columns = class_columns(ydf_order, 12)
    assert [ydf_order[c] for c in columns] == [str(i) for i in range(12)]
    assert class_columns(["0", "1"], 1) == [1]            # binary: P(positive)
    assert class_columns(["0", "2"], 3) == [0, 2, 1]      # class 1 never trained: the zero column
    assert class_columns([], 1) == []                     # regression


def table(n=600, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n).astype(np.float32)
    c = rng.integers(0, 4, n).astype(np.int64)
    return {"x_xf": x, "c_xf": c}, x, c


@pytest.mark.parametrize("task", ["binary", "multiclass", "regression"])
def test_the_forest_is_a_keras_model_with_the_networks_inputs_and_output(task):
    """The Keras wrapper gives what the network's head gives ([rows, units], classes in label-index
    order), reads only its own inputs (the cross is passed and ignored) and equals YDF's own predict."""
    from tfxline.trainer import trees
    from tfxline.trainer.model import predictions

    features, x, c = table()
    labels = {"binary": (x + (c == 2) > 0.5).astype(np.int64),
              "multiclass": (c + 4 * (x > 0.6) + 8 * (x < -0.6)).astype(np.int64),  # 12 classes
              "regression": (2 * x + c).astype(np.float32)}[task]
    units = {"binary": 1, "multiclass": 12, "regression": 1}[task]
    features = dict(features, cross_xf=np.zeros_like(c))
    spec = spec_of(task)
    model = trees.fit((features, labels), (features, labels), spec, T.TreesConfig(num_trees=30), units,
                      ["x_xf", "c_xf", "cross_xf"], seed=1)
    out = np.asarray(predictions(model)(features))
    assert out.shape == (len(x), units)
    own = np.asarray(model.ydf_model.predict({"x_xf": features["x_xf"], "c_xf": features["c_xf"]}))
    if task == "multiclass":
        order = [int(k) for k in model.ydf_model.label_classes()]
        assert sorted(order) == list(range(12))
        np.testing.assert_allclose(out[:, order], own, atol=1e-5)
        assert (np.argmax(out, axis=1) == labels).mean() > 0.9
    else:
        np.testing.assert_allclose(out[:, 0], own.reshape(-1), atol=1e-5)
    names = [name for name, _ in trees.importances(model)]
    assert set(names) <= {"x", "c"} and names  # the columns' own names, not the transformed ones


def test_auto_keeps_the_best_on_validation_or_the_average():
    """Three fixed 'models' with known outputs: the best by the task's main metric is kept, and
    their average when it beats both."""
    import tensorflow as tf

    from tfxline.trainer import family
    from tfxline.trainer.keras_compat import keras

    k = keras()
    labels = np.array([0, 1, 0, 1, 0, 1, 1, 0], np.int64)
    x = np.arange(8, dtype=np.float32)

    def fixed(values):
        inp = {"x_xf": k.Input(shape=(), name="x_xf", dtype="float32")}
        table = tf.constant(np.asarray(values, np.float32).reshape(-1, 1))
        out = k.layers.Lambda(lambda t: tf.gather(table, tf.cast(t, tf.int32)))(inp["x_xf"])
        return k.Model(inp, out)

    validation = tf.data.Dataset.from_tensor_slices(({"x_xf": x}, labels)).batch(4)
    good = [0.1, 0.9, 0.2, 0.6, 0.3, 0.8, 0.7, 0.65]   # AUC 0.9375: one pair out of order
    worse = [0.2, 0.7, 0.1, 0.9, 0.6, 0.5, 0.8, 0.3]   # AUC 0.875
    spec = spec_of()
    model, info = family.choose([family.Candidate("network", fixed(worse), 1.0),
                                 family.Candidate("trees", fixed(good), 0.5)], validation, 2, spec, "auto")
    assert info["chosen"] in ("trees", "average") and info["scores"]["trees"] == pytest.approx(0.9375)
    assert info["validation_rows"] == 8 and info["seconds"] == {"network": 1.0, "trees": 0.5}
    # 400 rows: two outputs with independent errors, their mean beyond one standard error of either
    rng = np.random.default_rng(0)
    many = rng.integers(0, 2, 400)
    rows = tf.data.Dataset.from_tensor_slices(({"x_xf": np.arange(400, dtype=np.float32)}, many)).batch(100)
    complementary = [many + rng.normal(0, 1, 400), many + rng.normal(0, 1, 400)]
    model, info = family.choose([family.Candidate("network", fixed(complementary[0]), 1.0),
                                 family.Candidate("trees", fixed(complementary[1]), 1.0)], rows, 4, spec, "auto")
    assert info["chosen"] == "average" and info["runner_up"] in ("network", "trees")
    assert info["scores"]["average"] - max(info["scores"]["network"], info["scores"]["trees"]) > info["noise"]
    served = np.asarray(model({"x_xf": tf.constant(np.arange(400, dtype=np.float32))})).reshape(-1)
    np.testing.assert_allclose(served, np.mean(complementary, axis=0), atol=1e-5)
    # the network a little better (within one standard error): still the best on validation is kept
    # (a rule keeping the trees on such a tie lost on the bench tables: docs/trees.md)
    ahead = many + rng.normal(0, 0.8, 400)
    slightly = ahead.copy()
    slightly[:8] += 1 - 2 * many[:8]  # the same outputs, with the label's signal turned round on 8 rows
    model, info = family.choose([family.Candidate("network", fixed(ahead), 1.0),
                                 family.Candidate("trees", fixed(slightly), 1.0)], rows, 4, spec, "auto")
    best = max(info["scores"], key=info["scores"].get)
    assert info["chosen"] == best != "trees" and 0 < info["scores"][best] - info["scores"]["trees"] <= info["noise"]
    assert f"kept {best}" in family_line({"family": info}) and "within one standard error" in family_line(
        {"family": info})


def test_the_summary_says_which_family_was_kept_and_by_how_much():
    auto = {"family": {"configured": "auto", "chosen": "trees", "metric": "auc", "runner_up": "average",
                       "scores": {"network": 0.829, "trees": 0.8421, "average": 0.84}, "margin": 0.0021,
                       "noise": 0.013, "validation_rows": 1000, "seconds": {"network": 31.2, "trees": 4.06}}}
    line = family_line(auto)
    assert line.startswith("auto kept trees: validation auc 0.8421, network 0.8290, average 0.8400")
    assert "within one standard error 0.0130 on 1000 rows" in line and "network 31.2 s, trees 4.1 s" in line
    assert family_line({"family": {"configured": "trees", "chosen": "trees", "seconds": {"trees": 2.4}},
                        "trees": {"trees": 68}}) == "trees: 68 trees, trained in 2.4 s"
    assert family_line({"family": {"configured": "auto", "chosen": "network", "seconds": {"network": 3.0}}}) == (
        "network (auto: images and text keep the network): trained in 3.0 s")
    assert family_line({"family": {"configured": "network", "chosen": "network"}}) == ""
    assert family_line({}) == ""  # a record from before the family existed
    held = dict(auto["family"], validation_rows=500, watched_rows=500)
    assert "on 500 rows held out of early stopping, which read the other 500)" in family_line({"family": held})


@pytest.mark.parametrize("rows,batch", [(11, 4), (2, 8), (9, 1)])
def test_auto_splits_the_validation_rows_into_a_watched_half_and_a_held_half(rows, batch):
    """The choice reads rows early stopping never read: the tf.data halves (the network's) and the
    numpy halves (the trees') are the same rows, alternate, and together every validation row."""
    import tensorflow as tf

    from tfxline.trainer.inputs import Inputs, split_validation
    from tfxline.trainer.trees_run import watched

    ids = np.arange(rows, dtype=np.int64)
    validation = tf.data.Dataset.from_tensor_slices(({"x": ids}, ids * 10)).batch(batch)
    whole = Inputs(None, validation, -(-rows // batch), False, None, validation_rows=rows)
    split = split_validation(whole, batch)

    def read(ds, steps):
        got = [(np.asarray(f["x"]), np.asarray(y)) for f, y in ds.take(steps)]
        return np.concatenate([g[0] for g in got]), np.concatenate([g[1] for g in got])

    seen, labels = read(split.watched, split.watched_steps)
    held, held_labels = read(split.held, split.held_steps)
    assert list(seen) == list(range(0, rows, 2)) and list(held) == list(range(1, rows, 2))
    assert list(labels) == list(seen * 10) and list(held_labels) == list(held * 10)
    assert split.held_rows == len(held) and split.validation_rows == rows  # the threshold still reads all rows
    columns = watched(({"x": ids}, ids * 10), split)
    assert list(columns[0]["x"]) == list(seen) and list(columns[1]) == list(labels)
    assert watched(({"x": ids}, ids), dataclasses.replace(split, held_rows=rows))[0]["x"].tolist() == ids.tolist()


def test_init_writes_auto_for_a_table_and_the_network_for_text(tmp_path):
    from tfxline.cli import init_project

    plan = dataclasses.replace  # the Plan's family reads its inputs alone
    base = init_project.Plan("t", "d.csv", 10, 10, {}, "binary", "", [{"name": "x", "transform": "zscore"}],
                             [], [], (8, 1, 1), 32, 10, 2, 1, "")
    assert base.family[0] == "auto"
    assert plan(base, inputs=[{"name": "review", "transform": "text"}]).family[0] == "network"


def test_a_kubeflow_spec_with_auto_compiles_and_carries_the_family(tmp_path):
    import json

    from tfxline.kubeflow import compile as kfp_compile

    cfg = load_config(overrides=["model.family=auto", "model.trees.num_trees=120"])
    out = str(tmp_path / "pipeline.json")
    job = kfp_compile.compile_pipeline(cfg, image="example.com/tfxline:test", pipeline_root="gs://b/r", output=out)
    params = job["pipelineSpec"]["root"]["dag"]["tasks"]["Trainer"]["inputs"]["parameters"]
    trainer = json.dumps(params)
    assert '\\"family\\": \\"auto\\"' in trainer and '\\"num_trees\\": 120' in trainer
    evaluator = json.dumps(job["pipelineSpec"]["deploymentSpec"]["executors"])
    assert "tfxline.components.serving_baseline.EvaluatorExecutor" in evaluator  # loads the ops (evaluator_models)


@pytest.mark.parametrize("family", ["trees", "auto"])
def test_the_report_shows_the_candidates_and_what_the_trees_lean_on(family):
    """The training section of a trees-only record (no scores: one family trained) and of an auto
    record (three candidates), rendered on literal data."""
    from tests.test_report_render import failed_early_run
    from tfxline.runs.report import render

    record = {"configured": family, "chosen": "trees", "seconds": {"trees": 2.0}}
    if family == "auto":
        record.update(metric="auc", scores={"network": 0.81, "trees": 0.84, "average": 0.83}, margin=0.01,
                      runner_up="average", noise=0.02, validation_rows=500, seconds={"network": 9.0, "trees": 2.0})
    info = {"family": record, "trees": {"trees": 42, "importance": [["fare", 0.61], ["company", 0.39]]}}
    data = failed_early_run()
    settings = dict.fromkeys(("strategy", "device", "replicas", "precision", "examples_per_second", "mode", "epochs",
                              "best_epoch", "resumed_at_epoch", "steps", "global_batch", "learning_rate",
                              "gradient_accumulation_steps", "jit_compile", "train_seconds", "early_stopping",
                              "batch_reason"))
    data["training"] = {"available": True, "curves": {}, "logdir": "/o/model_run", "settings": settings,
                        "profile": None,
                        "family": info["family"], "trees": info["trees"], "family_line": family_line(info)}
    html = render.render(data)
    assert "<h3>Model family</h3>" in html and family_line(info) in html
    assert "<td>fare</td>" in html and "<h3>What the trees lean on</h3>" in html
    assert ("<td>trees (kept)</td>" in html) == (family == "auto")


@pytest.mark.parametrize("config", [T.TreesConfig(algorithm="forest", num_trees=10),
                                    T.TreesConfig(categorical="random", num_trees=10),
                                    T.TreesConfig(num_trees=10, max_depth=3, min_examples=20)])
def test_every_algorithm_and_categorical_setting_trains(config):
    """A forest trains without the validation set YDF refuses it; each categorical algorithm runs."""
    from tfxline.trainer import trees

    features, x, c = table(300)
    labels = (x > 0).astype(np.int64)
    model = trees.fit((features, labels), (features, labels), spec_of(), config, 1, ["x_xf", "c_xf"])
    assert 1 <= model.ydf_model.num_trees() <= 10


@pytest.mark.parametrize("task,units", [("binary", 1), ("multiclass", 3)])
def test_the_refit_trains_on_train_and_validation_at_early_stoppings_iterations(task, units, monkeypatch):
    """model.trees.refit: the kept forest trained again on both splits' rows, with as many boosting
    iterations as early stopping kept (a multi-class forest grows one tree per class each), and no
    share of those rows carved out for a validation of its own. (Early stopping only above
    EARLY_STOPPING_ROWS training rows: lowered here to 100 for a 500-row split.)"""
    from tfxline.trainer import trees

    monkeypatch.setattr(trees, "EARLY_STOPPING_ROWS", 100)
    features, x, c = table(800, seed=2)
    labels = ((x > 0).astype(np.int64) + (c == 3)) if task == "multiclass" else (x + 0.3 * c > 0.4).astype(np.int64)
    train = ({n: v[:500] for n, v in features.items()}, labels[:500])
    validation = ({n: v[500:] for n, v in features.items()}, labels[500:])
    config = T.TreesConfig(num_trees=200, bins=-1)  # exact splits: binned, the multi-class rows never stop
    model = trees.fit(train, validation, spec_of(task), config, units, ["x_xf", "c_xf"], seed=1)
    kept = trees.iterations(model)
    assert kept < 200  # early stopping ended it on the validation rows
    again = trees.refit(model, train, validation, spec_of(task), config, units, ["x_xf", "c_xf"], seed=1)
    assert trees.iterations(again) == kept
    assert again.ydf_model.num_trees() == model.ydf_model.num_trees()
    # all 800 rows read, none held out for a validation loss of its own (the first fit had one)
    assert again.ydf_model.data_spec().created_num_rows == 800 and again.ydf_model.validation_loss() is None
    assert model.ydf_model.validation_loss() is not None
    assert T.TreesConfig().refit and not dataclasses.replace(config, refit=False).refit


def test_below_early_stoppings_rows_boosted_trees_grow_every_iteration():
    """Under EARLY_STOPPING_ROWS training rows the validation split does not stop the boosting: all
    of num_trees grow, on the train rows alone (no validation loss of YDF's own either)."""
    from tfxline.trainer import trees

    features, x, c = table(600, seed=3)
    labels = (x + 0.3 * c > 0.4).astype(np.int64)
    train = ({n: v[:400] for n, v in features.items()}, labels[:400])
    validation = ({n: v[400:] for n, v in features.items()}, labels[400:])
    model = trees.fit(train, validation, spec_of(), T.TreesConfig(num_trees=120), 1, ["x_xf", "c_xf"], seed=1)
    assert trees.iterations(model) == 120 and model.ydf_model.validation_loss() is None
    assert model.ydf_model.data_spec().created_num_rows == 400


def binned_values(model, column: str):
    """How many values the trained forest bins ``column`` into (None: not binned: exact or categorical)."""
    import ydf

    (spec,) = [c for c in model.ydf_model.data_spec().columns if c.name == column]
    discretized = ydf.Semantic.DISCRETIZED_NUMERICAL.to_proto_type()
    return len(spec.discretized_numerical.boundaries) + 1 if spec.type == discretized else None


def test_a_setting_left_at_0_trains_with_its_algorithms_usual_value():
    """num_trees, max_depth and min_examples at 0 (the defaults) are the algorithm's usual: the boosted
    trees' scikit-learn's HistGradientBoosting defaults (100 trees, 20 rows a leaf), the forest's YDF's;
    a value set is kept. What YDF trains is what resolved() says."""
    from tfxline.trainer import trees

    assert T.resolved(T.TreesConfig()) == T.TreesConfig(num_trees=100, max_depth=6, min_examples=20, bins=255)
    forest = T.resolved(T.TreesConfig(algorithm="forest"))
    assert (forest.num_trees, forest.max_depth, forest.min_examples, forest.bins) == (300, 16, 5, T.EXACT)
    assert T.resolved(T.TreesConfig(num_trees=7, min_examples=3)).num_trees == 7
    hyper = trees.learner(T.TreesConfig(), "binary", [("x_xf", False)], seed=0, rows=3_500).hyperparameters
    assert (hyper["num_trees"], hyper["max_depth"], hyper["min_examples"]) == (100, 6, 20)
    features, x, c = table(300, seed=4)
    def fitted(config):
        return trees.fit((features, (x > 0.5).astype(np.int64)), None, spec_of(), config, 1, ["x_xf", "c_xf"], seed=1)

    model = fitted(T.TreesConfig())
    assert trees.iterations(model) == 100
    # the boosted trees bin a numeric column into at most 255 values (HistGradientBoosting's max_bins)
    # before training; bins -1: exact splits (YDF's NUMERICAL); a categorical column is not binned
    assert 16 < binned_values(model, "x_xf") <= 255 and binned_values(model, "c_xf") is None
    assert 2 < binned_values(fitted(T.TreesConfig(bins=16)), "x_xf") <= 16
    exact = fitted(T.TreesConfig(bins=-1))
    assert binned_values(exact, "x_xf") is None and np.asarray(exact({"x_xf": features["x_xf"][:5],
                                                                      "c_xf": features["c_xf"][:5]})).shape == (5, 1)
    problems = list(T.TreesConfig(num_trees=-1, min_examples=-2).problems())
    assert [p.key for p in problems] == ["num_trees", "min_examples"]
    assert all(p.fix.startswith("must be >= 0") for p in problems)
    assert [p.key for p in T.TreesConfig(bins=1).problems()] == ["bins"]
    assert not list(T.TreesConfig(bins=-1).problems()) and not list(T.TreesConfig(bins=64).problems())


def test_the_trees_train_on_one_thread_below_small_rows_and_every_core_above():
    """model.trees.threads 0: one thread on a small table (YDF's per-node hand-out costs more than it
    saves there: 2.4 s against 18.9 s on two cores, docs/trees.md), YDF's own above SMALL_ROWS; a
    value set is kept, a negative one refused. What YDF is given is what threads() says."""
    from tfxline.trainer import trees

    assert T.threads(T.TreesConfig(), 3_500) == 1 and T.threads(T.TreesConfig(), T.SMALL_ROWS) is None
    assert T.threads(T.TreesConfig(threads=4), 3_500) == 4
    assert [p.key for p in T.TreesConfig(threads=-1).problems()] == ["threads"]
    import ydf

    def given(rows):  # the threads the learner was given (YDF's deployment config)
        return trees.learner(T.TreesConfig(), "binary", [("x_xf", False)], seed=0, rows=rows)._deployment_config.num_threads

    assert given(3_500) == 1
    assert given(50_000) == ydf.GradientBoostedTreesLearner(label="y")._deployment_config.num_threads
