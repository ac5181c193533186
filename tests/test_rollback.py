"""Rolling the serving directory back: which version serves again, what is recorded, what is
kept, the CLI's errors; and, on the shared run's real model, a bad model rolled back so that
``predict`` (and TF Serving, which serves the highest version) uses the good one again."""
import getpass
import io
import json
import os

import pytest

from tfxline.serving import push as sp
from tfxline.serving import release as serving_release
from tfxline.cli import main as cli
from tfxline.local.lock import one_run_at_a_time


def push_runs(model_files, serving_dir, n, keep=5):
    """n pushes as the Pusher makes them, versions 100, 101, ...: model m<i> of run r<i>."""
    for i in range(n):
        sp.push(model_files, serving_dir, {"model_uri": f"m{i}", "pipeline_run_id": f"r{i}", "metrics": {"auc": 0.9 + i / 100},
                                         "pushed_at": f"2026-11-2{i}T02:00:00Z", "data": {"spans": [i + 1]}},
                keep_versions=keep, now=100 + i)


def test_rollback_serves_the_previous_model_as_a_new_version_and_keeps_the_bad_one(model_files, tmp_path):
    d = str(tmp_path / "serving")
    push_runs(model_files, d, 3)
    new, bad, restored = sp.rollback(d, keep_versions=5, reason="tips wrong at night", by="ana", now=200)
    assert (new, bad, restored) == (200, 102, 101)
    assert sp.versions(d) == [100, 101, 102, 200]  # the bad version is kept, not served
    meta = sp.read_metadata(d, 200)
    assert meta["model_uri"] == "m1" and meta["pipeline_run_id"] == "r1" and meta["version"] == 200
    assert meta["metrics"] == {"auc": 0.91} and meta["data"] == {"spans": [2]}  # the drift gate's reference
    assert meta["rollback"] == {"from_version": 102, "restored_version": 101, "reason": "tips wrong at night",
                                "by": "ana", "at": "1970-01-01T00:03:20Z"}
    assert sorted(os.listdir(os.path.join(d, "200"))) == sorted(os.listdir(os.path.join(d, "101")))
    assert sp.rolled_back_versions(d) == {102: 200}
    assert serving_release.serving_version_dir(d).endswith("/200")  # what predict, the baseline and TF Serving take


def test_rolling_back_twice_goes_one_model_further_back(model_files, tmp_path):
    d = str(tmp_path / "serving")
    push_runs(model_files, d, 3)
    sp.rollback(d, keep_versions=5, now=200)   # 102 (m2) -> m1
    new, bad, restored = sp.rollback(d, keep_versions=5, now=300)
    # 200 holds m1, so 101 (m1 too) is not a step back, 102 was rolled back from: m0 serves
    assert (new, bad, restored) == (300, 200, 100)
    assert sp.read_metadata(d, 300)["model_uri"] == "m0"


def test_rollback_to_a_chosen_version(model_files, tmp_path):
    d = str(tmp_path / "serving")
    push_runs(model_files, d, 3)
    assert sp.rollback(d, keep_versions=5, to=100, now=200) == (200, 102, 100)
    with pytest.raises(sp.RollbackError, match=r"version 7 is not in .* \(it holds 100, 101, 102, 200\)"):
        sp.rollback(d, keep_versions=5, to=7)
    with pytest.raises(sp.RollbackError, match="version 100 holds the model serving now"):
        sp.rollback(d, keep_versions=5, to=100)  # 200 is m0 as well
    assert sp.versions(d) == [100, 101, 102, 200]


def test_nothing_to_roll_back_to_changes_nothing(model_files, tmp_path):
    d = str(tmp_path / "serving")
    with pytest.raises(sp.RollbackError, match="no pushed model in"):
        sp.rollback(d, keep_versions=5)
    push_runs(model_files, d, 1)
    with pytest.raises(sp.RollbackError, match=r"no earlier model to roll back to .*serving.keep_versions"):
        sp.rollback(d, keep_versions=5)
    assert os.listdir(d) == ["100"]


