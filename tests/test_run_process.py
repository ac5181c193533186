"""What a local run does to its own process (local/process.py, local/runner.py). A run that a
Ctrl-C or SIGTERM stops is recorded as interrupted, not left "running" for ever:
its stopped component CANCELED in MLMD, its error line, its report, exit 130 / 143
(local/runner.py, local/outcome.cancel_unfinished, local/process.signals_stop_run)."""
import json
import os
import signal
import subprocess
import sys
import time

import apache_beam as beam
import pytest

from tfxline.local import process
from tests.conftest import ROOT, tfxline, write_taxi_slice


# A run whose Transform sends the process a Ctrl-C's SIGINT from inside a Beam bundle (TFT's
# DoFn that runs the analysis graph on the examples): Beam's DoFnRunner catches it there and raises
# RuntimeError("KeyboardInterrupt [while running 'Analyze/...']") (apache_beam/runners/common.py,
# _reraise_augmented), which a new user's Ctrl-C met 3 times in 9. With SWALLOW = True a library
# catches it and goes on, as TensorFlow did in CI when the signal landed in an import (a SystemError
# that a fallback caught: the run went on to exit 0); process.raise_stop_a_library_swallowed.
CTRL_C_IN_A_BEAM_BUNDLE = """
import os, signal, sys
from tensorflow_transform.beam import impl
from tfxline.cli import main

process, sent = impl._RunMetaGraphDoFn.process, []

def process_then_ctrl_c(self, *args, **kwargs):
    if not sent:
        sent.append(True)
        try:
            os.kill(os.getpid(), signal.SIGINT)
        except KeyboardInterrupt:
            if not SWALLOW:
                raise
    return process(self, *args, **kwargs)

impl._RunMetaGraphDoFn.process = process_then_ctrl_c
sys.exit(main.main(sys.argv[1:]))
"""


def terminal_ctrl_c():
    """A child's SIGINT as a terminal's Ctrl-C reaches it. A suite started as a background job (a
    shell's `cmd &`) has SIGINT ignored, which a run keeps ignoring by design
    (test_an_ignored_ctrl_c_stays_ignored): without this the Ctrl-C tests failed there."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.fixture
def ctrl_c_reaches_python():
    """This process's SIGINT as Python sets it under a terminal (KeyboardInterrupt), put back after."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


