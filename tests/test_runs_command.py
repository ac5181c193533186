"""`tfxline runs` and `tfxline runs show` as the on-call person paged by TfxlineRunFailed runs
them: a failed run names its failed component and its error line, and `runs show` its true
wall time (MLMD does not hold it; the run's summary.json / run.json do). On a real failed run
(the shared ``anomalies_run``: stopped at the AnomaliesGate), on copies of it whose recording
is corrupted or gone, and on a real MLMD store with no recording at all."""
import contextlib
import io
import json
import os
import shutil

import pytest

from tfxline.cli import main as cli
from tests.test_console import Runs

GATE = "AnomaliesGate"
TABLE_WIDTH = 120


def tfxline(*argv):
    """`tfxline ARGV` in this process: (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err):
        code = cli.main(list(argv), stream=out)
    return code, out.getvalue(), err.getvalue()


def the_run(out_dir):
    """The failed run's id and what it recorded (summary.json)."""
    [run_id] = os.listdir(out_dir / "runs")
    with open(out_dir / "runs" / run_id / "summary.json") as f:
        return run_id, json.load(f)


def error_line_of(stderr):
    """What `tfxline run` printed as the run's error line, without its prefix."""
    [line] = [l for l in stderr.splitlines() if l.startswith("error: ")]
    return line[len("error: pipeline failed: "):]


@pytest.fixture
def copied_run(anomalies_run, tmp_path):
    """A copy of the failed run's output root (the shared fixture's stays as it is)."""
    out_dir = anomalies_run[0]
    copy = tmp_path / "out"
    shutil.copytree(out_dir, copy)
    return copy


@pytest.mark.e2e
def test_runs_names_the_failed_component_and_prints_the_error_line_below_the_table(anomalies_run):
    out_dir, code, _, stderr = anomalies_run
    assert code == cli.EXIT_FAILED
    run_id, recorded = the_run(out_dir)
    assert recorded["error"] == error_line_of(stderr) and "violates the schema" in recorded["error"]

    code, out, err = tfxline("runs", "--output", str(out_dir))
    assert code == 0 and err == ""
    table, errors = out.rstrip("\n").split("\n\n")
    header, row = table.splitlines()
    assert header.split()[:4] == ["run", "started", "spans", "status"]
    assert row.startswith(run_id) and f"  failed: {GATE}  " in row
    assert all(len(line) <= TABLE_WIDTH for line in table.splitlines())
    assert errors.splitlines() == [f"run {run_id} failed at {GATE}: {recorded['error']}"]


@pytest.mark.e2e
def test_runs_show_prints_the_failed_component_the_error_line_and_the_true_wall_time(anomalies_run):
    out_dir, _, _, stderr = anomalies_run
    run_id, recorded = the_run(out_dir)
    code, out, err = tfxline("runs", "show", run_id, "--output", str(out_dir))
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert lines[:3] == [f"run {run_id}:", f"  failed: {GATE}", f"  error: {error_line_of(stderr)}"]
    components = next(l for l in lines if l.startswith("  components:"))
    assert recorded["wall_seconds"] > 0
    assert components.endswith(f"; wall time {recorded['wall_seconds']:.0f}s"), components
    assert f"  pushed: nothing (the run failed at {GATE})" in lines
    assert f"  report: {out_dir / 'runs' / run_id / 'report.html'}" in lines

    # `latest`, the alert's one command, is the newest run: the same lines.
    assert tfxline("runs", "show", "latest", "--output", str(out_dir)) == (0, out, "")


@pytest.mark.e2e
def test_a_wrong_run_id_is_one_error_line(anomalies_run):
    out_dir = anomalies_run[0]
    code, out, err = tfxline("runs", "show", "no-such-run", "--output", str(out_dir))
    assert code == cli.EXIT_BAD_INPUT and out == ""
    assert err.count("\n") == 1 and err.startswith("error: run 'no-such-run' is not in the MLMD store ")
    assert err.rstrip().endswith("; 'tfxline runs' lists the recorded runs")


