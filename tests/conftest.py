"""Shared fixtures. The test process is an entry point: it picks tf_keras (Keras 2)
before anything imports TensorFlow, as the tfxline command does.

Run inventory: every real pipeline run of the suite, by scenario (issue #63). A pipeline run is
minutes of CI on one core: a new test that needs a scenario below reads its fixture, and adds a
run only where the run itself is what it checks (then it says why in its module docstring).

  scenario                                 run (fixture, session)         read by
  a first blessed run, taxi slice          pipeline_run                   test_e2e, test_report(_browser), test_bench_smoke,
                                                                          test_object_store, test_rollback, test_skew,
                                                                          test_step_profile, test_tflite, test_trainer_run,
                                                                          test_monitoring (the compiled Pusher's metrics)
  its cached re-run (SQLite)               test_e2e (on pipeline_run's root)
  a worse candidate vs the serving model   worse_candidate_run            test_e2e, test_alerting (CandidateWorse, RunSlow)
  a drift stop vs the serving model        drift_stop_run                 test_e2e, test_alerting (DriftStoppedRun, muted page)
  a schema violation stop                  anomalies_run                  test_e2e, test_report(_browser), test_runs_command,
                                                                          test_alerting (RunFailed, reason anomalies)
  penguin: blessed, then a worse one       multiclass_runs, regression_runs  test_tasks_e2e, test_report_browser
  (worse_candidate_run and drift_stop_run run on served_copy, a copy of pipeline_run's root, and
  push to monitoring_stack as scenario=worse / drift where Prometheus is installed; anomalies_run
  as scenario=anomalies. One Pushgateway + Prometheus + Alertmanager for the session:
  monitoring_stack, read by test_monitoring, test_dashboard, test_alerting.)

  Runs of their own, each because the run is what is checked: test_monitoring (a run that trains
  and pushes, Trainer seconds > 0, which a cached run's 0 s is not; then two cached re-runs of it,
  the last to a gateway that is down), test_alerting (a pre-flight refusal, a near candidate:
  blessed and pushed, no alert), test_concurrency (two at once on SQLite: the second waits),
  test_mariadb (two at once and a cached re-run on a MariaDB store: none waits; gc there),
  test_spans (a week of daily spans: backfill, cache, window, span drift, gc), test_e2e (too
  few rows for the split), test_init_e2e (init's project), test_text_folder_e2e (a folder of .txt
  files: TextExampleGen), test_text_e2e (a review table: the bag), test_text_pretrained (its
  Transform passes the raw text through), test_trees_e2e (a trees-only model), test_notebooks,
  test_interactive,
  test_containers (compiled runs in the image), test_bench_smoke (bench/e2e.py --smoke).
"""
import os

os.environ["TF_USE_LEGACY_KERAS"] = "1"  # see trainer/keras_compat.py for why
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import contextlib  # noqa: E402
import csv  # noqa: E402
import io  # noqa: E402
import itertools  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402

import pytest  # noqa: E402

from tfxline.pipeline.data import source as data_source  # noqa: E402
from tfxline.pipeline.config.load import load_config  # noqa: E402

SLICE_ROWS = 3000        # every 5th row of the 15k taxi rows: small, but every category shows up
E2E_TRAIN_STEPS = 300    # enough to clear the default AUC/accuracy gates on the slice
SHARED_RUN_SETS = ("runtime.profile_steps=50", "serving.tflite=dynamic")  # pipeline_run's, beyond e2e_config


def _tfx_sdists() -> set:
    """TFX's sdists of itself (tfx.utils.dependency_utils.build_ephemeral_package: ~50 MB in a
    ``tempfile.mkdtemp()`` folder that TFX never removes) in this machine's temp dir."""
    import glob
    import tempfile

    return set(glob.glob(os.path.join(tempfile.gettempdir(), "tmp*", "build", "tfx")))


def pytest_sessionstart(session):
    session.config._tfx_sdists_before = _tfx_sdists()


