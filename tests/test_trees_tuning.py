"""The Tuner's search of the trees' space (trainer/trees_search.py): its candidates, how its best
values reach the Trainer (``trees.KEY`` in best_hyperparameters, laid over model.trees), and its
summary line. The search itself runs in the tuned run (tests/test_tuning_e2e.py, model.family auto)."""
from tfxline.pipeline.config.load import load_config
from tfxline.trainer import trees_search
from tfxline.trainer import tuning_settings as T
from tfxline.trees.settings import TreesConfig


def test_candidates_are_distinct_seeded_and_never_the_configs_own():
    own = TreesConfig()
    first = trees_search.candidates(own, 12, seed=42)
    assert first == trees_search.candidates(own, 12, seed=42) and len(first) == 12
    keys = [tuple(c[k] for k in trees_search.SPACE) for c in first]
    assert len(set(keys)) == 12 and tuple(getattr(own, k) for k in trees_search.SPACE) not in keys
    # nor one that resolves to the config's own (min_examples 20 is the boosted trees' usual, as 0 is)
    usual = [c for c in trees_search.candidates(own, 1000, seed=0)
             if c["algorithm"] == "boosted" and c["max_depth"] == 0 and c["shrinkage"] == own.shrinkage
             and c["categorical"] == own.categorical]
    assert usual and all(c["min_examples"] != 20 for c in usual)
    assert all(c["shrinkage"] == own.shrinkage for c in first if c["algorithm"] == "forest")  # a forest reads none
    assert len(trees_search.candidates(own, 1000, seed=0)) < 3 * 3 * 2 * 3 * 2  # the forest's shrinkage folded


def test_the_trees_best_values_reach_the_trainers_model_trees():
    record = {"kept_config": False, "best": {"values": {"max_depth": 8, "categorical": "random", "shrinkage": 0.05}}}
    values = trees_search.best_values(record)
    assert values == {"trees.max_depth": 8, "trees.categorical": "random", "trees.shrinkage": 0.05}
    assert trees_search.best_values(dict(record, kept_config=True)) == {}
    settings = load_config(overrides=["model.family=auto", "model.learning_rate=0.01"]).trainer_settings
    tuned = T.tuned(settings, {"learning_rate": 0.002, **values})
    assert tuned.model.trees == TreesConfig(max_depth=8, categorical="random", shrinkage=0.05)
    assert tuned.model.learning_rate == 0.002 and tuned.model.family == "auto"
    assert T.tuned(settings, {"learning_rate": 0.002}).model.trees == settings.model.trees


def test_the_network_and_trees_choices_are_one_best_hyperparameters():
    import keras_tuner as kt

    hp = kt.HyperParameters()
    hp.Fixed("learning_rate", 0.004)
    record = {"kept_config": False, "best": {"values": {"max_depth": 4}}}
    both = trees_search.with_trees(hp, record)
    assert T.best_values(both.get_config()) == {"learning_rate": 0.004, "trees.max_depth": 4}
    assert T.best_values(trees_search.with_trees(kt.HyperParameters(), None).get_config()) == {}


def test_the_trees_search_in_one_line():
    base = {"score": 0.842, "noise": 0.011, "rows": 600}
    record = {"objective": "val_auc", "baseline": base, "trials": [{}, {}], "seconds": 12.2, "margin_se": 2.0,
              "kept_config": False, "best": {"score": 0.8712, "values": {"max_depth": 8}}}
    assert T.trees_summary_line(record) == ("trees: 2 trials in 12s, best val_auc 0.8712 (the config's own 0.8420 "
                                            "±0.0110): trees.max_depth=8")
    kept = T.trees_summary_line(dict(record, kept_config=True))
    assert kept.endswith("by more than 2 x its noise: the Trainer keeps them") and "on 600 validation rows" in kept
    assert T.trees_summary_line(None) == ""