def test_rollback_keeps_the_bad_version_whatever_keep_versions_says(model_files, tmp_path):
    d = str(tmp_path / "serving")
    push_runs(model_files, d, 2, keep=2)
    sp.rollback(d, keep_versions=1, now=200)
    assert sp.versions(d) == [101, 200]  # 100 (now copied as 200) pruned, the bad 101 kept


def test_the_pushers_next_version_follows_a_rollback(model_files, tmp_path):
    d = str(tmp_path / "serving")
    push_runs(model_files, d, 2)
    sp.rollback(d, keep_versions=5, now=200)
    assert sp.push(model_files, d, {"model_uri": "m9"}, keep_versions=5, now=150) == 201
    assert sp.rolled_back_versions(d) == {101: 200}


def run_cli(argv, capsys):
    code = cli.main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_cli_lists_versions_and_rolls_back(model_files, tmp_path, capsys):
    out_root = tmp_path / "out"
    d = str(out_root / "serving" / "taxi")  # the taxi config's serving directory under --output
    push_runs(model_files, d, 3)
    code, out, err = run_cli(["serving", "rollback", "--output", str(out_root), "--dry-run"], capsys)
    assert (code, err) == (0, "")
    assert "would roll back" in out and "version 101 (run r1, auc 0.9100)" in out
    assert sp.versions(d) == [100, 101, 102]
    code, out, err = run_cli(["serving", "rollback", "--output", str(out_root), "--reason", "bad tips"], capsys)
    assert (code, err) == (0, "")
    new = sp.versions(d)[-1]
    assert f"version {new} holds the model of version 101 (run r1, auc 0.9100); version 102 (run r2, auc 0.9200) " \
           "no longer serves" in out  # no release before: TF Serving served the highest version, now this one
    code, out, err = run_cli(["serving", "--output", str(out_root)], capsys)
    assert out.splitlines()[2].endswith("pending stable, restores 101 (bad tips)")
    assert run_cli(["serving", "settle", "--without-server", "--output", str(out_root)], capsys)[0] == 0
    code, out, err = run_cli(["serving", "--output", str(out_root)], capsys)
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0] == f"{d} (labels in {d}/release/models.config)"  # a rollback writes the release
    assert lines[1].split() == ["version", "pushed", "(UTC)", "run", "spans", "metric", "state"]
    assert lines[2].startswith(str(new)) and lines[2].endswith("stable, restores 101 (bad tips)")
    assert lines[3].split()[:2] == ["102", "2026-11-22"] and lines[3].endswith(f"rolled back by {new}")
    assert lines[2].split()[3:7] == ["r1", "2", "auc", "0.9100"]  # the restored model's run, spans, metric
    assert lines[5].split()[:3] == ["100", "2026-11-20", "02:00:00"] and lines[5].endswith("  -")
    assert lines[6] == "release history (newest last):" and lines[7].endswith(f"rollback to 101: stable {new} (by "
                                                                              f"{getpass.getuser()}): bad tips")


@pytest.mark.parametrize("argv, message", [
    (["--to", "5"], "error: version 5 is not in "),
    ([], "error: no earlier model to roll back to in "),
])
def test_cli_refusals_are_one_line_and_change_nothing(model_files, tmp_path, capsys, argv, message):
    out_root = tmp_path / "out"
    d = str(out_root / "serving" / "taxi")
    push_runs(model_files, d, 1)
    code, out, err = run_cli(["serving", "rollback", "--output", str(out_root), *argv], capsys)
    assert code == 2 and err.startswith(message) and len(err.strip().splitlines()) == 1 and out == ""
    assert sp.versions(d) == [100] and sorted(os.listdir(d)) == ["100"]