def pytest_sessionfinish(session, exitstatus):
    """The suite leaves no TFX sdist behind: a test that runs a Beam executor outside a local
    run must do it as a run does (patches/tfx_packaging.no_sdist_for_local_runners). A CI
    clone that leaked one per executor call lost gigabytes of disk to them."""
    left = sorted(_tfx_sdists() - getattr(session.config, "_tfx_sdists_before", set()))
    if left:
        message = (f"error: the tests left {len(left)} TFX sdist folder(s) in the temp dir (~50 MB each), e.g. "
                   f"{os.path.dirname(os.path.dirname(left[0]))}; run Beam executors in tests inside "
                   "tfx_packaging.no_sdist_for_local_runners()")
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        reporter.write_line("\n" + message, red=True) if reporter else sys.stderr.write(message + "\n")
        if session.exitstatus == 0:
            session.exitstatus = 1


# The two supported TFX stacks (tools/bootstrap.sh, requirements/tfx-<stack>-py*.lock.txt).
STACKS = ("1.16", "1.21")
BOTH_STACKS = "TFXLINE_BOTH_STACKS"  # set by .ci/run: this suite runs beside the other stack's


def tfx_stack() -> str:
    """This suite's TFX stack: the installed tfx's major.minor version ("1.16", "1.21")."""
    from importlib.metadata import version

    return ".".join(version("tfx").split(".")[:2])


def pytest_collection_modifyitems(config, items):
    """``@pytest.mark.one_stack(STACK, why=...)``: where both stacks' suites run side by side (CI:
    .ci/run sets TFXLINE_BOTH_STACKS=1), the test runs in STACK's suite only, and the other suite
    skips it saying ``why`` (what covers its paths on both stacks). Without TFXLINE_BOTH_STACKS
    (`make test`, `make test-tfx121`) every test runs on the stack at hand."""
    both = os.environ.get(BOTH_STACKS, "") not in ("", "0")
    here = tfx_stack() if both else None
    for item in items:
        marker = item.get_closest_marker("one_stack")
        if marker is None:
            continue
        (stack,) = marker.args
        if stack not in STACKS or not marker.kwargs.get("why"):
            raise pytest.UsageError(f"{item.nodeid}: one_stack takes one of {STACKS} and why=..., not "
                                    f"{marker.args} {marker.kwargs}")
        if both and stack != here:
            item.add_marker(pytest.mark.skip(reason=f"{BOTH_STACKS}: runs in the TFX {stack} suite "
                                                    f"({marker.kwargs['why']})"))


def missing(why: str, required_by: str = "CI") -> None:
    """Something a test needs is not on this machine: a skip for a developer, a failure where
    the environment variable ``required_by`` says it must be there (.ci/run installs it)."""
    required = os.environ.get(required_by, "")
    if required not in ("", "0"):
        pytest.fail(f"{required_by}={required} but {why}")
    pytest.skip(why)


