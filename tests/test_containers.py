"""The real image and the compiled pipeline executed in its containers (needs Docker).

The image is built before the tests (`make image`, which .ci/run does); its tag is
TFXLINE_IMAGE (default tfxline:local). Without a Docker engine or the image these tests
skip, unless TFXLINE_REQUIRE_DOCKER=1 (CI sets it), where they fail.

The Beam half on portable workers (#40): the same small pipeline run twice in the image, once
on the DirectRunner and once on Beam's portable runner whose SDK workers come from a worker
pool in another container of the image; the data components' outputs must be equal.

Two containerised runs, each for a reason: the first (nothing serving yet) must end like a
local run, blessed and pushed; the second, with a one-step budget given through the
train_args runtime parameter, must be compared with the first one's pushed model as its
baseline, be refused, and leave serving untouched. A third, by kfp.local's DockerRunner, shows
KFP's own local runner runs the same spec.
"""
import contextlib
import io
import json
import os
import re
import subprocess

import numpy as np
import pytest

from tfxline.serving import push as serving_push
from tfxline.kubeflow import compile as kfp_compile, spec
from tfxline.pipeline.data import source as data_source
from tfxline.cli import main as cli
from tfxline.pipeline.config.load import load_config
from tfxline.pipeline.data.examples import read_csv_rows, serialize_rows
from tests.conftest import E2E_TRAIN_STEPS, SLICE_ROWS, missing, write_taxi_slice

pytestmark = pytest.mark.e2e

IMAGE = os.environ.get("TFXLINE_IMAGE", "tfxline:local")
LOCK = "requirements/tfx-1.21-py313.lock.txt"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def docker(*args, **kwargs):
    return subprocess.run(["docker", *args], capture_output=True, text=True, **kwargs)


@pytest.fixture(scope="module")
def image():
    why = None
    try:
        if docker("info").returncode != 0:
            why = "the Docker engine does not answer"
        elif docker("image", "inspect", IMAGE).returncode != 0:
            why = f"image {IMAGE} is not built (make image)"
    except FileNotFoundError:
        why = "no docker command"
    if why:
        missing(why, required_by="TFXLINE_REQUIRE_DOCKER")
    return IMAGE


def compile_for_containers(root, *overrides):
    cfg = load_config(overrides=["training.epochs=3", "training.eval_steps=10", *overrides])
    out = str(root / "pipeline.json")
    kfp_compile.compile_pipeline(cfg, image=IMAGE, pipeline_root=str(root / "pipeline_root"), output=out)
    return cfg, out


def test_image_runs_the_cli_with_the_lock_and_legacy_keras(image):
    result = docker("run", "--rm", image, "tfxline", "--help")
    assert result.returncode == 0, result.stderr
    assert "run-compiled" in result.stdout
    env = docker("image", "inspect", "-f", "{{json .Config.Env}}", image)
    assert "TF_USE_LEGACY_KERAS=1" in json.loads(env.stdout)
    frozen = docker("run", "--rm", image, "pip", "freeze", "--exclude-editable").stdout
    norm = lambda name: re.sub(r"[-_.]+", "-", name).lower()  # noqa: E731
    have = {norm(n): v for n, _, v in (line.partition("==") for line in frozen.splitlines() if "==" in line)}
    want = {norm(n): v for n, _, v in (line.strip().partition("==") for line in open(os.path.join(ROOT, LOCK))
                                       if "==" in line and not line.startswith("#"))}
    assert have == want  # exactly the lock: nothing missing, nothing extra, no other version


