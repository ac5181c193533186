"""How the trees read a categorical column (model.trees.encoding, issue #73): as categories, or as
rates (trees/rates.py: the category's label mean, out of fold on the train rows, smoothed),
the tables inside the exported model, and auto's choice on the watched validation rows
(trainer/trees_run.py fit_best)."""
import numpy as np
import pytest

from tfxline.pipeline.config import ConfigError
from tfxline.pipeline.config.load import load_config
from tfxline.runs.training_notes import family_line
from tfxline.trees import rates as R
from tfxline.trees import settings as T
from tfxline.transforms import features as F


def spec_of(task="binary", categorical=True):
    label = {"name": "y", "transform": "binary" if task == "binary" else
             "class_vocabulary" if task == "multiclass" else "regression"}
    inputs = [{"name": "x", "transform": "zscore"}]
    if categorical:
        inputs.append({"name": "c", "transform": "vocabulary"})
    return F.FeatureSpec.from_dict({"label": label, "inputs": inputs})


def test_a_rate_is_the_categorys_label_mean_smoothed_toward_the_overall_mean():
    values = np.array([0, 0, 0, 2, 2, 5])
    labels = np.array([1, 1, 0, 0, 0, 1], np.float64)
    table = R.table(values, labels)
    prior = labels.mean()
    expected = [(2 + 20 * prior) / 23, prior, (0 + 20 * prior) / 22, prior, prior, (1 + 20 * prior) / 21, prior]
    np.testing.assert_allclose(table, expected, rtol=1e-6)  # index 1, 3, 4 never seen: the overall mean
    # an index past the table, or a negative one, reads the overall mean (the last value)
    np.testing.assert_allclose(R.lookup(table, np.array([5, 6, 99, -1])), [expected[5], prior, prior, prior], rtol=1e-6)


def test_a_train_rows_rate_never_reads_its_own_label():
    """Out of fold: flipping row i's label changes no number of row i's own fold, and does change
    the other folds' numbers for its category."""
    rng = np.random.default_rng(0)
    values = rng.integers(0, 6, 200)
    labels = rng.integers(0, 2, 200).astype(np.float64)
    before = R.out_of_fold({"c": values}, labels, ["c"])["c"]
    flipped = labels.copy()
    flipped[7] = 1 - flipped[7]
    after = R.out_of_fold({"c": values}, flipped, ["c"])["c"]
    own_fold = np.arange(200) % R.FOLDS == 7 % R.FOLDS
    np.testing.assert_array_equal(before[own_fold], after[own_fold])
    same_category = (values == values[7]) & ~own_fold
    assert np.all(before[same_category] != after[same_category])
    # each fold's numbers are the table of the other folds' rows
    fold = np.arange(200) % R.FOLDS == 2
    np.testing.assert_allclose(before[fold], R.lookup(R.table(values[~fold], labels[~fold]), values[fold]))


def test_which_readings_train_and_a_rate_on_a_multiclass_label_is_refused_in_one_line():
    auto = T.TreesConfig()
    assert auto.encoding == "auto"
    assert T.encodings(auto, spec_of("binary")) == ("category", "rate")
    assert T.encodings(auto, spec_of("regression")) == ("category", "rate")
    assert T.encodings(auto, spec_of("multiclass")) == ("category",)  # no one mean per category
    assert T.encodings(auto, spec_of("binary", categorical=False)) == ("category",)  # the two are one forest
    assert T.encodings(T.TreesConfig(encoding="rate"), spec_of()) == ("rate",)
    assert [p.key for p in T.TreesConfig(encoding="target").problems()] == ["encoding"]
    assert load_config("penguin", overrides=["model.family=auto", "model.trees.encoding=rate", "serving.tflite=dynamic"])
    with pytest.raises(ConfigError, match=r"model.trees.encoding: 'target'; use one of auto, category, rate"):
        load_config(overrides=["model.family=auto", "model.trees.encoding=target"])
    assert T.encoding_problem(spec_of("multiclass"), "trees", "rate")
    assert not T.encoding_problem(spec_of("multiclass"), "network", "rate")  # no trees train
    with pytest.raises(ConfigError) as e:
        load_config("penguin", overrides=["model.family=auto", "model.trees.encoding=rate"])  # species: 3 classes
    assert "\n" not in str(e.value) and "model.trees.encoding" in str(e.value) and "no one mean per category" in str(e.value)
    assert not T.encoding_problem(spec_of("binary"), "auto", "rate")