def write_taxi_slice(path, every=5, limit=SLICE_ROWS, mutate=None, offset=0, excel=False):
    """Write a deterministic slice of the shipped taxi CSV (every `every`th row from `offset`);
    `mutate(row)` may edit rows. ``excel``: as Excel's "CSV UTF-8" saves it, with a byte-order
    mark and CRLF line ends."""
    with open(data_source.default_data_path(), newline="") as src:
        reader = csv.DictReader(src)
        rows = list(itertools.islice(itertools.islice(reader, offset, None, every), limit))
        fields = reader.fieldnames
    if mutate:
        rows = [mutate(dict(r)) for r in rows]
    os.makedirs(os.path.dirname(str(path)), exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8-sig" if excel else "utf-8") as f:
        w = csv.DictWriter(f, fieldnames=fields, lineterminator="\r\n" if excel else "\n")
        w.writeheader()
        w.writerows(rows)
    return str(path)


@pytest.fixture
def model_files(tmp_path):
    """A directory laid out as a SavedModel (not a loadable one): what pushes copy."""
    d = tmp_path / "model"
    (d / "variables").mkdir(parents=True)
    (d / "saved_model.pb").write_bytes(b"pb")
    (d / "variables" / "variables.index").write_bytes(b"idx")
    (d / "variables" / "variables.data-00000-of-00001").write_bytes(b"data" * 1000)
    return str(d)


@pytest.fixture(scope="session")
def taxi_slice(tmp_path_factory):
    """The shared run's data, saved as a spreadsheet export (BOM, CRLF): the pipeline takes the
    CSVs people have, end to end (pre-flight, ExampleGen, statistics, training, serving)."""
    return write_taxi_slice(tmp_path_factory.mktemp("data") / "taxi.csv", excel=True)


def e2e_config(data_path, output_root, *extra):
    return load_config(overrides=[
        f"data.path={data_path}", f"output_root={output_root}",
        "training.mode=steps", f"training.train_steps={E2E_TRAIN_STEPS}", "training.epochs=3", "training.eval_steps=10",
        *extra])


@pytest.fixture(scope="session")
def pipeline_run(taxi_slice, tmp_path_factory):
    """One real pipeline run on the slice, shared by every test that inspects its outputs. Its
    Trainer also profiles one execution of its train function (runtime.profile_steps; the
    report test reads the summary), and its Pusher writes a checked TFLite model
    (serving.tflite=dynamic; tests/test_tflite.py)."""
    from tfxline.local import runner as local_runner

    cfg = e2e_config(taxi_slice, tmp_path_factory.mktemp("run"), *SHARED_RUN_SETS)
    out = io.StringIO()
    summary = local_runner.run(cfg, stream=out)
    return cfg, summary, out.getvalue()


@pytest.fixture(scope="session")
def anomalies_run(tmp_path_factory, request):
    """One run through the CLI on data that violates the schema (an unseen payment_type):
    it stops at the AnomaliesGate. Shared by the gate test, the failed-run report tests and
    test_alerting (the page it pushes as scenario=anomalies, where Prometheus is installed).
    Returns (output dir, exit code, stdout, stderr)."""
    from tfxline.cli import main as cli

    def unseen_payment(row):
        if row["trip_start_hour"] == "3":
            row["payment_type"] = "Bitcoin"  # not in the schema's payment_type domain
        return row

    root = tmp_path_factory.mktemp("anomalies")
    data = write_taxi_slice(root / "d" / "t.csv", limit=600, mutate=unseen_payment)
    out_dir, stdout, stderr = root / "out", io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(stderr):
        code = cli.main(["run", "--data", data, "--output", str(out_dir),
                         *[a for o in pushing_as(request, "anomalies") for a in ("--set", o)]], stream=stdout)
    return out_dir, code, stdout.getvalue(), stderr.getvalue()


@pytest.fixture(scope="session")
def monitoring_stack(tmp_path_factory):
    """The session's one Pushgateway + Prometheus (the committed rules, waits cut to 1 s) +
    Alertmanager + webhook (tests/prometheus_servers.Stack), shared by test_monitoring,
    test_dashboard, test_alerting and the shared runs below: each test pushes under its own job
    or ``scenario`` label and reads only those, and none stops the gateway but test_alerting's
    restart test."""
    from tests import prometheus_servers

    if prometheus_servers.binaries() is None:
        missing("prometheus and prometheus-pushgateway are not installed (apt-get install prometheus "
                "prometheus-pushgateway)", "TFXLINE_REQUIRE_PROMETHEUS")
    stack = prometheus_servers.Stack(str(tmp_path_factory.mktemp("prometheus")))
    yield stack
    stack.stop()


def pushing_as(request, scenario):
    """Config overrides that push a shared run's metrics to the session's stack under
    ``scenario`` (what test_alerting reads), or none where Prometheus is not installed (the
    Debian 13 root): what the other readers of the run assert does not depend on it."""
    from tests import prometheus_servers

    if prometheus_servers.binaries() is None:
        return []
    stack = request.getfixturevalue("monitoring_stack")
    return [f"monitoring.pushgateway_url={stack.servers.gateway_url}", "monitoring.timeout_seconds=3",
            f"monitoring.labels={{{prometheus_servers.LABEL}: {scenario}}}"]


@pytest.fixture(scope="session")
def served_copy(pipeline_run, tmp_path_factory):
    """A copy of the shared run's output root (its MLMD store, artifacts and serving directory,
    the served model being the next runs' baseline): the runs after a first one (a worse
    candidate, a drift stop, test_alerting's scenarios) add runs to it, never to the shared one.
    (shared run id, the copy's root, its config: the shared run's)."""
    import shutil

    cfg, summary, _ = pipeline_run
    copy = tmp_path_factory.mktemp("served-copy") / "out"
    shutil.copytree(cfg.output_root, copy, symlinks=True)
    return summary.run_id, str(copy), e2e_config(cfg.data.path, copy, *SHARED_RUN_SETS)


@pytest.fixture(scope="session")
def drift_stop_run(served_copy, tmp_path_factory, request):
    """fare x 50 on the served copy: passes the schema, stopped by the drift gate before Transform
    (test_e2e reads the error line and what ran, test_alerting the alerts it pushed as
    scenario=drift). A dict: code, out, err, cfg, versions (the serving versions before) and
    versions_after, latest (the stopped run's summary, read at once)."""
    from tfxline.cli import main as cli
    from tfxline.runs.summary import collect_run
    from tfxline.serving import push as serving_push

    _, output, cfg = served_copy
    before = {v: serving_push.read_metadata(cfg.serving_dir, v) for v in serving_push.versions(cfg.serving_dir)}
    data = write_taxi_slice(tmp_path_factory.mktemp("drifted") / "taxi.csv",
                            mutate=lambda row: dict(row, fare=str(float(row["fare"] or 0) * 50)))
    sets = [a for o in pushing_as(request, "drift") for a in ("--set", o)]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err):
        code = cli.main(["run", "--data", data, "--output", output, "--train-steps", "10", *sets], stream=out)
    after = {v: serving_push.read_metadata(cfg.serving_dir, v) for v in serving_push.versions(cfg.serving_dir)}
    return {"code": code, "out": out.getvalue(), "err": err.getvalue(), "cfg": cfg, "versions": before,
            "versions_after": after, "latest": collect_run(cfg.metadata_path, cfg.name)}