def test_image_runs_as_a_user_that_can_write_what_kfp_needs(image):
    """Not root (#49): uid 1000 of group 0. As that user, and as an arbitrary uid of group 0 (as
    OpenShift assigns one), with every capability dropped and no privilege escalation (as KFP
    2.16+ runs a task's container, argocompiler/security_context.go:163-174 at 2.16.0): HOME
    and the directories KFP's launcher writes (/tmp, and /gcs, /minio, /s3 for artifacts' local
    copies, emptyDirs from KFP 2.5) are writable, and the entrypoint imports."""
    config = json.loads(docker("image", "inspect", "-f", "{{json .Config}}", image).stdout)
    assert config["User"] == "1000" and "HOME=/home/tfxline" in config["Env"]
    check = ('id -u; id -g; echo "$HOME"; for d in "$HOME" /tmp /gcs /minio /s3; do mkdir -p "$d/w/x" && rm -r "$d/w" '
             '|| exit 1; done; python -c "import tfxline.kubeflow.entrypoint" && echo ok')
    for user, uid in (([], "1000"), (["--user", "123456:0"], "123456")):
        result = docker("run", "--rm", "--cap-drop", "ALL", "--security-opt", "no-new-privileges", *user,
                        "--entrypoint", "bash", image, "-c", check)
        assert result.stdout.split() == [uid, "0", "/home/tfxline", "ok"], (user, result.stdout, result.stderr)


def test_every_image_path_in_the_compiled_spec_exists_in_the_image(image, tmp_path):
    paths = set()
    for name in ("taxi", "penguin"):
        job = kfp_compile.compile_pipeline(load_config(name), image=IMAGE, pipeline_root=str(tmp_path / name),
                                           output=str(tmp_path / f"{name}.json"))
        paths |= set(re.findall(r"(/pipeline/[\w./-]+)", json.dumps(job)))
    # The schema, the default data (inside the image's site-packages) and the configs.
    assert "/pipeline/schema/taxi.pbtxt" in paths and kfp_compile.CONTAINER_TAXI_DATA in paths
    paths |= {"/pipeline/pipeline/configs/taxi.yaml", "/pipeline/pipeline/configs/penguin.yaml",
              f"{kfp_compile.CONTAINER_TAXI_DATA}/data.csv"}
    check = " && ".join(f"test -e {p}" for p in sorted(paths))
    result = docker("run", "--rm", "--entrypoint", "bash", image, "-c", f"{check} && echo ok")
    assert result.stdout.strip() == "ok", (sorted(paths), result.stderr)


@pytest.fixture(scope="module")
def container_runs(image, tmp_path_factory):
    """The compiled pipeline, run twice in containers on one pipeline root; with Debian's
    Pushgateway installed, each run's Pusher sends the run's metrics to one (the pushgateway_url
    pipeline parameter), and what the gateway holds after each run is kept."""
    from tests.prometheus_servers import Servers, binaries

    root = tmp_path_factory.mktemp("containers")
    data = write_taxi_slice(root / "data" / "taxi.csv")
    cfg, out = compile_for_containers(root)
    gateway = None
    if binaries():
        gateway = Servers(str(root))
        gateway.start_gateway()
    runs, metrics = [], []
    try:
        for steps in (E2E_TRAIN_STEPS, 1):
            stdout = io.StringIO()
            argv = ["run-compiled", out, "--param", f"data_root={os.path.dirname(data)}", "--train-steps", str(steps)]
            if gateway:
                argv += ["--param", f"pushgateway_url={gateway.gateway_url}"]
            code = cli.main(argv, stream=stdout)
            runs.append((code, stdout.getvalue()))
            metrics.append(gateway_metrics(gateway.gateway_url) if gateway else None)
    finally:
        if gateway:
            gateway.stop_gateway()
    serving_dir = spec.pipeline_spec(spec.load_job(out))["root"]["dag"]["tasks"]["Pusher"]["inputs"][
        "parameters"]["serving_dir"]["runtimeValue"]["constant"]
    return cfg, data, serving_dir, runs, metrics


def gateway_metrics(url):
    """{(name, labels): value} of the tfxline metrics a Pushgateway holds."""
    import urllib.request

    from prometheus_client.parser import text_string_to_metric_families

    with urllib.request.urlopen(url + "/metrics", timeout=10) as r:
        text = r.read().decode()
    return {(s.name, tuple(sorted((k, v) for k, v in s.labels.items() if k != "instance"))): s.value
            for family in text_string_to_metric_families(text) if family.name.startswith("tfxline_")
            for s in family.samples}


