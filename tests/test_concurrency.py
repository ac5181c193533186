"""Two `tfxline run` at once on one output root: each accounts for its own run.

Its own pipeline run for a reason: the overlap is the thing under test. Two processes (as
users start them), the second 3 s after the first, on the same output root and SQLite MLMD
store: the second waits for the first and says so; each console summary, `runs/<id>/`
directory and the push metadata name the run that did the work.
"""
import json
import os
import re
import subprocess
import sys
import time

import pytest

from tfxline.serving import push as serving_push

pytestmark = [pytest.mark.e2e, pytest.mark.one_stack(
    "1.21", why="two runs on one output root is our run-id and MLMD bookkeeping; its pipeline paths run on both stacks in test_e2e.py")]

TFXLINE = os.path.join(os.path.dirname(sys.executable), "tfxline")


def test_two_overlapping_runs_each_report_their_own_run(taxi_slice, tmp_path):
    out = tmp_path / "out"
    cmd = [TFXLINE, "run", "--data", taxi_slice, "--output", str(out), "--train-steps", "100",
           "--set", "training.epochs=1", "--set", "training.eval_steps=5"]
    first = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(3)
    second = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    (out1, err1), (out2, err2) = first.communicate(timeout=900), second.communicate(timeout=900)
    assert first.returncode == 0, err1[-2000:]
    assert second.returncode == 0, err2[-2000:]
    assert "database is locked" not in err1 + err2
    assert "waiting:" not in out1 and "waiting:" in out2  # the later one waited, and said so

    ids = []
    for stdout in (out1, out2):
        started = re.search(r"^pipeline taxi, run (\S+):", stdout, flags=re.M).group(1)
        summarised = re.search(r"^run (\S+):$", stdout, flags=re.M).group(1)
        assert started == summarised  # the summary is of this process's own run
        with open(out / "runs" / started / "summary.json") as f:
            assert json.load(f)["run_id"] == started
        ids.append(started)
    assert ids[0] != ids[1]

    # The first run trained and pushed; the second, on the same inputs, was served from the
    # cache and pushed nothing new. The push metadata names the first run.
    serving = out / "serving" / "taxi"
    versions = serving_push.versions(str(serving))
    assert len(versions) == 1
    assert serving_push.read_metadata(str(serving), versions[0])["pipeline_run_id"] == ids[0]
    assert f"pushed to: {serving}/{versions[0]}" in out1
    assert "[cached ] Trainer" in out2