@pytest.fixture(scope="session")
def worse_candidate_run(served_copy, tmp_path_factory, request):
    """A barely-trained candidate (1 step, learning rate 1e-6) on another slice of the same taxi
    rows (the drift gate compares for real, and passes), on the served copy after a recorded
    history of three fast runs (10 s each, as a quicker machine would have recorded them): the
    gate refuses it (test_e2e: nothing moves, its report; test_alerting: CandidateWorse and
    RunSlow, pushed as scenario=worse). (shared run id, cfg, serving versions before, the run's
    summary, its console text, the serving versions after)."""
    import json
    import shutil

    from tfxline.local import runner as local_runner
    from tfxline.runs.console import format_summary
    from tfxline.serving import push as serving_push

    shared_run, output, cfg = served_copy
    before = {v: serving_push.read_metadata(cfg.serving_dir, v) for v in serving_push.versions(cfg.serving_dir)}
    runs_dir = os.path.join(output, "runs")
    with open(os.path.join(runs_dir, shared_run, "summary.json")) as f:
        template = json.load(f)  # a run that trained
    history = [os.path.join(runs_dir, f"history-{i}") for i in range(3)]
    for i, folder in enumerate(history):
        os.makedirs(folder)
        with open(os.path.join(folder, "summary.json"), "w") as f:
            json.dump(dict(template, run_id=f"history-{i}", wall_seconds=10.0,
                           created_ms=template["created_ms"] - 1000 * (i + 1)), f)
    other_slice = write_taxi_slice(tmp_path_factory.mktemp("same-distribution") / "taxi.csv", offset=1)
    worse = e2e_config(other_slice, output, "training.train_steps=1", "training.epochs=1",
                       "model.learning_rate=0.000001", *pushing_as(request, "worse"))
    out = io.StringIO()
    try:
        result = local_runner.run(worse, stream=out)
    finally:
        for folder in history:
            shutil.rmtree(folder)
    after = {v: serving_push.read_metadata(cfg.serving_dir, v) for v in serving_push.versions(cfg.serving_dir)}
    return shared_run, cfg, before, result, out.getvalue() + format_summary(result), after


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# A much worse candidate: barely trained (tests/test_tasks_e2e.py).
WORSE = ["--set", "model.learning_rate=0.000001", "--set", "training.epochs=1"]