def run_record(stdout):
    run_dir = re.search(r"task inputs, outputs and logs: (\S+)", stdout).group(1)
    with open(os.path.join(run_dir, "run.json")) as f:
        return json.load(f)


def outputs_of(record, task):
    return next(t["outputs"] for t in record["tasks"] if t["name"] == task)


def test_first_containerised_run_is_blessed_and_pushed(container_runs):
    import tensorflow as tf

    cfg, data, serving_dir, runs, _ = container_runs
    code, stdout = runs[0]
    assert code == 0, stdout
    for task in ("CsvExampleGen", "Transform", "Trainer", "ServingBaseline", "Evaluator", "Pusher"):
        assert f"[ done  ] {task}" in stdout
    assert "baseline: none (nothing serving yet)" in stdout and "BLESSED" in stdout
    assert "drift: nothing to compare with: nothing serving yet" in stdout
    record = run_record(stdout)
    assert outputs_of(record, "CsvExampleGen")["examples"]["uri"].startswith(record["run_dir"])
    # The Beam components ran TFX's entrypoint (its INFO lines are in their logs) through
    # kubeflow/entrypoint.py: no TFX sdist built in the pod for the in-pod Beam runner.
    for task in ("CsvExampleGen", "StatisticsGen", "Transform", "Evaluator"):
        with open(next(t["log"] for t in record["tasks"] if t["name"] == task)) as f:
            log = f.read()
        assert "Starting executor" in log and "Attempting to infer TFX Python dependency" not in log, task
    pushed = outputs_of(record, "Pusher")["pushed_model"]["metadata"]
    version = int(pushed["pushed_version"])
    assert serving_push.versions(serving_dir) == [version]
    meta = serving_push.read_metadata(serving_dir, version)
    assert meta["model_uri"] == outputs_of(record, "Trainer")["model"]["uri"]
    # The data_root runtime parameter reached ExampleGen: the eval split is the slice's
    # (about a fifth of its rows), not one of the image's 15k default rows.
    assert 0 < meta["metrics"]["example_count"] < SLICE_ROWS / 2
    # The pushed model serves raw examples on this machine, as a client would call it.
    serve = tf.saved_model.load(os.path.join(serving_dir, str(version))).signatures["serving_default"]
    schema = data_source.load_schema(data_source.schema_path(cfg.data.schema))
    rows = list(read_csv_rows(data))[:32]
    probs = serve(examples=tf.constant(serialize_rows(rows, schema, cfg.features.serving_columns)))
    probs = probs["probabilities"].numpy()
    assert probs.shape == (32,) and np.all((probs >= 0) & (probs <= 1)) and probs.std() > 0.01


def test_second_run_is_judged_against_the_first_runs_model(container_runs):
    _, _, serving_dir, runs, _ = container_runs
    first, second = run_record(runs[0][1]), run_record(runs[1][1])
    code, stdout = runs[1]
    assert code == 0, stdout
    version = int(outputs_of(first, "Pusher")["pushed_model"]["metadata"]["pushed_version"])
    assert f"baseline: serving version {version}" in stdout
    # The drift gate compared the same data with the serving model's (the first run's) statistics.
    assert f"drift: none vs serving version {version}'s training data" in stdout
    assert "NOT blessed" in stdout and "pushed: nothing" in stdout
    # the change threshold was evaluated, against the first model's AUC
    assert re.search(r"NOT blessed: .*auc 0\.\d{4} is 0\.\d{4} below the serving model's 0\.\d{4} "
                     r"\(allowed drop 0\.01\)", stdout), stdout
    baseline = outputs_of(second, "ServingBaseline")["baseline_model"]
    with open(os.path.join(baseline["uri"], "baseline.json")) as f:
        info = json.load(f)
    assert info["serving_version"] == version
    assert info["source_model_uri"] == outputs_of(first, "Trainer")["model"]["uri"]
    # TFMA compared the two: the blessing names the baseline it was judged against.
    blessing = outputs_of(second, "Evaluator")["blessing"]["metadata"]
    assert blessing["blessed"] == 0 and blessing["baseline_model"] == baseline["uri"]
    assert serving_push.versions(serving_dir) == [version]  # serving untouched


