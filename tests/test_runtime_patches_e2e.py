"""A run with every run-time patch off (TFXLINE_RUNTIME_PATCHES=off, patches/guard.py): the
pipeline does not depend on them. The shared patched run (the session fixture ``pipeline_run``)
is the comparison: the same config and data, on an output root of its own (no cache, nothing
serving), so this is the only extra run."""
import dataclasses
import glob
import io
import os
import tempfile

import pytest

from tfxline.local import runner as local_runner

pytestmark = pytest.mark.e2e


def test_a_run_without_runtime_patches_blesses_pushes_and_scores_the_same(pipeline_run, tmp_path, monkeypatch):
    cfg, patched, _ = pipeline_run
    monkeypatch.setenv("TFXLINE_RUNTIME_PATCHES", "off")
    # unpatched, TFX leaves an sdist of itself in the temp dir for each Beam component: in this test's
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    off_cfg = dataclasses.replace(cfg, output_root=str(tmp_path / "off"))
    out = io.StringIO()
    summary = local_runner.run(off_cfg, stream=out)
    print(f"runtime patches off: AUC {summary.metrics['auc']:.4f} in {summary.wall_seconds:.0f} s; "
          f"on: AUC {patched.metrics['auc']:.4f} in {patched.wall_seconds:.0f} s")
    assert summary.blessed is True and summary.pushed is True, (summary.failed_thresholds, summary.push_refused)
    assert abs(summary.metrics["auc"] - patched.metrics["auc"]) <= 0.005, (summary.metrics["auc"],
                                                                          patched.metrics["auc"])
    [log] = glob.glob(os.path.join(off_cfg.output_root, "logs", "*.log"))
    text = open(log).read()
    assert "runtime patches: off" in text and "runtime patches: on" not in text
    patched_logs = "".join(open(p).read() for p in glob.glob(os.path.join(cfg.output_root, "logs", "*.log")))
    assert "runtime patches: on" in patched_logs
    # nothing was patched: TFX's own sdist of itself was built for each Beam component (in the
    # run's log), which the patched run skips (tests/test_e2e.py)
    assert "Attempting to infer TFX Python dependency" in text
