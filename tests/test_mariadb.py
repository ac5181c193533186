"""A shared MLMD store on a real MariaDB server (tests/mariadb_server.py starts one on a free
port): two runs at once on one output root, then a cached re-run, all recorded correctly, then
``tfxline gc`` on that store.

Its own runs for a reason: the store is what is under test. Skips without the server
binaries unless TFXLINE_REQUIRE_MARIADB=1 (.ci/run sets it for the host suite, which has
Debian's mariadb-server; the Debian 13 root has none).
"""
import json
import os
import re
import subprocess
import sys
import time

import pytest

from tfxline.serving import push as serving_push
from tfxline.pipeline.config.load import load_config
from tfxline.runs.store import open_store, run_ids
from tfxline.runs.summary import collect_run
from tests.conftest import missing
from tests.mariadb_server import PASSWORD, MariaDB, binaries

pytestmark = pytest.mark.e2e

TFXLINE = os.path.join(os.path.dirname(sys.executable), "tfxline")


@pytest.fixture(scope="module")
def mariadb(tmp_path_factory):
    if binaries() is None:
        missing("no MariaDB server binaries (apt-get install mariadb-server)", required_by="TFXLINE_REQUIRE_MARIADB")
    server = MariaDB(str(tmp_path_factory.mktemp("mariadb"))).start()
    yield server
    server.stop()


def test_runs_share_a_mariadb_store(mariadb, taxi_slice, tmp_path, monkeypatch):
    out = tmp_path / "out"
    sets = [a for o in mariadb.config_overrides() for a in ("--set", o)]
    cmd = [TFXLINE, "run", "--data", taxi_slice, "--output", str(out), "--train-steps", "100",
           "--set", "training.epochs=1", "--set", "training.eval_steps=5", *sets]

    # Without the password in the environment: one line naming the variable, nothing ran.
    bare = subprocess.run(cmd, capture_output=True, text=True, env={k: v for k, v in os.environ.items()
                                                                     if k != "TFXLINE_MLMD_PASSWORD"})
    assert bare.returncode == 2 and "TFXLINE_MLMD_PASSWORD" in bare.stderr, bare.stderr[-500:]

    env = dict(os.environ, TFXLINE_MLMD_PASSWORD=PASSWORD)
    first = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    time.sleep(3)
    second = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    outs = [first.communicate(timeout=900), second.communicate(timeout=900)]
    third = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
    outs.append((third.stdout, third.stderr))
    for proc, (stdout, stderr) in zip((first, second, third), outs):
        assert proc.returncode == 0, stderr[-2000:]
        assert "waiting:" not in stdout  # a server store takes runs at once
    assert "[cached ] Trainer" in outs[2][0]  # the re-run was served from the shared store's cache

    monkeypatch.setenv("TFXLINE_MLMD_PASSWORD", PASSWORD)
    cfg = load_config(overrides=mariadb.config_overrides())
    ids = []
    for stdout, _ in outs:
        run_id = re.search(r"^run (\S+):$", stdout, flags=re.M).group(1)
        assert re.search(rf"^pipeline taxi, run {re.escape(run_id)}:", stdout, flags=re.M)
        with open(out / "runs" / run_id / "summary.json") as f:
            recorded = json.load(f)
        mlmd_view = collect_run(cfg.metadata_store, "taxi", run_id)
        assert recorded["run_id"] == run_id and recorded["blessed"] == mlmd_view.blessed is True
        if mlmd_view.pushed:
            version = int(os.path.basename(mlmd_view.pushed_to))
            meta = serving_push.read_metadata(str(out / "serving" / "taxi"), version)
            assert meta["model_uri"] == mlmd_view.model_uri  # the version holds this run's model
        ids.append(run_id)
    assert sorted(run_ids(open_store(cfg.metadata_store), "taxi")) == sorted(ids)  # all three, nothing else
    assert not os.path.exists(out / "metadata.sqlite")  # nothing went to SQLite

    # Retention on the server store: the cached run is the newest complete one; the model it
    # reused stays, the other concurrent run's model goes, and every run still reads.
    runs = {run_id: collect_run(cfg.metadata_store, "taxi", run_id) for run_id in ids}
    kept = runs[ids[2]].model_uri
    doomed = {runs[i].model_uri for i in ids[:2]} - {kept}
    assert doomed, "both concurrent runs trained: one of their models is not the cached run's"
    gc = subprocess.run([TFXLINE, "gc", "--output", str(out), "--keep-runs", "1", *sets],
                        capture_output=True, text=True, env=env, timeout=300)
    assert gc.returncode == 0 and gc.stderr == "", gc.stderr[-2000:]
    assert re.search(r"^retention: deleted \d+ artifact\(s\), [\d.]+ [KM]B, of [12] older run\(s\); kept the "
                     r"newest 1 complete run\(s\) and the runs since \(1 run\(s\)\)", gc.stdout, flags=re.M), gc.stdout
    assert os.path.isdir(kept) and not any(map(os.path.exists, doomed))
    for run_id in ids:
        again = collect_run(cfg.metadata_store, "taxi", run_id)
        assert (again.blessed, again.model_uri) == (runs[run_id].blessed, runs[run_id].model_uri)
