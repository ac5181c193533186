"""bench/gpu_machine.sh: what it sends back from the GPU machine fits what a call returns."""
import os
import shutil
import subprocess
import tarfile

import pytest

from tests.conftest import missing

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture
def zstd():
    """.ci/run installs zstd on the host and the Debian 13 root has it: under CI a missing zstd fails."""
    if not shutil.which("zstd"):
        missing("no zstd command (apt-get install zstd)")


def trace_row(root, name, kb):
    """A row's trace where step_profile puts it (five folders down), incompressible."""
    d = root / name / "plugins" / "profile" / "2026_11_23_21_12_54"
    d.mkdir(parents=True)
    (d / "vm.xplane.pb").write_bytes(os.urandom(kb * 1024))


def test_traces_travel_in_one_archive_under_the_cap_largest_left_out(zstd, tmp_path):
    src = tmp_path / "profiles"
    for name, kb in (("b256", 40), ("b256-spe", 60), ("b4096", 400)):
        trace_row(src, name, kb)
    dest = tmp_path / "out" / "profiles.tar.zst"
    dest.parent.mkdir()
    proc = subprocess.run(["bash", "bench/gpu_machine.sh", "pack-traces", str(src), str(dest)], cwd=ROOT,
                          env=dict(os.environ, TRACE_CAP_KB="150"), capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "b4096 left out" in proc.stdout and "traces: b256 b256-spe in" in proc.stdout, proc.stdout
    assert dest.stat().st_size <= 150 * 1024
    unpacked = tmp_path / "unpacked"
    unpacked.mkdir()
    tar = subprocess.run(["zstd", "-d", "-q", "-c", str(dest)], capture_output=True, check=True).stdout
    (tmp_path / "t.tar").write_bytes(tar)
    with tarfile.open(tmp_path / "t.tar") as t:
        names = [m.name for m in t.getmembers() if m.isfile()]
    assert sorted(names) == ["b256-spe/plugins/profile/2026_11_23_21_12_54/vm.xplane.pb",
                             "b256/plugins/profile/2026_11_23_21_12_54/vm.xplane.pb"]


def test_no_archive_when_no_trace_fits_or_there_are_none(zstd, tmp_path):
    src = tmp_path / "profiles"
    trace_row(src, "b4096", 400)
    dest = tmp_path / "profiles.tar.zst"
    for source in (src, tmp_path / "missing"):
        proc = subprocess.run(["bash", "bench/gpu_machine.sh", "pack-traces", str(source), str(dest)], cwd=ROOT,
                              env=dict(os.environ, TRACE_CAP_KB="150"), capture_output=True, text=True)
        assert proc.returncode == 0 and not dest.exists(), proc.stdout + proc.stderr