def tfxline(*args):
    """`tfxline ARGS` in a fresh process, as a user runs it."""
    return subprocess.run([sys.executable, "-m", "tfxline.cli.main", *args], capture_output=True, text=True,
                          timeout=900, cwd=ROOT)


def two_runs(config, output, *worse_sets, first_sets=()):
    """A packaged config's first run, the serving directory after it, then a much worse
    candidate's run on the same output root: (cfg, (first summary, its stdout), {version:
    push metadata}, (second summary, its stdout)). Each run is a `tfxline run` process: TFT
    names its vocabulary tables by analyzer position, so a pipeline with other feature types
    in the same Python process as the shared taxi run would collide with that run's tables.
    ``first_sets``: --set arguments of the first run only."""
    from tfxline.serving import push as serving_push
    from tfxline.runs.summary import collect_run

    cfg = load_config(config, overrides=[f"output_root={output}"])
    first = tfxline("run", "--config", config, "--output", str(output), *first_sets)
    assert first.returncode == 0, first.stderr[-3000:]
    first_summary = collect_run(cfg.metadata_path, cfg.name)
    served = {v: serving_push.read_metadata(cfg.serving_dir, v) for v in serving_push.versions(cfg.serving_dir)}
    second = tfxline("run", "--config", config, "--output", str(output), *WORSE, *worse_sets)
    assert second.returncode == 0, second.stderr[-3000:]
    return cfg, (first_summary, first.stdout), served, (collect_run(cfg.metadata_path, cfg.name), second.stdout)


@pytest.fixture(scope="session")
def multiclass_runs(tmp_path_factory):
    """Penguin species (pipeline/configs/penguin.yaml): blessed (with an int8 TFLite model), then a worse candidate.
    evaluation.min_accuracy=0.1 and min_accuracy_lift=-1 for the second: the floors alone would
    pass it, so the change threshold against the serving model is what refuses it."""
    return two_runs("penguin", tmp_path_factory.mktemp("penguin"), "--set", "evaluation.min_accuracy=0.1",
                    "--set", "evaluation.min_accuracy_lift=-1",
                    first_sets=("--set", "serving.tflite=int8"))  # a model of numbers only: int8 calibrates


@pytest.fixture(scope="session")
def regression_runs(tmp_path_factory):
    """Penguin body mass (pipeline/configs/penguin_mass.yaml, no threshold set): blessed (with a
    float32 TFLite model), then a worse candidate."""
    return two_runs("penguin_mass", tmp_path_factory.mktemp("penguin_mass"), first_sets=("--set", "serving.tflite=none"))


GCS_EMULATOR_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), ".roots", "gcs-emulator")


@pytest.fixture(scope="session")
def gcs(tmp_path_factory):
    """A GCS on loopback (tests/gcs_server.py) that this process's TensorFlow, Beam and
    google-cloud-storage reach: yields a fresh ``gs://tfxline/<dir>`` prefix maker. The emulator
    comes from .roots/gcs-emulator (.ci/run installs it there, pinned)."""
    import uuid

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import gcs_server

    if not os.path.isdir(os.path.join(GCS_EMULATOR_DIR, "gcp_storage_emulator")):
        missing(f"no GCS emulator in {GCS_EMULATOR_DIR} (python3 -m pip install --no-deps --target "
                f"{GCS_EMULATOR_DIR} gcp-storage-emulator==2026.7.19, as .ci/run does)", "TFXLINE_REQUIRE_GCS")
    where = str(tmp_path_factory.mktemp("gcs"))
    env = dict(os.environ, PYTHONPATH=GCS_EMULATOR_DIR)
    server = subprocess.Popen([sys.executable, gcs_server.__file__, where], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env)
    ready = server.stdout.readline().split()
    if not ready or ready[0] != "ready":
        server.kill()
        pytest.fail(f"the GCS emulator did not start: {server.stderr.read()[-2000:]}")
    settings = gcs_server.environment(where, proxy_port=int(ready[2]), emulator_port=int(ready[1]))
    saved = {k: os.environ.get(k) for k in settings}
    os.environ.update(settings)
    try:
        yield lambda name: f"gs://{gcs_server.BUCKET}/{name}-{uuid.uuid4().hex[:8]}"
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        server.kill()
        server.wait()