def test_each_compiled_runs_pusher_pushed_the_runs_metrics(container_runs):
    """#39's compiled run: the Pusher container pushed to the gateway (job = the pipeline's name,
    one series per pipeline): the first run's push and AUC, then the second run's refusal
    replacing them, with the serving model's AUC as its baseline."""
    _, _, serving_dir, runs, metrics = container_runs
    if metrics[0] is None:
        missing("prometheus-pushgateway is not installed (apt-get install prometheus-pushgateway)",
                required_by="TFXLINE_REQUIRE_PROMETHEUS")
    first, second = metrics
    job = (("job", "taxi"),)
    version = int(outputs_of(run_record(runs[0][1]), "Pusher")["pushed_model"]["metadata"]["pushed_version"])
    outcome = lambda reason: ("tfxline_run_success", (("component", ""), ("job", "taxi"), ("reason", reason)))  # noqa: E731
    assert first[outcome("pushed")] == 1 and first[("tfxline_pushed", job)] == 1
    assert first[("tfxline_serving_version", job)] == version and first[("tfxline_blessed", job)] == 1
    auc = first[("tfxline_candidate_metric", (("job", "taxi"), ("metric", "auc")))]
    assert first[("tfxline_examples", (("job", "taxi"), ("split", "eval")))] > 0
    assert ("tfxline_baseline_metric", (("job", "taxi"), ("metric", "auc"))) not in first  # nothing served yet
    assert second[("tfxline_blessed", job)] == 0 and second[("tfxline_pushed", job)] == 0
    assert second[outcome("gate_refused")] == 1 and outcome("pushed") not in second  # the push replaced the group
    assert second[("tfxline_serving_version", job)] == version
    baseline = second[("tfxline_baseline_metric", (("job", "taxi"), ("metric", "auc")))]
    assert f"below the serving model's {baseline:.4f}" in runs[1][1]
    assert baseline == pytest.approx(auc, abs=1e-4)  # the first model, on the same eval split
    assert second[("tfxline_main_metric_gain", (("job", "taxi"), ("metric", "auc")))] < 0
    assert second[("tfxline_last_run_timestamp_seconds", job)] > first[("tfxline_last_run_timestamp_seconds", job)]


GCS_ENV = ("https_proxy", "HTTPS_PROXY", "no_proxy", "NO_PROXY", "CURL_CA_BUNDLE", "GOOGLE_AUTH_TOKEN_FOR_TESTING",
           "NO_GCE_CHECK", "STORAGE_EMULATOR_HOST", "GOOGLE_CLOUD_PROJECT")


