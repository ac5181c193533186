"""A training that stopped at its pass cap while the metric early stopping watches was still
improving says so in the run's summary and report, naming the key that raises the cap
(training.epochs, or training.train_steps in steps mode). Read from training_run.json records as
the Trainer writes them (trainer/run.py ``training_info``); no pipeline run."""
import json
import types

from ml_metadata.proto import metadata_store_pb2 as pb

from tfxline.runs import summary as summary_lib
from tfxline.runs.console import format_summary
from tfxline.runs.report import model as report_model
from tfxline.runs.report import render
from tfxline.runs.summary import RunSummary, collect_run
from tests.test_console import Runs

# A public table's run (binary, epochs mode): the cap of 10 passes reached, val_auc best at the last.
STILL_IMPROVING = {
    "strategy": "DefaultStrategy", "replicas": 1, "precision": "float32", "mode": "epochs", "device": "cpu",
    "batch_size": 32, "global_batch": 32, "train_examples": 1402, "steps_per_epoch": 44, "resumed_at_epoch": 0,
    "steps": 440, "epochs": 10, "max_epochs": 10, "best_epoch": 10, "early_stopping": "val_auc, patience 2",
    "train_seconds": 6.1, "examples_per_second": 2308.2, "profile": None,
    "history": {"loss": [0.61, 0.52, 0.47, 0.44, 0.42, 0.41, 0.40, 0.39, 0.385, 0.38],
                "val_auc": [0.71, 0.76, 0.79, 0.81, 0.82, 0.83, 0.835, 0.84, 0.843, 0.846]},
}


def record(**changes):
    return {**STILL_IMPROVING, **changes}


def test_a_run_still_improving_at_its_epoch_cap_names_training_epochs():
    note = summary_lib.training_length_note(STILL_IMPROVING)
    assert note.startswith("still improving when training stopped: val_auc was best at epoch 10, the last")
    assert "training.epochs (10)" in note


def test_in_steps_mode_the_note_names_the_step_budget():
    note = summary_lib.training_length_note(record(mode="steps", steps=1000, steps_per_epoch=100))
    assert note.startswith("still improving when training stopped: val_auc was best at round 10 of 10")
    assert "step budget (1000 steps)" in note and "training.train_steps (--train-steps)" in note
    assert "training.epochs" not in note  # in steps mode the rounds split the budget: more rounds, no more steps


def test_no_note_when_training_ended_on_its_own_or_nothing_was_watched():
    assert summary_lib.training_length_note(record(epochs=7, best_epoch=5)) == ""  # early stopping stopped it
    assert summary_lib.training_length_note(record(best_epoch=8)) == ""  # at the cap, but best two epochs before
    # without early stopping best_epoch is the last epoch by definition: it says nothing about improving
    assert summary_lib.training_length_note(record(early_stopping="off")) == ""
    assert summary_lib.training_length_note({k: v for k, v in STILL_IMPROVING.items() if k != "max_epochs"}) == ""
    assert summary_lib.training_length_note({}) == ""
    watched = summary_lib.training_length_note(record(early_stopping="val_loss, patience 2 (the rows hold one class)"))
    assert "val_loss was best" in watched


def test_the_run_summary_reads_it_from_the_trainers_record(tmp_path):
    model_run = tmp_path / "model_run"
    model_run.mkdir()
    (model_run / "training_run.json").write_text(json.dumps(STILL_IMPROVING))
    runs = Runs(tmp_path)
    runs.clock += 1
    run = runs._context("pipeline_run", "r1", create_time_since_epoch=runs.clock)
    [artifact] = runs.store.get_artifacts_by_id([runs.execute(run, "Trainer", "model_run")])
    artifact.uri = str(model_run)
    runs.store.put_artifacts([artifact])
    summary = collect_run(runs.path, "taxi", "r1")
    assert summary.training == summary_lib.training_length_note(STILL_IMPROVING)
    lines = format_summary(summary).splitlines()
    assert "  training: " + summary.training in lines


def test_the_console_line_sits_before_the_evaluation():
    summary = RunSummary(run_id="r", components=[], training="still improving when training stopped: x",
                         metrics={"auc": 0.8})
    lines = format_summary(summary).splitlines()
    assert lines.index("  training: still improving when training stopped: x") < next(
        i for i, line in enumerate(lines) if line.startswith("  eval (overall):"))
    assert not any(line.startswith("  training:") for line in
                   format_summary(RunSummary(run_id="r", components=[])).splitlines())


def test_the_report_says_it_in_the_training_section(tmp_path):
    (tmp_path / "training_run.json").write_text(json.dumps(STILL_IMPROVING))
    run = types.SimpleNamespace(artifact=lambda node, key: types.SimpleNamespace(uri=str(tmp_path)),
                                deleted=lambda artifact: False)
    section = report_model.training_section(run)
    assert section["note"] == summary_lib.training_length_note(STILL_IMPROVING)
    html = render.fragment({"training": section}, sections=("training",))
    assert "Training length: still improving when training stopped: val_auc was best at epoch 10" in html
    section.pop("note")  # data.json of a run reported before the note existed
    assert "Training length" not in render.fragment({"training": section}, sections=("training",))
