"""What a push says: the run's summary tells in one line where the model went and what reads it
now (predict, the next run's baseline); the TF Serving label move ('tfxline serving settle') is
named only where a TF Serving reads the release (serving.tf_serving_url), and `tfxline serving`
explains its 'pending stable' on the spot, with the command that settles it either way."""
import io
import os

import pytest

from tfxline.pipeline.config import ConfigError
from tfxline.pipeline.config.load import load_config
from tfxline.runs.console import format_summary
from tfxline.runs.summary import ComponentRun, RunSummary
from tfxline.serving import push as sp
from tfxline.serving import release as sr
from tests.test_rollback import run_cli
from tests.test_tf_serving_rules import FakeTFServing

SETTINGS = sr.Settings(model_name="taxi", batch_threads=4)


def pushed_summary(release: str, **kw) -> RunSummary:
    return RunSummary(run_id="r1", components=[ComponentRun("Pusher", "complete", 1.0)], blessed=True, pushed=True,
                      pushed_to="output/serving/taxi/101", release=release, **kw)


def test_a_push_says_where_it_went_and_what_reads_it_in_one_line(model_files, tmp_path):
    d = str(tmp_path / "serving")
    v1 = sp.push(model_files, d, {"model_uri": "m1"}, keep_versions=5, now=101)
    line = sr.push_summary(sr.on_push(d, v1, "stable", 10, SETTINGS), v1)
    assert line == "stable: predict and the next run's baseline use it"
    lines = format_summary(pushed_summary(line)).splitlines()
    assert lines[-1] == "  pushed to: output/serving/taxi/101 (stable: predict and the next run's baseline use it)"
    assert not any(l.startswith("  release:") for l in lines)
    assert "settle" not in "\n".join(lines) and "TF Serving" not in "\n".join(lines)


def test_a_canary_push_says_beside_which_version_and_where_its_label_move_is_explained(model_files, tmp_path):
    d = str(tmp_path / "serving")
    v1 = sp.push(model_files, d, {"model_uri": "m1"}, keep_versions=5, now=101)
    sr.on_push(d, v1, "stable", 10, SETTINGS)
    sr.settle(d, SETTINGS)
    v2 = sp.push(model_files, d, {"model_uri": "m2"}, keep_versions=5, now=102)
    line = sr.push_summary(sr.on_push(d, v2, "canary", 15, SETTINGS), v2)
    assert line == f"canary at 15 % beside stable version {v1} once its label moves ('tfxline serving' says how)"


def test_the_settle_hint_appears_where_a_tf_serving_reads_the_release():
    summary = pushed_summary("stable: predict and the next run's baseline use it")
    lines = format_summary(summary, tf_serving_url="http://tf-serving:8501").splitlines()
    assert lines[-2].startswith("  pushed to: output/serving/taxi/101 (stable")
    assert lines[-1] == ("  tf serving: loads version 101 now; its labels move with 'tfxline serving settle' once "
                         "TF Serving at http://tf-serving:8501 has loaded it")
    # a Pusher served from cache pushed nothing: nothing to settle
    summary.components = [ComponentRun("Pusher", "cached", 0.0, cached_from="r0")]
    assert "tf serving:" not in format_summary(summary, tf_serving_url="http://tf-serving:8501")


def test_tf_serving_url_is_a_serving_key_checked_on_load():
    cfg = load_config("taxi", overrides=["serving.tf_serving_url=http://localhost:8501"])
    assert cfg.serving.tf_serving_url == "http://localhost:8501"
    assert load_config("taxi").serving.tf_serving_url == ""
    with pytest.raises(ConfigError,
                       match=r"serving\.tf_serving_url: 'localhost:8501'; give TF Serving's REST address, http://"):
        load_config("taxi", overrides=["serving.tf_serving_url=localhost:8501"])


def test_tfxline_serving_explains_pending_stable_where_it_shows_it(model_files, tmp_path, capsys):
    out_root = tmp_path / "out"
    d = str(out_root / "serving" / "taxi")
    v1 = sp.push(model_files, d, {"model_uri": "m1"}, keep_versions=5, now=101)
    sr.on_push(d, v1, "stable", 10, SETTINGS)
    code, out, err = run_cli(["serving", "--output", str(out_root)], capsys)
    rows = out.splitlines()
    assert (code, err) == (0, "") and rows[2].endswith("pending stable")
    assert rows[3] == (f"pending: push (stable {v1}): predict and the next run use version {v1} already; the labels "
                       f"move once TF Serving has loaded it ('tfxline serving settle --server URL'), or at once with "
                       "'tfxline serving settle --without-server' where no TF Serving reads this release")
    code, out, err = run_cli(["serving", "--output", str(out_root), "--set",
                              "serving.tf_serving_url=http://tf-serving:8501"], capsys)
    assert "('tfxline serving settle', which asks TF Serving at http://tf-serving:8501)" in out.splitlines()[3]


def test_settle_asks_the_configured_tf_serving(model_files, tmp_path, capsys):
    out_root = tmp_path / "out"
    d = str(out_root / "serving" / "taxi")
    v1 = sp.push(model_files, d, {"model_uri": "m1"}, keep_versions=5, now=101)
    sr.on_push(d, v1, "stable", 10, sr.Settings(model_name="taxi"))
    fake = FakeTFServing(os.path.join(sr.release_dir(d), sr.MODELS_CONFIG))
    try:
        code, out, err = run_cli(["serving", "settle", "--output", str(out_root), "--set",
                                  f"serving.tf_serving_url={fake.url}"], capsys)
        assert (code, err) == (0, "") and out.startswith(f"settled: push: stable {v1} (TF Serving at {fake.url} has "
                                                         f"version {v1} AVAILABLE)")
    finally:
        fake.http.shutdown()


def test_the_run_prints_the_hint_when_its_config_names_a_tf_serving():
    from tfxline.cli import run_command

    stream = io.StringIO()
    run_command.print_summary(pushed_summary("stable: predict and the next run's baseline use it"), stream,
                              tf_serving_url="http://tf-serving:8501")
    assert "  tf serving: loads version 101 now" in stream.getvalue()