def test_a_gs_pipeline_root_runs_to_a_blessed_model_pushed_into_the_bucket(image, gcs, tmp_path):
    """The pipeline (a trees model) compiled with a gs:// root, as Vertex AI and KFP on GCS run it, every task in a
    container of the image writing through TensorFlow's own GCS file system and Beam's GCS IO to
    a GCS on loopback (tests/gcs_server.py: the containers get its proxy, CA and test token with
    --env and --mount, as a user passes a bucket's credentials): artifacts, the pushed version
    and the release all land in the bucket; nothing is written to a local root."""
    from tfxline.serving import release as serving_release
    from tfxline.serving import storage

    root = gcs("kfp-root")
    data = write_taxi_slice(tmp_path / "data" / "taxi.csv")
    # a trees model (issue #73): YDF's export in the Trainer's container, its inference ops loaded by
    # the Evaluator's (components/evaluator_models.py), the SavedModel with its trees assets in the bucket
    cfg = load_config(overrides=["training.epochs=3", "training.eval_steps=10", "model.family=trees"])
    out = str(tmp_path / "gs.json")
    kfp_compile.compile_pipeline(cfg, image=IMAGE, pipeline_root=root, output=out)
    argv = ["run-compiled", out, "--param", f"data_root={os.path.dirname(data)}", "--train-steps",
            str(E2E_TRAIN_STEPS), "--mount", os.environ["CURL_CA_BUNDLE"]]
    for name in GCS_ENV:
        argv += ["--env", name]
    stdout = io.StringIO()
    cwd = os.getcwd()
    os.chdir(tmp_path)  # the run's task logs: ./run-compiled/<pipeline>/<run>
    try:
        code = cli.main(argv, stream=stdout)
    finally:
        os.chdir(cwd)
    assert code == 0, stdout.getvalue()
    assert "BLESSED" in stdout.getvalue()
    record = run_record(stdout.getvalue())
    assert record["run_dir"].startswith(str(tmp_path / "run-compiled"))
    examples = outputs_of(record, "CsvExampleGen")["examples"]["uri"]
    assert examples.startswith(f"{root}/") and "Split-train" in storage.listdir(examples)
    serving = f"{root}/serving/{cfg.name}"
    (version,) = serving_push.versions(serving)
    meta = serving_push.read_metadata(serving, version)
    assert meta["model_uri"] == outputs_of(record, "Trainer")["model"]["uri"] and meta["model_uri"].startswith(root)
    trained = storage.read_json(storage.join(outputs_of(record, "Trainer")["model_run"]["uri"], "training_run.json"))
    assert trained["family"]["chosen"] == "trees" and trained["trees"]["trees"] >= 1
    assert any(name.endswith("data_spec.pb") for name in storage.listdir(storage.join(serving, str(version), "assets")))
    release = serving_release.read(serving)
    assert release.target[0] == version and release.pending is not None  # loaded first, labelled on settle
    with open(os.path.join(record["run_dir"], "Pusher", "executor_input.json")) as f:
        logs = json.load(f)["outputs"]["artifacts"]["executor-logs"]["artifacts"][0]["uri"]
    assert logs.startswith(f"{root}/") and "Starting executor" in storage.read_text(logs)


def test_a_failing_task_stops_the_run_and_is_named(image, tmp_path):
    """Data that violates the schema: AnomaliesGate fails in its container. Exit 1, one error
    line naming the task, its exception and its log; nothing downstream ran."""
    def unseen_payment(row):
        if row["trip_start_hour"] == "3":
            row["payment_type"] = "Bitcoin"  # not in the schema's payment_type domain
        return row

    data = write_taxi_slice(tmp_path / "bad" / "taxi.csv", limit=600, mutate=unseen_payment)
    _, out = compile_for_containers(tmp_path)
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(stderr):
        code = cli.main(["run-compiled", out, "--param", f"data_root={os.path.dirname(data)}"], stream=stdout)
    assert code == cli.EXIT_FAILED
    errors = [line for line in stderr.getvalue().splitlines() if line.startswith("error:")]
    assert len(errors) == 1, stderr.getvalue()
    assert "task AnomaliesGate failed" in errors[0] and "DataAnomaliesError" in errors[0]
    assert "payment_type" in errors[0]
    assert os.path.isfile(re.search(r"; log: (\S+)$", errors[0]).group(1))
    assert "[ start ] Transform" not in stdout.getvalue()


