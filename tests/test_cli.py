"""CLI argument handling and the bad-input paths (all stop before any component runs)."""
import os
import pathlib

import pytest

from tfxline.cli import common
from tfxline.cli import main as cli
from tests.conftest import write_taxi_slice

ROOT = pathlib.Path(__file__).resolve().parent.parent


def run_cli(argv, capsys):
    code = cli.main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_flags_map_onto_config(tmp_path):
    args = cli.build_parser().parse_args([
        "run", "--output", str(tmp_path), "--train-steps", "77", "--strategy", "mirrored",
        "--precision", "float32", "--set", "training.batch_size=32", "--set", "model.dropout=0.2"])
    cfg = common.config_from_args(args)
    assert cfg.output_root == str(tmp_path)
    assert cfg.training.train_steps == 77
    assert cfg.training.batch_size == 32
    assert cfg.model.dropout == 0.2
    assert cfg.runtime.strategy == "mirrored"
    assert cfg.runtime.precision == "float32"


def test_unknown_subcommand_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(["fly"])
    assert e.value.code == 2


def test_help_says_what_the_command_is_and_its_exit_codes(capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(["--help"])
    assert e.value.code == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "The TFX pipeline: run it locally, or compile it for Kubeflow" in out
    assert "one 'error:' line naming the problem and the fix and exit 2" in out
    assert "``" not in out


def test_help_works_with_docstrings_stripped():
    """Under ``python -OO`` (PYTHONOPTIMIZE=2, as some images set) a module's __doc__ is None: the
    help's epilog, once read from it, raised AttributeError before any command ran (found by pyright)."""
    import subprocess
    import sys
    env = {**os.environ, "PYTHONOPTIMIZE": "2"}
    done = subprocess.run([sys.executable, "-m", "tfxline.cli.main", "--help"], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "one 'error:' line naming the problem and the fix and exit 2" in " ".join(done.stdout.split())


def mutate_fare(row):
    if row["trip_start_hour"] == "19":
        row["fare"] = "twelve"
    return row


def _write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return str(path)


BAD_DATA = {
    "missing path": (lambda d: str(d / "missing.csv"), "does not exist"),
    "empty file": (lambda d: _write(d / "empty.csv", ""), "is empty"),
    "header only": (lambda d: _write(d / "h.csv", open(write_taxi_slice(d / "x" / "t.csv", limit=1)).readline()),
                    "has a header but no data rows"),
    "missing columns": (lambda d: _write(d / "cols.csv", "fare,tips\n1.0,2.0\n"), "lacks required column"),
    "text in a numeric column": (lambda d: write_taxi_slice(d / "text" / "t.csv", limit=200, mutate=mutate_fare),
                                 "column 'fare' needs a number, got 'twelve'"),
    "ragged row": (lambda d: _write(d / "r.csv", open(write_taxi_slice(d / "y" / "t.csv", limit=3)).read() + "1,2\n"),
                   "fields, the header has"),
    "directory without CSVs": (lambda d: (d / "dir").mkdir() or str(d / "dir"), "holds no files matching '*.csv'"),
}


@pytest.mark.parametrize("case", sorted(BAD_DATA))
def test_bad_data_gives_one_line_error_and_writes_nothing(tmp_path, capsys, case):
    make_data, message = BAD_DATA[case]
    data = make_data(tmp_path)
    out_dir = tmp_path / "out"
    code, _, err = run_cli(["run", "--data", data, "--output", str(out_dir)], capsys)
    assert code == cli.EXIT_BAD_INPUT
    lines = [l for l in err.splitlines() if l.startswith("error:")]
    assert len(lines) == 1 and message in lines[0], err
    assert not (out_dir / "serving").exists()
    assert not (out_dir / "metadata.sqlite").exists()


def test_missing_column_is_named(tmp_path, capsys):
    data = write_taxi_slice(tmp_path / "d" / "t.csv", limit=50,
                            mutate=lambda r: {k: v for k, v in r.items()})
    text = open(data).read().replace("payment_type", "payment_kind")
    with open(data, "w") as f:
        f.write(text)
    code, _, err = run_cli(["run", "--data", data, "--output", str(tmp_path / "o")], capsys)
    assert code == cli.EXIT_BAD_INPUT
    assert "payment_type" in err and "lacks required column" in err


def test_bad_config_value_and_unknown_key(tmp_path, capsys):
    code, _, err = run_cli(["run", "--output", str(tmp_path), "--strategy", "warp"], capsys)
    assert code == cli.EXIT_BAD_INPUT and "runtime.strategy" in err
    code, _, err = run_cli(["run", "--output", str(tmp_path), "--set", "training.epoch=3"], capsys)
    assert code == cli.EXIT_BAD_INPUT and "unknown config key training.epoch" in err
    cfg = tmp_path / "c.yaml"
    cfg.write_text("name: x\nfeatures: {label: {name: y, transform: binary, column: a}, inputs: []}\n")
    code, _, err = run_cli(["run", "--config", str(cfg), "--output", str(tmp_path)], capsys)
    assert code == cli.EXIT_BAD_INPUT and "at least one input" in err
    assert not os.path.exists(tmp_path / "metadata.sqlite")


def test_int8_tflite_of_a_model_with_string_inputs_stops_before_the_run(tmp_path, capsys):
    """TFLite's calibrator cannot feed string inputs: said before anything runs, not at the push."""
    data = write_taxi_slice(tmp_path / "d" / "t.csv", limit=50)
    code, out, err = run_cli(["run", "--data", data, "--output", str(tmp_path / "o"), "--set", "serving.tflite=int8"],
                             capsys)
    assert code == cli.EXIT_BAD_INPUT and len(err.strip().splitlines()) == 1
    assert "string input(s) payment_type, company; fix: use serving.tflite: dynamic" in err
    assert not os.path.exists(tmp_path / "o" / "metadata.sqlite")


def test_a_damaged_release_stops_the_run_before_anything(tmp_path, capsys, model_files):
    """The baseline, the drift check and the push read the release: a cut-short release.json is
    one line naming the file and the fix, exit 2, before any component runs (it was exit 1 from
    the DriftGate, with a JSONDecodeError)."""
    from tfxline.serving import push as serving_push
    from tfxline.serving import release as serving_release

    data = write_taxi_slice(tmp_path / "d" / "t.csv", limit=50)
    serving = tmp_path / "o" / "serving" / "taxi"
    version = serving_push.push(model_files, str(serving), {}, keep_versions=2, now=100)
    serving_release.on_push(str(serving), version, serving_release.STABLE, 10, serving_release.Settings("taxi"))
    state = serving / serving_release.LINK / serving_release.STATE_FILE
    state.write_text(state.read_text()[:40])
    code, out, err = run_cli(["run", "--data", data, "--output", str(tmp_path / "o")], capsys)
    assert code == cli.EXIT_BAD_INPUT and len(err.strip().splitlines()) == 1
    assert err.startswith(f"error: the release {state} cannot be used: it is not valid JSON") and "; fix: " in err
    assert not os.path.exists(tmp_path / "o" / "metadata.sqlite")


def test_missing_schema_names_the_draft_command(tmp_path, capsys):
    code, _, err = run_cli(["run", "--output", str(tmp_path), "--schema", "nosuch"], capsys)
    assert code == cli.EXIT_BAD_INPUT
    assert "tfxline schema draft" in err


@pytest.mark.parametrize("span, message", [
    ("2", "holds no span 2 matching data.pattern 'span-{SPAN}/*.csv' (the newest there is span 3)"),
    ("yesterday", "--span 'yesterday' is neither a span number nor a date (YYYY-MM-DD)"),
])
def test_a_backfill_of_a_span_that_is_not_there_stops_before_anything(tmp_path, capsys, span, message):
    for s in (1, 3):
        write_taxi_slice(tmp_path / "d" / f"span-{s}" / "t.csv", limit=50)
    out_dir = tmp_path / "out"
    code, _, err = run_cli(["run", "--data", str(tmp_path / "d"), "--output", str(out_dir),
                            "--set", "data.pattern=span-{SPAN}/*.csv", "--span", span], capsys)
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert code == cli.EXIT_BAD_INPUT and len(lines) == 1 and message in lines[0], err
    assert not out_dir.exists()


def test_a_command_in_a_project_folder_reads_its_config(tmp_path, monkeypatch):
    """`tfxline init` then `tfxline run` in the same folder: without --config the command reads
    ./config.yaml (the project), not the packaged taxi config; --config still picks another."""
    (tmp_path / "config.yaml").write_text((ROOT / "pipeline" / "configs" / "penguin.yaml").read_text())
    monkeypatch.chdir(tmp_path)
    assert common.config_from_args(cli.build_parser().parse_args(["run"])).name == "penguin"
    assert common.config_from_args(cli.build_parser().parse_args(["run", "--config", "taxi"])).name == "taxi"
    (tmp_path / "config.yaml").unlink()
    assert common.config_from_args(cli.build_parser().parse_args(["run"])).name == "taxi"


FAST_EXIT_SCRIPT = """
import atexit, logging, sys, threading, time
from tfxline.cli.main import fast_exit
out = sys.argv[1]
atexit.register(lambda: open(out + '/atexit', 'w').write('ran'))
handler = logging.FileHandler(out + '/log')
logging.getLogger('x').addHandler(handler)
logging.getLogger('x').warning('buffered until logging shuts down')
def late():
    time.sleep(0.3)
    open(out + '/thread', 'w').write('finished')
threading.Thread(target=late).start()
sys.stdout.write('no newline, still buffered')
fast_exit(3)
"""


def test_fast_exit_keeps_what_a_normal_exit_does(tmp_path):
    """The console command ends with cli.main.fast_exit (no interpreter teardown, ~2 s after a
    run): the exit code, a non-daemon thread's work, the atexit handlers and buffered output
    survive it."""
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-c", FAST_EXIT_SCRIPT, str(tmp_path)], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 3, proc.stderr
    assert proc.stdout == "no newline, still buffered"
    assert (tmp_path / "thread").read_text() == "finished"
    assert (tmp_path / "atexit").read_text() == "ran"
    assert (tmp_path / "log").read_text() == "buffered until logging shuts down\n"


def test_an_interrupted_commands_exit_waits_for_threads_a_few_seconds_at_most(tmp_path):
    """After a Ctrl-C, a thread of the stopped work (a Beam bundle's) may never end: the exit
    (130) waits INTERRUPTED_THREADS_WAIT_S for it, then ends anyway; its atexit handlers still run."""
    import subprocess
    import sys

    script = FAST_EXIT_SCRIPT.replace("time.sleep(0.3)", "threading.Event().wait()").replace(
        "fast_exit(3)", "main.INTERRUPTED_THREADS_WAIT_S = 0.5\nfast_exit(130)").replace(
        "from tfxline.cli.main import fast_exit", "from tfxline.cli import main\nfrom tfxline.cli.main import fast_exit")
    proc = subprocess.run([sys.executable, "-c", script, str(tmp_path)], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 130, proc.stderr
    assert not (tmp_path / "thread").exists() and (tmp_path / "atexit").read_text() == "ran"


def test_console_command_is_the_fast_exit_entry():
    text = (ROOT / "setup.py").read_text()
    assert '"tfxline = tfxline.cli.main:entry"' in text


def test_a_console_whose_reader_left_drops_writes_instead_of_raising():
    """`tfxline run | head -3`: the pipe's reader leaves mid-run; the run's console stream
    (cli.common.ReaderMayLeave) drops what follows, so the run goes on and is recorded."""
    r, w = os.pipe()
    os.close(r)
    raw = os.fdopen(w, "w")
    stream = common.ReaderMayLeave(raw)
    stream.write("[ start ] CsvExampleGen\n")
    stream.flush()  # the reader is gone: EPIPE
    assert stream.gone
    assert stream.write("[ done  ] CsvExampleGen (1.0s)\n") == len("[ done  ] CsvExampleGen (1.0s)\n")
    print("a summary line", file=stream, flush=True)
    with pytest.raises(BrokenPipeError):  # the bare stream raises, which stopped the run unrecorded
        print("x", file=raw, flush=True)
    try:
        raw.close()
    except BrokenPipeError:
        pass


def test_the_packaged_configs_the_help_names_are_those_shipped():
    import glob

    from tfxline.cli.common import PACKAGED_CONFIGS

    shipped = sorted(os.path.basename(p)[:-5] for p in glob.glob(os.path.join(ROOT, "pipeline", "configs", "*.yaml")))
    assert sorted(PACKAGED_CONFIGS) == shipped