@pytest.mark.parametrize("when", ["2 s into Transform", "in a Beam bundle", "swallowed by a library"])
@pytest.mark.one_stack("1.16", why="our signal handling around the components; the signal tests without a pipeline run on both stacks")
def test_ctrl_c_during_a_component_records_the_run_as_interrupted(tmp_path, when):
    data = write_taxi_slice(tmp_path / "d" / "t.csv", limit=600)
    out = tmp_path / "out"
    args = ["run", "--data", data, "--output", str(out)]
    in_bundle = when != "2 s into Transform"
    script = f"SWALLOW = {when == 'swallowed by a library'}" + CTRL_C_IN_A_BEAM_BUNDLE
    command = ["-c", script] if in_bundle else ["-m", "tfxline.cli.main"]
    proc = subprocess.Popen([sys.executable, *command, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, cwd=ROOT, preexec_fn=terminal_ctrl_c)
    seen = []
    for line in proc.stdout:
        seen.append(line)
        if line.startswith("[ start ] Transform") and not in_bundle:  # the longest component
            time.sleep(2)
            proc.send_signal(signal.SIGINT)  # what Ctrl-C in the terminal sends
            break
    rest, err = proc.communicate(timeout=600)
    stdout = "".join(seen) + rest
    assert proc.returncode == 130, (stdout, err)
    if when == "in a Beam bundle":  # Beam's wrapping, in the run's log: still an interrupted run, not a failed one
        [log] = os.listdir(out / "logs")
        assert "KeyboardInterrupt [while running" in (out / "logs" / log).read_text()
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
    proc = subprocess.Popen([sys.executable, "-c", "import os, signal; from tfxline.cli import main; "
                             "main.build_parser = (lambda real: lambda: (os.kill(os.getpid(), signal.SIGTERM), "
                             "real())[1])(main.build_parser); raise SystemExit(main.main(['runs', '--output', "
                             f"{str(tmp_path)!r}]))"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=ROOT)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 143, err
    assert err.strip().splitlines()[-1] == "interrupted (SIGTERM)"


def test_a_command_a_signal_stops_inside_beam_is_one_line_too(tmp_path):
    """Any command: a SIGTERM that Beam turns into a RuntimeError is still the same one line and
    exit 143, not a traceback."""
    proc = subprocess.Popen([sys.executable, "-c", "import signal; from tfxline.cli import main; "
                             "from tests.test_run_process import run_a_bundle_that_signals as stop; "
                             "main.build_parser = (lambda real: lambda: (stop(signal.SIGTERM), real())[1])"
                             "(main.build_parser); "
                             f"raise SystemExit(main.main(['runs', '--output', {str(tmp_path)!r}]))"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 143, err
    assert err.strip().splitlines()[-1] == "interrupted (SIGTERM)" and "Traceback" not in err


def test_sigterm_inside_a_run_raises_as_ctrl_c_does_and_the_handlers_are_restored():
    before = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    with pytest.raises(process.Stopped) as stopped:
        with process.signals_stop_run() as seen:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)
    assert isinstance(stopped.value, KeyboardInterrupt) and seen == [stopped.value]
    assert process.interruption_name(stopped.value) == "SIGTERM"
    assert process.interruption_exit_code(stopped.value) == 143
    assert process.interruption_exit_code(KeyboardInterrupt()) == 130
    assert (signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)) == before


class Signal(beam.DoFn):
    def __init__(self, signum):
        self.signum = signum

    def process(self, element):
        os.kill(os.getpid(), self.signum)
        time.sleep(5)
        yield element


def run_a_bundle_that_signals(signum):
    """A Beam pipeline (the in-memory runner, as a local run's components use) whose one bundle
    sends the process ``signum``."""
    from apache_beam.options.pipeline_options import PipelineOptions

    options = PipelineOptions(["--direct_running_mode=in_memory", "--direct_num_workers=1"])
    with beam.Pipeline(options=options) as p:
        p | beam.Create([1]) | beam.ParDo(Signal(signum))


@pytest.mark.parametrize("signum, name", [(signal.SIGINT, "Ctrl-C"), (signal.SIGTERM, "SIGTERM")])
def test_a_signal_beam_wraps_is_still_found(signum, name, ctrl_c_reaches_python):
    """Beam turns what a signal raises in a bundle into a RuntimeError naming the step; the
    interruption is found in it, and each context that saw it (nested: the command's and the
    run's) has it."""
    with pytest.raises(RuntimeError) as raised:
        with process.signals_stop_run() as outer, process.signals_stop_run() as inner:
            run_a_bundle_that_signals(signum)
    assert "[while running 'ParDo(Signal)']" in str(raised.value)
    stop = process.interruption_of(raised.value, inner)
    assert isinstance(stop, KeyboardInterrupt) and process.interruption_name(stop) == name
    assert outer == inner == [stop]
    assert process.interruption_of(RuntimeError("lost"), [stop]) is stop  # a chain without it: what was seen
    assert process.interruption_of(RuntimeError("a failure"), []) is None


def test_an_ignored_ctrl_c_stays_ignored():
    """A shell starts a background job with SIGINT ignored: a run there ignores it too."""
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with process.signals_stop_run() as seen:
            assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.5)
        assert seen == []
    finally:
        signal.signal(signal.SIGINT, previous)


def test_the_frozen_heap_raises_the_full_collection_threshold_and_puts_it_back():
    """While the components run (local/process.frozen_heap) Python's own full collections are
    fewer; after them, the thresholds are the process's again and nothing stays frozen."""
    import gc

    before = gc.get_threshold()
    with process.frozen_heap():
        assert gc.get_threshold() == (before[0], before[1], max(before[2], process.FROZEN_FULL_THRESHOLD))
        assert gc.get_freeze_count() > 0
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0