def test_kfp_local_docker_runner_runs_the_compiled_spec(image, gcs, tmp_path):
    """kfp 2.17's own local runner (kfp.local.DockerRunner, in the image: the TFX 1.21 stack) runs
    the compiled PipelineSpec YAML that `submit --target kfp` sends, every task a sibling
    container of the image, to a blessed and pushed model. It hands upstream artifacts on typed
    as KFP's generic system.Artifact; kubeflow/entrypoint.py restores the declared TFX types
    (without it StatisticsGen failed: "No module named 'system'").

    Everything runs as the image's own user (uid 1000, not root), the tasks with every
    capability dropped (as KFP 2.16+ runs them). The runner's container gets the Docker
    socket's group; the local pipeline root (data, artifacts, serving directory) is made
    writable for that user as a cluster's fsGroup (or a world-writable volume) would make it:
    chmod here.

    It pushes to a bucket: the serving root is gs:// (a GCS on loopback, tests/gcs_server.py,
    reached with the tasks on the host's network). The pipeline root cannot be one here:
    kfp.local takes a local directory only (kfp 2.17 ``local/config.py:281``,
    ``os.path.abspath(pipeline_root)``; ``docker_task_handler.py:41-75`` mounts it);
    test_a_gs_pipeline_root_runs_to_a_blessed_model_pushed_into_the_bucket runs one."""
    from tfxline.serving import storage
    import yaml

    root = tmp_path / "kfp-local"
    data = write_taxi_slice(root / "data" / "taxi.csv")
    serving_root = gcs("kfp-local-serving")
    cfg = load_config(overrides=["training.epochs=3", "training.eval_steps=10", f"serving.serving_root={serving_root}"])
    out = str(tmp_path / "pipeline.json")
    kfp_compile.compile_pipeline(cfg, image=IMAGE, pipeline_root=str(root / "compiled-root"), output=out)
    package = tmp_path / "pipeline.yaml"
    package.write_text(yaml.safe_dump(spec.pipeline_spec(spec.load_job(out))))
    arguments = json.dumps({"data_root": os.path.dirname(data), "train_args": json.dumps({"num_steps": E2E_TRAIN_STEPS})})
    runner = os.path.join(ROOT, "tests", "kfp_local_runner.py")
    os.chmod(tmp_path, 0o755)  # pytest makes it private (0700): the image's user must reach the package
    os.chmod(root, 0o777)  # as an fsGroup would: the image's user writes the run's artifacts here
    socket_group = os.stat("/var/run/docker.sock").st_gid
    ca = root / "ca.pem"  # under the pipeline root, which kfp.local mounts in every task
    ca.write_bytes(open(os.environ["CURL_CA_BUNDLE"], "rb").read())
    environment = {name: os.environ[name] for name in GCS_ENV} | {"CURL_CA_BUNDLE": str(ca)}
    task_args = json.dumps({"cap_drop": ["ALL"], "security_opt": ["no-new-privileges"], "network_mode": "host",
                            "environment": environment})
    # The DockerRunner mounts the local pipeline root at the same path in each task's container,
    # so it must be that path on the host too: the data and the serving directory live under it.
    done = docker("run", "--rm", "--network", "none", "-v", "/var/run/docker.sock:/var/run/docker.sock",
                  "--group-add", str(socket_group),
                  "-v", f"{root}:{root}", "-v", f"{tmp_path}:{tmp_path}", "-v", f"{runner}:/tmp/kfp_local_runner.py:ro",
                  "--entrypoint", "python", image, "/tmp/kfp_local_runner.py", str(package), str(root), arguments,
                  task_args, timeout=1500)
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]  # raise_on_error: a failed task exits 1
    serving_dir = f"{serving_root}/{cfg.name}"
    (version,) = serving_push.versions(serving_dir)
    assert serving_push.read_metadata(serving_dir, version)["metrics"]["auc"] >= cfg.evaluation.min_auc
    assert storage.isfile(f"{serving_dir}/release/models.config")
    written = [os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs if f == "executor_output.json"]
    assert len(written) >= 10 and {os.stat(p).st_uid for p in written} == {1000}  # the tasks ran as the image's user


