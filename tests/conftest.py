"""Shared fixtures. The test process is an entry point: it picks tf_keras (Keras 2)
before anything imports TensorFlow, as the tfxline command does."""
import os

os.environ["TF_USE_LEGACY_KERAS"] = "1"  # see trainer/keras_compat.py for why
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import contextlib  # noqa: E402
import csv  # noqa: E402
import io  # noqa: E402
import itertools  # noqa: E402

import pytest  # noqa: E402

from pipeline import data_source  # noqa: E402
from pipeline.config_loader import load_config  # noqa: E402

SLICE_ROWS = 3000        # every 5th row of the 15k taxi rows: small, but every category shows up
E2E_TRAIN_STEPS = 300    # enough to clear the default AUC/accuracy gates on the slice


def missing(why: str, required_by: str = "CI") -> None:
    """Something a test needs is not on this machine: a skip for a developer, a failure where
    the environment variable ``required_by`` says it must be there (.ci/run installs it)."""
    required = os.environ.get(required_by, "")
    if required not in ("", "0"):
        pytest.fail(f"{required_by}={required} but {why}")
    pytest.skip(why)


def write_taxi_slice(path, every=5, limit=SLICE_ROWS, mutate=None, offset=0):
    """Write a deterministic slice of the shipped taxi CSV (every `every`th row from `offset`);
    `mutate(row)` may edit rows."""
    with open(data_source.default_data_path(), newline="") as src:
        reader = csv.DictReader(src)
        rows = list(itertools.islice(itertools.islice(reader, offset, None, every), limit))
        fields = reader.fieldnames
    if mutate:
        rows = [mutate(dict(r)) for r in rows]
    os.makedirs(os.path.dirname(str(path)), exist_ok=True)
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
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
    return write_taxi_slice(tmp_path_factory.mktemp("data") / "taxi.csv")


def e2e_config(data_path, output_root, *extra):
    return load_config(overrides=[
        f"data.path={data_path}", f"output_root={output_root}",
        "training.mode=steps", f"training.train_steps={E2E_TRAIN_STEPS}", "training.epochs=3", "training.eval_steps=10",
        *extra])


@pytest.fixture(scope="session")
def pipeline_run(taxi_slice, tmp_path_factory):
    """One real pipeline run on the slice, shared by every test that inspects its outputs. Its
    Trainer also profiles one execution of its train function (runtime.profile_steps; the
    report test reads the summary)."""
    from pipeline import local_runner

    cfg = e2e_config(taxi_slice, tmp_path_factory.mktemp("run"), "runtime.profile_steps=50")
    out = io.StringIO()
    summary = local_runner.run(cfg, stream=out)
    return cfg, summary, out.getvalue()


@pytest.fixture(scope="session")
def anomalies_run(tmp_path_factory):
    """One run through the CLI on data that violates the schema (an unseen payment_type):
    it stops at the AnomaliesGate. Shared by the gate test and the failed-run report tests.
    Returns (output dir, exit code, stdout, stderr)."""
    from pipeline import cli

    def unseen_payment(row):
        if row["trip_start_hour"] == "3":
            row["payment_type"] = "Bitcoin"  # not in the schema's payment_type domain
        return row

    root = tmp_path_factory.mktemp("anomalies")
    data = write_taxi_slice(root / "d" / "t.csv", limit=600, mutate=unseen_payment)
    out_dir, stdout, stderr = root / "out", io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(stderr):
        code = cli.main(["run", "--data", data, "--output", str(out_dir)], stream=stdout)
    return out_dir, code, stdout.getvalue(), stderr.getvalue()
