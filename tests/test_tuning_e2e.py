"""A tuned run end to end through the command (issue #64): TFX's Tuner with this project's tuner
before the Trainer, three trials on the taxi slice, blessed and pushed; the same command again
serves the Tuner from cache; ``tuning.reuse: latest`` then feeds the saved values through an
Importer and the Trainer is served from cache too (the same hyperparameters artifact).

Runs of its own (tests/conftest.py's inventory): the tuned run is what is checked, and its two
re-runs are cached (seconds each).
"""
import io
import json
import os

import pytest

from tfxline.cli import main as cli
from tfxline.runs.store import open_store
from tfxline.runs.summary import collect_run, training_run
from tfxline.trainer import trees_search
from tfxline.trainer.tuning_settings import TUNING_RUN_FILE
from tests.conftest import E2E_TRAIN_STEPS

pytestmark = [pytest.mark.e2e, pytest.mark.one_stack(
    "1.21", why="the Tuner component's cache and reuse; keras-tuner is 1.4.8 in both locks and the trials run on both stacks in test_tuning_search.py")]
# model.family auto: the Tuner searches the trees' space too (trainer/trees_search.py), before the network's
AUTO = "model.family=auto"
TUNED = ["tuning.enabled=true", "tuning.max_trials=3", "tuning.algorithm=random", AUTO]


def run(data, out_dir, *sets):
    argv = ["run", "--data", data, "--output", str(out_dir), "--set", "training.mode=steps",
            "--set", f"training.train_steps={E2E_TRAIN_STEPS}", "--set", "training.epochs=3",
            "--set", "training.eval_steps=10"]
    for s in sets:
        argv += ["--set", s]
    stdout = io.StringIO()
    code = cli.main(argv, stream=stdout)
    summary = collect_run(str(out_dir / "metadata.sqlite"), "taxi")
    return code, stdout.getvalue(), summary


@pytest.fixture(scope="module")
def tuned_runs(taxi_slice, tmp_path_factory):
    """The tuned run, the same command again, and a run that reuses the latest tuned values."""
    out_dir = tmp_path_factory.mktemp("tuned")
    return out_dir, [run(taxi_slice, out_dir, *TUNED), run(taxi_slice, out_dir, *TUNED),
                     run(taxi_slice, out_dir, "tuning.reuse=latest", AUTO)]


def test_the_tuner_runs_three_trials_and_the_trainer_trains_on_the_best(tuned_runs):
    _, [(code, out, summary), _, _] = tuned_runs
    assert code == 0, out
    tuner = summary.component("Tuner")
    assert tuner is not None and tuner.state == "complete"
    with open(os.path.join(tuner.outputs["best_hyperparameters"][0], "best_hyperparameters.txt")) as f:
        best = json.load(f)["values"]
    with open(os.path.join(tuner.outputs["tuner_results"][0], TUNING_RUN_FILE)) as f:
        record = json.load(f)
    assert len(record["trials"]) == 3 and not record["failed"] and record["ended_by"] == "max_trials"
    assert record["baseline"]["trial"] == "config" and record["baseline"]["rows"] > 0
    assert 0 < record["baseline"]["noise"] < 0.1  # AUC's standard error on the validation rows
    info = training_run(summary.component("Trainer").outputs["model_run"][0])
    trees = record["trees"]  # the trees' search: the config's trees settings, then 3 trials
    assert trees["baseline"]["rows"] == record["baseline"]["rows"] and len(trees["trials"]) == 3
    trees_best = trees_search.best_values(trees)
    assert {k: v for k, v in best.items() if k.startswith("trees.")} == trees_best
    network_best = {k: v for k, v in best.items() if not k.startswith(("tuner/", "trees."))}
    if record["kept_config"]:  # no trial beat the config's own values by more than 2 x their noise
        assert record["best"] == record["baseline"] and network_best == {}
    else:
        assert record["best"]["score"] == max(t["score"] for t in record["trials"])  # val_auc: higher is better
        assert record["best"]["score"] - record["baseline"]["score"] > 2 * record["baseline"]["noise"]
        assert network_best == record["best"]["values"]
        assert info["batch_size"] == best["batch_size"]
    assert (info["tuned"] or {}) == {**network_best, **trees_best}  # laid over the config's values
    for key, value in trees_best.items():  # the trees the Trainer trained took the search's best
        assert info["model"]["trees"][key.split(".", 1)[1]] == value
    # the console: the trees' search (the config's own settings, a line per trial), then the network's
    # (the config's own values, a line per trial and the summary line), between the Tuner's start and end
    lines = out.splitlines()
    start = lines.index("[ start ] Tuner")
    tuner_lines = [x.strip() for x in lines[start + 1:start + 10]]
    assert tuner_lines[0].startswith("tuning: trees, the config's own values: val_auc "), out
    assert [x.split(":")[1].strip().split(" ")[:3] for x in tuner_lines[1:4]] == [
        ["trees", "trial", "1/3"], ["trees", "trial", "2/3"], ["trees", "trial", "3/3"]], out
    assert tuner_lines[4].startswith("tuning: the config's own values: val_auc "), out
    assert [x.split(":")[1].strip() for x in tuner_lines[5:8]] == ["trial 1/3", "trial 2/3", "trial 3/3"], out
    assert tuner_lines[8].startswith("tuning: 3 trials in "), out
    assert lines[start + 10].startswith("[ done  ] Tuner")
    assert any(x.startswith("  tuning trees: 3 trials in ") for x in lines), out  # the run's summary
    assert summary.blessed is True and summary.pushed is True, out


def test_the_same_command_again_serves_the_tuner_from_cache(tuned_runs):
    _, [_, (code, out, summary), _] = tuned_runs
    assert code == 0, out
    assert "[cached ] Tuner" in out and "[cached ] Trainer" in out
    assert summary.component("Tuner").state == "cached"


def test_reuse_latest_feeds_the_saved_values_and_the_trainer_is_cached(tuned_runs):
    out_dir, [(_, _, tuned), _, (code, out, summary)] = tuned_runs
    assert code == 0, out
    assert summary.component("Tuner") is None and "[ done  ] ReusedHyperparameters" in out
    imported = summary.component("ReusedHyperparameters").outputs["result"][0]
    assert imported == tuned.component("Tuner").outputs["best_hyperparameters"][0]
    assert "[cached ] Trainer" in out  # the same artifact: the same cache key
    store = open_store(str(out_dir / "metadata.sqlite"))
    assert store.get_artifacts_by_type("HyperParameters")  # one artifact, imported, not copied
    assert len(store.get_artifacts_by_type("HyperParameters")) == 1