def stats_digest(statistics_dir):
    """What a StatisticsGen output says per split and feature, the exact counts and the
    moments rounded to 9 digits (a sum's order may move the last bits)."""
    import glob

    from tensorflow_metadata.proto.v0 import statistics_pb2

    out = {}
    for path in sorted(glob.glob(os.path.join(statistics_dir, "Split-*", "FeatureStats.pb*"))):
        split = os.path.basename(os.path.dirname(path))
        stats = statistics_pb2.DatasetFeatureStatisticsList.FromString(open(path, "rb").read())
        for dataset in stats.datasets:
            out[(split, "num_examples")] = dataset.num_examples
            for f in dataset.features:
                name = ".".join(f.path.step)
                if f.HasField("num_stats"):
                    n = f.num_stats
                    out[(split, name)] = (n.common_stats.num_non_missing, n.common_stats.num_missing, n.num_zeros,
                                          n.min, n.max, float(f"{n.mean:.9g}"), float(f"{n.std_dev:.9g}"))
                elif f.HasField("string_stats"):
                    t = f.string_stats
                    out[(split, name)] = (t.common_stats.num_non_missing, t.common_stats.num_missing, t.unique,
                                          sorted((v.value, v.frequency) for v in t.top_values))
    return out


def records(directory):
    """{split: sorted records} of an Examples artifact (gzipped TFRecords), each serialized
    again deterministically (a tf.Example's feature map has no order on the wire)."""
    import glob

    import tensorflow as tf

    out = {}
    for split_dir in sorted(glob.glob(os.path.join(directory, "Split-*"))):
        files = sorted(glob.glob(os.path.join(split_dir, "*")))
        out[os.path.basename(split_dir)] = sorted(
            tf.train.Example.FromString(r.numpy()).SerializeToString(deterministic=True)
            for r in tf.data.TFRecordDataset(files, "GZIP"))
    return out


def assets(transform_graph_dir):
    base = os.path.join(transform_graph_dir, "transform_fn", "assets")
    return {name: open(os.path.join(base, name), "rb").read() for name in sorted(os.listdir(base))}


@pytest.fixture(scope="module")
def portable_runs(image, tmp_path_factory):
    """The same pipeline in the image twice: on the DirectRunner, and on Beam's portable runner
    (Beam's Python job service in the run's process, job_endpoint=embed) with EXTERNAL SDK
    workers from a worker pool in a second container of the image. Both share the host's
    network (the job service and the pool talk gRPC) and see the data at the same path."""
    import socket
    import time

    from tests.mariadb_server import free_port

    root = tmp_path_factory.mktemp("portable")
    data = write_taxi_slice(root / "data" / "taxi.csv")
    port, pool = free_port(), f"tfxline-pool-{os.getpid()}"
    common = ["--network", "host", "--user", f"{os.getuid()}:{os.getgid()}", "-e", "HOME=/tmp",
              "-v", f"{root}:{root}"]
    started = docker("run", "-d", "--rm", "--name", pool, *common, image, "python", "-m",
                     "apache_beam.runners.worker.worker_pool_main", f"--service_port={port}")
    assert started.returncode == 0, started.stderr
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline, docker("logs", pool).stderr[-3000:]
                time.sleep(0.5)
        portable = ["beam.engine=portable", "beam.job_endpoint=embed", "beam.environment_type=EXTERNAL",
                    f"beam.environment_config=localhost:{port}", f"beam.sdk_container_image={image}"]
        runs = {}
        for name, sets in (("direct", []), ("portable", portable)):
            argv = ["run", "--data", str(data), "--output", str(root / name)]
            for item in ["training.mode=steps", f"training.train_steps={E2E_TRAIN_STEPS}", "training.eval_steps=10",
                         *sets]:
                argv += ["--set", item]
            try:  # a worker that cannot start makes Beam wait, not fail: bound it
                result = docker("run", "--rm", "--name", f"{pool}-{name}", *common, image, "tfxline", *argv,
                                timeout=900)
            except subprocess.TimeoutExpired:
                docker("rm", "-f", f"{pool}-{name}")
                pytest.fail(f"the {name} run did not finish in 900 s; pool log: {docker('logs', pool).stderr[-3000:]}")
            summary = None
            found = sorted((root / name / "runs").glob("*/summary.json")) if (root / name / "runs").is_dir() else []
            if found:
                with open(found[-1]) as f:
                    summary = json.load(f)
            runs[name] = (result, summary)
        pool_log = docker("logs", pool)
    finally:
        docker("rm", "-f", pool)
    return runs, pool_log.stdout + pool_log.stderr


