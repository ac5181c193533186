"""TFX's sdist of itself for Beam workers: skipped on local runners, kept for remote ones
(patches/tfx_packaging.py)."""
import glob
import os
import tempfile

import pytest

from tfxline.patches import tfx_packaging as beam_packaging
from tfxline.pipeline.beam import stack_compat

LOCAL_ARGS = ["--direct_running_mode=in_memory", "--direct_num_workers=1"]


@pytest.mark.parametrize("args, local", [
    (LOCAL_ARGS, True),
    (["--runner=DirectRunner"] + LOCAL_ARGS, True),
    ([f"--runner={stack_compat.FN_API_RUNNER}"] + LOCAL_ARGS, True),
    (["--runner=DataflowRunner", "--project=p", "--region=r"], False),
    (["--runner=PortableRunner", "--job_endpoint=localhost:8099"], False),
])
def test_which_runners_run_locally(args, local):
    assert beam_packaging.runs_locally(args) is local


def ephemeral_builds(root):
    return glob.glob(os.path.join(root, "tmp*", "build", "tfx"))


def test_local_runner_gets_no_sdist_remote_runner_still_does(tmp_path, monkeypatch):
    from tfx.utils import dependency_utils

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # where TFX's mkdtemp() lands
    tfx_flags = dependency_utils.make_beam_dependency_flags
    dataflow = ["--runner=DataflowRunner", "--project=p", "--region=r"]
    with beam_packaging.no_sdist_for_local_runners():
        assert dependency_utils.make_beam_dependency_flags(list(LOCAL_ARGS)) == LOCAL_ARGS
        assert ephemeral_builds(str(tmp_path)) == []
        # A remote runner goes through TFX's own function: the real sdist, in the temp dir.
        remote = dependency_utils.make_beam_dependency_flags(list(dataflow))
    assert remote[:3] == dataflow and remote[3].startswith("--extra_package=")
    assert remote[3].endswith(".tar.gz") and os.path.isfile(remote[3].split("=", 1)[1])
    assert len(ephemeral_builds(str(tmp_path))) == 1
    assert dependency_utils.make_beam_dependency_flags is tfx_flags  # restored on the way out