@pytest.mark.e2e
def test_a_corrupted_summary_json_falls_back_to_run_json_then_to_mlmd(copied_run):
    run_id, recorded = the_run(copied_run)
    run_dir = copied_run / "runs" / run_id
    (run_dir / "summary.json").write_text('{"error": "trunc')  # a disk filled while it was written

    # run.json holds the error line and the wall time too
    code, out, err = tfxline("runs", "--output", str(copied_run))
    assert code == 0 and err == ""
    assert out.rstrip().endswith(f"run {run_id} failed at {GATE}: {recorded['error']}")
    code, out, err = tfxline("runs", "show", "latest", "--output", str(copied_run))
    assert code == 0 and f"  error: {recorded['error']}" in out.splitlines()
    assert f"wall time {recorded['wall_seconds']:.0f}s" in out

    # Neither file readable (run.json not even UTF-8): what MLMD has, the failed component.
    (run_dir / "run.json").write_bytes(b"\xff\xfe[")
    code, out, err = tfxline("runs", "--output", str(copied_run))
    assert code == 0 and err == ""
    assert f"  failed: {GATE}  " in out.splitlines()[1]
    assert out.splitlines()[-1] == (f"run {run_id} failed at {GATE}: no error line recorded (its summary.json and "
                                    "run.json are missing or unreadable; its log in the output root's logs/ has "
                                    "the traceback)")
    code, out, err = tfxline("runs", "show", run_id, "--output", str(copied_run))
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert lines[1] == f"  failed: {GATE}" and lines[2].startswith("  error: not recorded (")
    assert next(l for l in lines if l.startswith("  components:")).endswith("; wall time unknown")

    # Gone altogether: the same.
    shutil.rmtree(run_dir)
    code, out, _ = tfxline("runs", "show", "latest", "--output", str(copied_run))
    assert code == 0 and out.splitlines()[1:3] == [f"  failed: {GATE}", lines[2]]
    assert "wall time unknown" in out and "report:" not in out


def test_a_run_without_its_recording_has_an_unknown_wall_time_not_0s(tmp_path):
    """Runs read back from MLMD alone (another machine's, or recorded by a runner that writes no
    run.json): the wall time is unknown; once run.json says it, it is that."""
    runs = Runs(tmp_path)
    runs.run("r1")
    runs.run("r2")
    code, out, err = tfxline("runs", "show", "latest", "--output", str(tmp_path))
    assert code == 0 and err == "" and out.startswith("run r2:\n")
    components = next(l for l in out.splitlines() if l.startswith("  components:"))
    assert components.endswith("; wall time unknown") and "0s" not in components
    assert "failed" not in out and "error" not in out  # a complete run: no failure lines

    os.makedirs(tmp_path / "runs" / "r1")
    (tmp_path / "runs" / "r1" / "run.json").write_text(json.dumps({"wall_seconds": 11.8, "error": ""}))
    code, out, _ = tfxline("runs", "show", "r1", "--output", str(tmp_path))
    assert code == 0 and "; wall time 12s" in out

    # the table of complete runs: rows only, nothing below
    code, out, _ = tfxline("runs", "--output", str(tmp_path))
    assert code == 0 and [l.split()[0] for l in out.splitlines()[1:]] == ["r2", "r1"]


def test_latest_without_a_run_of_the_pipeline_is_one_error_line(tmp_path):
    Runs(tmp_path).run("r1")  # a run of pipeline taxi; the penguin config names pipeline penguin
    code, out, err = tfxline("runs", "show", "latest", "--config", "penguin", "--output", str(tmp_path))
    assert code == cli.EXIT_BAD_INPUT and out == ""
    assert err.count("\n") == 1 and err.startswith("error: no run of pipeline penguin in ")
    assert "; run the pipeline first (tfxline run), or pass the --config" in err


@pytest.mark.e2e
def test_runs_and_runs_show_read_the_history_after_the_data_is_gone(anomalies_run, tmp_path):
    """The runbook's first command works when the day's file was moved away: only run needs it."""
    out_dir = anomalies_run[0]
    gone = str(tmp_path / "moved-away.csv")
    code, out, err = tfxline("runs", "--data", gone, "--output", str(out_dir))
    assert code == 0 and f"failed: {GATE}" in out, err
    code, out, err = tfxline("runs", "show", "latest", "--data", gone, "--output", str(out_dir))
    assert code == 0 and GATE in out, err
    code, _, err = tfxline("run", "--data", gone, "--output", str(out_dir))
    assert code == cli.EXIT_BAD_INPUT and f"data path {gone} does not exist" in err


@pytest.mark.e2e
def test_a_reader_that_leaves_early_ends_the_command_quietly(anomalies_run):
    """tfxline runs | head -1: exit 141 (as SIGPIPE would end it), no traceback."""
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-m", "tfxline.cli.main", "runs", "--output", str(anomalies_run[0])],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tests_root())
    proc.stdout.close()  # the reader is gone before the first line
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=300) == cli.EXIT_BROKEN_PIPE, err
    assert "Traceback" not in err and "BrokenPipeError" not in err


def tests_root():
    return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
