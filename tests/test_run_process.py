"""What a local run does to its own process (local/process.py, local/runner.py). A run that a
Ctrl-C or SIGTERM stops is recorded as interrupted, not left "running" for ever:
its stopped component CANCELED in MLMD, its error line, its report, exit 130 / 143
(local/runner.py, local/outcome.cancel_unfinished, local/process.sigterm_stops_run)."""
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from local import process
from tests.conftest import ROOT, tfxline, write_taxi_slice


def test_ctrl_c_during_a_component_records_the_run_as_interrupted(tmp_path):
    data = write_taxi_slice(tmp_path / "d" / "t.csv", limit=600)
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-m", "cli.main", "run", "--data", data, "--output", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    seen = []
    for line in proc.stdout:
        seen.append(line)
        if line.startswith("[ start ] Transform"):  # the longest component: seconds of tracing and analysis
            time.sleep(2)
            proc.send_signal(signal.SIGINT)  # what Ctrl-C in the terminal sends
            break
    rest, err = proc.communicate(timeout=600)
    stdout = "".join(seen) + rest
    assert proc.returncode == 130, (stdout, err)
    assert "Traceback" not in err
    [line] = [x for x in err.splitlines() if "interrupted" in x]
    assert line.startswith("run ") and "interrupted (Ctrl-C) while Transform ran" in line
    assert "[stopped] Transform" in stdout and "report: " in stdout

    # MLMD: what finished stays complete (a rerun reuses it), the stopped component is CANCELED
    [run_dir] = os.listdir(out / "runs")
    summary = json.loads((out / "runs" / run_dir / "summary.json").read_text())
    states = {c["node_id"]: c["state"] for c in summary["components"]}
    assert states["CsvExampleGen"] == states["StatisticsGen"] == "complete" and states["Transform"] == "canceled"
    assert "running" not in states.values()
    assert summary["error"].startswith("interrupted (Ctrl-C) while Transform ran")
    assert "run interrupted: Transform</span>" in (out / "runs" / run_dir / "report.html").read_text()

    runs = tfxline("runs", "--data", data, "--output", str(out))
    assert runs.returncode == 0, runs.stderr
    assert "interrupted: Transform" in runs.stdout
    assert f"run {run_dir} was interrupted at Transform: interrupted (Ctrl-C)" in runs.stdout
    show = tfxline("runs", "show", "latest", "--data", data, "--output", str(out))
    assert show.returncode == 0 and ", 1 stopped; wall time" in show.stdout, show.stdout


def test_sigterm_before_the_components_is_one_line_and_exit_143(tmp_path):
    """Killed while it starts (before any component): the same line a Ctrl-C gets, not silence."""
    proc = subprocess.Popen([sys.executable, "-c", "import os, signal; from cli import main; "
                             "main.build_parser = (lambda real: lambda: (os.kill(os.getpid(), signal.SIGTERM), "
                             "real())[1])(main.build_parser); raise SystemExit(main.main(['runs', '--output', "
                             f"{str(tmp_path)!r}]))"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=ROOT)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 143, err
    assert err.strip().splitlines()[-1] == "interrupted (SIGTERM)"


def test_sigterm_inside_a_run_raises_as_ctrl_c_does_and_the_handler_is_restored():
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(process.Stopped) as stopped:
        with process.sigterm_stops_run():
            os.kill(os.getpid(), signal.SIGTERM)
            signal.sigtimedwait([], 5) if hasattr(signal, "sigtimedwait") else None
    assert isinstance(stopped.value, KeyboardInterrupt)
    assert process.interruption_name(stopped.value) == "SIGTERM"
    assert process.interruption_exit_code(stopped.value) == 143
    assert process.interruption_exit_code(KeyboardInterrupt()) == 130
    assert signal.getsignal(signal.SIGTERM) == before


def test_the_frozen_heap_raises_the_full_collection_threshold_and_puts_it_back():
    """While the components run (local/process.frozen_heap) Python's own full collections are
    fewer; after them, the thresholds are the process's again and nothing stays frozen."""
    import gc

    before = gc.get_threshold()
    with process.frozen_heap():
        assert gc.get_threshold() == (before[0], before[1], max(before[2], process.FROZEN_FULL_THRESHOLD))
        assert gc.get_freeze_count() > 0
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0