# In the image (its TensorFlow wrote the graphs): both Transform graphs on the same raw
# examples, as the Trainer runs them; the largest difference per feature.
TRANSFORM_DIFF = """
import glob, json, sys
import numpy as np, tensorflow as tf, tensorflow_transform as tft
from tfxline.trainer.data import transformed_decoder
files = sorted(glob.glob(sys.argv[1] + "/Split-*/*"))
records = tf.constant([r.numpy() for r in tf.data.TFRecordDataset(files, "GZIP")])
a, b = (transformed_decoder(tft.TFTransformOutput(g))(records) for g in sys.argv[2:])
print(json.dumps({"rows": int(records.shape[0]), "diff": {k: float(np.max(np.abs(
    np.asarray(a[k], np.float64) - np.asarray(b[k], np.float64)))) for k in a}}))
"""


def test_the_beam_components_on_portable_workers_equal_the_direct_runners(portable_runs, image):
    """ExampleGen's examples, StatisticsGen's statistics, Transform's vocabularies and the
    features its graph computes, and the Evaluator's example count and AUC: equal on both
    engines. The SDK workers ran in the pool container, one per Beam component (the pool's log)."""
    runs, pool_log = portable_runs
    outputs = {}
    for name, (result, summary) in runs.items():
        assert result.returncode == 0 and summary is not None, (name, result.stdout[-3000:], result.stderr[-3000:])
        outputs[name] = {c["node_id"]: c["outputs"] for c in summary["components"]}
        assert all(c["state"] == "complete" for c in summary["components"]), name
    assert pool_log.count("Starting worker") >= 4, pool_log[-3000:]
    direct, portable = outputs["direct"], outputs["portable"]
    first = lambda o, node, key: o[node][key][0]  # noqa: E731
    examples = [records(first(o, "CsvExampleGen", "examples")) for o in (direct, portable)]
    assert examples[0] == examples[1] and sum(len(v) for v in examples[0].values()) > 0
    stats = [stats_digest(first(o, "StatisticsGen", "statistics")) for o in (direct, portable)]
    assert stats[0] == stats[1] and stats[0][("Split-train", "num_examples")] > 0
    vocabularies = [assets(first(o, "Transform", "transform_graph")) for o in (direct, portable)]
    assert vocabularies[0] == vocabularies[1] and vocabularies[0]
    raw = first(direct, "CsvExampleGen", "examples")
    graphs = [first(o, "Transform", "transform_graph") for o in (direct, portable)]
    compared = docker("run", "--rm", "-e", "HOME=/tmp", "-v", f"{raw}:{raw}:ro", "-v", f"{graphs[0]}:{graphs[0]}:ro",
                      "-v", f"{graphs[1]}:{graphs[1]}:ro", image, "python", "-c", TRANSFORM_DIFF, raw, *graphs)
    assert compared.returncode == 0, compared.stderr[-3000:]
    transformed = json.loads(compared.stdout.strip().splitlines()[-1])
    assert transformed["rows"] > 0 and transformed["diff"]
    # zscores: the same up to float32 summation order; vocabularies and buckets exactly
    assert max(transformed["diff"].values()) <= 1e-5, transformed["diff"]
    metrics = [runs[name][1]["metrics"] for name in ("direct", "portable")]
    assert metrics[0]["example_count"] == metrics[1]["example_count"] > 0
    assert metrics[1]["auc"] == pytest.approx(metrics[0]["auc"], abs=1e-3)  # the same data: the same model