@pytest.mark.e2e
def test_a_bad_model_rolled_back_predicts_as_the_good_one_again(pipeline_run, taxi_slice, tmp_path, capsys):
    """A real pushed model, then a 'bad' one (a SavedModel with the same serving signature that
    answers 0.5 to everything) pushed over it; after the rollback, predict gives the good
    model's predictions again."""
    import tensorflow as tf

    from tfxline.pipeline.data.examples import read_csv_rows

    cfg, _, _ = pipeline_run
    good = serving_release.serving_version_dir(cfg.serving_dir)
    out_root = tmp_path / "out"
    d = str(out_root / "serving" / "taxi")
    sp.push(good, d, dict(sp.read_metadata(cfg.serving_dir, int(os.path.basename(good))), pipeline_run_id="good"),
            keep_versions=5, now=100)

    class Bad(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="examples")])
        def serve(self, examples):
            return {"probabilities": tf.fill(tf.shape(examples), 0.5)}

    bad = Bad()
    tf.saved_model.save(bad, str(tmp_path / "bad"), signatures={"serving_default": bad.serve})
    sp.push(str(tmp_path / "bad"), d, {"model_uri": "bad", "pipeline_run_id": "bad"}, keep_versions=5, now=101)

    rows = tmp_path / "rows.csv"
    with open(taxi_slice) as src, open(rows, "w") as dst:
        dst.writelines(line for i, line in enumerate(src) if i <= 30)

    def predict(name):
        path = tmp_path / name
        code = cli.main(["predict", "--output", str(out_root), "--set", f"data.path={taxi_slice}",
                         "--input", str(rows), "--predictions", str(path)])
        assert code == 0, capsys.readouterr().err
        return [float(r["probability"]) for r in read_csv_rows(str(path))]

    assert set(predict("bad.csv")) == {0.5}
    assert cli.main(["serving", "rollback", "--output", str(out_root)]) == 0
    assert "holds the model of version 100 (run good" in capsys.readouterr().out
    restored = predict("restored.csv")
    assert len(set(restored)) > 1
    with open(os.path.join(d, str(sp.versions(d)[-1]), sp.METADATA_FILE)) as f:
        assert json.load(f)["rollback"]["from_version"] == 101


@pytest.mark.e2e
def test_runs_marks_the_push_that_was_rolled_back(pipeline_run, model_files, tmp_path):
    from tfxline.runs.history import list_runs

    cfg, summary, _ = pipeline_run
    pushed = int(os.path.basename(summary.pushed_to))
    d = str(tmp_path / "serving")  # the shared run's push, with an older model below it
    sp.push(model_files, d, {"model_uri": "older"}, keep_versions=5, now=pushed - 1)
    sp.push(model_files, d, {"model_uri": "the shared run's"}, keep_versions=5, now=pushed)

    def row(**kw):
        return next(r for r in list_runs(cfg.metadata_store, cfg.name, **kw) if r.run_id == summary.run_id)

    assert row(serving_dir=d).pushed == str(pushed)
    sp.rollback(d, keep_versions=5)
    assert row(serving_dir=d).pushed == f"{pushed} (rolled back)"
    assert row().pushed == str(pushed)


def test_a_rollback_waits_for_a_run_on_the_same_output_root(model_files, tmp_path, capsys):
    import threading
    import time

    from tfxline.pipeline.config.load import load_config

    out_root = tmp_path / "out"
    d = str(out_root / "serving" / "taxi")
    push_runs(model_files, d, 2)
    held, release, seen = threading.Event(), threading.Event(), []

    def a_run():
        with one_run_at_a_time(load_config(overrides=[f"output_root={out_root}"]), io.StringIO()):
            held.set()
            release.wait(10)
            seen.append(sp.versions(d))  # what the run's Pusher would see at its end
    thread = threading.Thread(target=a_run)
    thread.start()
    held.wait(10)
    threading.Timer(1.0, release.set).start()
    started = time.monotonic()
    code, out, _ = run_cli(["serving", "rollback", "--output", str(out_root)], capsys)
    thread.join()
    assert seen == [[100, 101]]  # nothing moved under the run
    assert code == 0 and time.monotonic() - started >= 0.9
    assert out.startswith("waiting: run of pid") and "rolled back" in out and len(sp.versions(d)) == 3