def noisy_table(n=1200, seed=0):
    """A binary label from x and one category's effect, beside a column of 60 noise categories."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n).astype(np.float32)
    c = rng.integers(0, 60, n).astype(np.int64)
    labels = (x + rng.normal(scale=0.8, size=n) + 0.8 * (c % 7 == 0) > 0.5).astype(np.int64)
    return {"x_xf": x, "c_xf": c}, labels


def test_a_rate_forest_reads_its_tables_inside_the_model_and_an_unseen_category_the_overall_mean():
    from tfxline.trainer import trees
    from tfxline.trainer.model import predictions

    features, labels = noisy_table()
    config = T.TreesConfig(num_trees=20, encoding="rate")
    model = trees.fit((features, labels), None, spec_of(), config, 1, ["x_xf", "c_xf"], seed=1)
    assert model.trees_encoding == "rate" and model.trees_rated == ["c"]
    import ydf

    kinds = {c.name: c.type for c in model.ydf_model.data_spec().columns}
    assert kinds["c_xf"] == kinds["x_xf"] == ydf.Semantic.DISCRETIZED_NUMERICAL.to_proto_type()  # a number, binned
    table = R.table(features["c_xf"], labels)
    probe = {"x_xf": features["x_xf"][:50], "c_xf": np.concatenate([features["c_xf"][:48], [9_999, -3]])}
    out = np.asarray(predictions(model)(probe))[:, 0]
    own = np.asarray(model.ydf_model.predict({"x_xf": probe["x_xf"], "c_xf": R.lookup(table, probe["c_xf"])}))
    np.testing.assert_allclose(out, own.reshape(-1), atol=1e-5)
    prior = {"x_xf": probe["x_xf"][48:], "c_xf": np.full(2, table[-1], np.float32)}
    np.testing.assert_allclose(out[48:], np.asarray(model.ydf_model.predict(prior)).reshape(-1), atol=1e-5)
    # the refit reads the categories as the kept forest did, its table learnt on every row it trains on
    again = trees.refit(model, (features, labels), (features, labels), spec_of(), config, 1, ["x_xf", "c_xf"], seed=1)
    assert again.trees_encoding == "rate"
    assert trees.fit((features, labels), None, spec_of(), T.TreesConfig(num_trees=5), 1,
                     ["x_xf", "c_xf"]).trees_encoding == "category"  # auto, fitted alone: categories


def test_a_rate_forest_saves_and_serves_the_same_outputs(tmp_path):
    import tensorflow as tf

    from tfxline.trainer import trees
    from tfxline.trainer.model import predictions

    features, labels = noisy_table(400, seed=2)
    model = trees.fit((features, labels), None, spec_of(), T.TreesConfig(num_trees=10, encoding="rate"), 1,
                      ["x_xf", "c_xf"], seed=1)
    expected = np.asarray(predictions(model)(features))
    call = tf.function(lambda x, c: model({"x_xf": x, "c_xf": c}))
    module = tf.Module()
    module.serve = call.get_concrete_function(tf.TensorSpec([None], tf.float32), tf.TensorSpec([None], tf.int64))
    module.model = model
    tf.saved_model.save(module, str(tmp_path / "saved"))
    loaded = tf.saved_model.load(str(tmp_path / "saved"))
    np.testing.assert_allclose(np.asarray(loaded.serve(features["x_xf"], features["c_xf"])), expected, atol=1e-5)


@pytest.mark.parametrize("scores,kept", [({"category": 0.70, "rate": 0.72}, "rate"),
                                         ({"category": 0.72, "rate": 0.70}, "category"),
                                         ({"category": 0.71, "rate": 0.71}, "category")])  # a tie: categories
def test_auto_keeps_the_reading_better_on_the_watched_rows(monkeypatch, scores, kept):
    from tfxline.trainer import family, trees_run
    from tfxline.trainer.trees import describe as trees_describe

    features, labels = noisy_table(400, seed=3)
    monkeypatch.setattr(family, "score", lambda outputs, labels, spec: scores[current.pop(0)])
    current = ["category", "rate"]  # fit_best scores them in this order
    model = trees_run.fit_best((features, labels), (features, labels), spec_of(), T.TreesConfig(num_trees=5), 1,
                               ["x_xf", "c_xf"])
    assert model.trees_encoding == kept
    assert model.trees_reading == {"encoding_scores": scores, "encoding_rows": 400}
    assert trees_describe(model)["encoding"] == kept  # training_run.json's trees record
    assert trees_run.fit_best((features, labels), (features, labels), spec_of("multiclass"),
                              T.TreesConfig(num_trees=5), 2, ["x_xf", "c_xf"]).trees_encoding == "category"


def test_the_summary_says_how_the_trees_read_the_categories_and_on_which_rows():
    info = {"family": {"configured": "trees", "chosen": "trees", "seconds": {"trees": 2.0}},
            "trees": {"trees": 100, "encoding": "rate", "encoding_scores": {"category": 0.6843, "rate": 0.7012},
                      "encoding_rows": 250}}
    assert family_line(info) == ("trees: 100 trees, trained in 2.0 s; the trees read categories as label rates, "
                                 "chosen on 250 validation rows (categories 0.6843, label rates 0.7012)")
    # two families: the reading was chosen on the watched half, not the held half the family's scores are on
    info["family"] = {"configured": "auto", "chosen": "average", "metric": "auc", "runner_up": "network",
                      "scores": {"network": 0.70, "trees": 0.71, "average": 0.72}, "margin": 0.01, "noise": 0.03,
                      "validation_rows": 250, "watched_rows": 250, "seconds": {"network": 3.0, "trees": 2.0}}
    assert family_line(info).endswith("; the trees read categories as label rates, chosen on the other 250 rows, "
                                      "which early stopping read (categories 0.6843, label rates 0.7012)")
    info["trees"] = {"trees": 100, "encoding": "category"}  # one reading trained: nothing said
    assert "read categories" not in family_line(info)
