"""Our tuner (trainer/tune.py) as TFX's Vertex Tuner runs it on Vertex AI's parallel trials: a
chief whose keras-tuner oracle serves over gRPC (the KERASTUNER_* variables that
extensions/google_cloud_ai_platform/tuner/executor.py:209-211, :285-296 set) and a worker that
runs trials against it through keras-tuner's OracleClient. Two processes on this machine, each
trial's training replaced by a quick stand-in (fit_trial): what is checked is the search protocol,
the wall budget held by the chief's oracle, and the job's TF_CONFIG kept out of each trial."""
import json
import multiprocessing
import os
import socket
import time

import pytest

from tfxline.pipeline.config.load import load_config
from tfxline.pipeline.tuning import tuner_custom_config
from tfxline.trainer import trial as trial_lib
from tfxline.trainer import tune

# Vertex AI sets TF_CONFIG on every replica of a job of several (the flock, not one cluster).
FLOCK = json.dumps({"cluster": {"chief": ["10.0.0.1:2222"], "worker": ["10.0.0.2:2222"]},
                    "task": {"type": "worker", "index": 0}})


def fn_args(work_dir, max_minutes):
    from tfx.components.trainer.fn_args_utils import FnArgs

    cfg = load_config(overrides=["tuning.enabled=true", "tuning.max_trials=50", "tuning.algorithm=random",
                                 f"tuning.max_minutes={max_minutes}"])
    return FnArgs(custom_config=tuner_custom_config(cfg), working_dir=work_dir, transform_graph_path="unused")


def stand_in_fit(fn_args, settings, strategy, policy, epochs, deadline, labels=False):
    time.sleep(0.3)
    return trial_lib.Fitted({"val_auc": [min(0.99, settings.model.learning_rate * 50)], "val_loss": [0.5]})


def chief(port, work_dir, max_minutes, result_path):
    """The chief oracle's process, as the extension's _run_chief_oracle runs it (:196-224)."""
    os.environ.update(KERASTUNER_ORACLE_IP="127.0.0.1", KERASTUNER_ORACLE_PORT=str(port),
                      KERASTUNER_TUNER_ID="chief", TF_CONFIG=FLOCK)
    trial_lib.fit_trial = stand_in_fit
    tuner = tune.tuner_fn(fn_args(work_dir, max_minutes)).tuner
    tuner.search()  # serves the workers until the oracle stops
    with open(result_path, "w") as f:
        json.dump({"trials": len(tuner.oracle.trials), "out_of_time": tuner.out_of_time,
                   "best": tuner.get_best_hyperparameters()[0].values,
                   "project": os.path.basename(tuner.project_dir)}, f)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_worker_runs_trials_for_the_chief_oracle_until_the_wall_budget(tmp_path, monkeypatch):
    from keras_tuner.src.distribute import oracle_client

    port, work_dir, result = free_port(), str(tmp_path / "tmp"), tmp_path / "chief.json"
    max_minutes = 0.04  # 2.4 s: a few trials of 0.3 s, far fewer than max_trials
    process = multiprocessing.get_context("spawn").Process(target=chief, args=(port, work_dir, max_minutes, result))
    process.start()
    try:
        monkeypatch.setattr(trial_lib, "fit_trial", stand_in_fit)
        monkeypatch.setenv("KERASTUNER_ORACLE_IP", "127.0.0.1")
        monkeypatch.setenv("KERASTUNER_ORACLE_PORT", str(port))
        monkeypatch.setenv("KERASTUNER_TUNER_ID", "tfx-tuner-workerpool1-0")
        monkeypatch.setenv("TF_CONFIG", FLOCK)
        worker = tune.tuner_fn(fn_args(work_dir, max_minutes)).tuner
        assert isinstance(worker.oracle, oracle_client.OracleClient)
        assert os.path.basename(worker.project_dir) == "trials-tfx-tuner-workerpool1-0"  # not the chief's
        assert worker.strategy.num_replicas_in_sync == 1  # the flock's TF_CONFIG made no collective
        worker.search()  # returns when the chief's oracle says stop
        process.join(120)
    finally:
        if process.is_alive():
            process.kill()
    assert process.exitcode == 0
    done = json.loads(result.read_text())
    assert done["out_of_time"] and 1 <= done["trials"] < 50
    assert len(worker.trials) == done["trials"] and not worker.failures
    assert done["best"]["learning_rate"] == max(t["values"]["learning_rate"] for t in worker.trials)
    assert done["project"] == "trials-chief"
    assert worker.baseline is None  # parallel trials: no baseline run (no single search to hold it)


@pytest.mark.parametrize("configured", ["auto", "multi_worker_mirrored"])
def test_a_trial_trains_alone_whatever_the_jobs_tf_config(monkeypatch, configured):
    monkeypatch.setenv("TF_CONFIG", FLOCK)
    monkeypatch.setenv("KERASTUNER_TUNER_ID", "tfx-tuner-workerpool0-0")
    assert trial_lib.trial_strategy(configured).num_replicas_in_sync == 1
    assert os.environ["TF_CONFIG"] == FLOCK  # the process's own environment left as it was
