"""Kubeflow v2 / Vertex: a real compile (offline), golden spec, dry-run submit, Dockerfile."""
import copy
import glob
import json
import os
import re
import shutil
import subprocess
import sys
from unittest import mock

import pytest
from google.protobuf import json_format
from kfp.pipeline_spec import pipeline_spec_pb2

from tfxline.kubeflow import compile as kfp_compile, entrypoint as kfp_entrypoint, spec as kfp_spec, submit as kfp_submit
from tfxline.cli import main as cli
from tfxline.pipeline.config import ConfigError
from tfxline.pipeline.config.load import load_config

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GOLDEN = os.path.join(ROOT, "tests", "golden", "kfp_pipeline.json")
IMAGE = "us-docker.pkg.dev/example/tfxline/tfxline:test"
PIPELINE_ROOT = "gs://example-bucket/tfxline"


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    out = str(tmp_path_factory.mktemp("kfp") / "pipeline.json")
    cfg = load_config()
    job = kfp_compile.compile_pipeline(cfg, image=IMAGE, pipeline_root=PIPELINE_ROOT, output=out)
    return cfg, out, job


def tasks(job):
    return job["pipelineSpec"]["root"]["dag"]["tasks"]


def test_output_parses_as_kfp_pipeline_spec(compiled):
    _, out, job = compiled
    with open(out) as f:
        on_disk = json.load(f)
    assert on_disk["pipelineSpec"] == job["pipelineSpec"]
    spec = json_format.ParseDict(on_disk["pipelineSpec"], pipeline_spec_pb2.PipelineSpec())
    assert spec.pipeline_info.name == "taxi"
    assert len(spec.root.dag.tasks) >= 10


def kfp_tasks_for(node_id, job):
    return [t for t in tasks(job) if t == node_id or t.startswith(node_id + "-")]


def test_same_components_and_dag_as_the_local_pipeline(compiled):
    cfg, _, job = compiled
    local = kfp_compile.build_pipeline(cfg, PIPELINE_ROOT, IMAGE)
    local_edges = {(up.id, c.id) for c in local.components for up in c.upstream_nodes}
    for c in local.components:
        assert kfp_tasks_for(c.id, job), f"{c.id} missing from the compiled spec"
    owner = {t: c.id for c in local.components for t in kfp_tasks_for(c.id, job)}
    assert set(owner) == set(tasks(job))  # nothing extra either
    kfp_edges = {(owner[d], owner[t]) for t, body in tasks(job).items()
                 for d in body.get("dependentTasks", [])}
    assert kfp_edges == local_edges
    assert ("AnomaliesGate", "Transform") in kfp_edges


def test_image_code_paths_and_runtime_parameters(compiled):
    cfg, _, job = compiled
    text = json.dumps(job)
    executors = job["pipelineSpec"]["deploymentSpec"]["executors"]
    images = {e["container"]["image"] for e in executors.values() if "container" in e}
    assert images == {IMAGE}
    assert "tfxline.transforms.preprocessing.preprocessing_fn" in text and "tfxline.trainer.run.run_fn" in text
    assert "/pipeline/schema/taxi.pbtxt" in text
    params = kfp_spec.declared_parameters(job)
    assert params["data_root"] == kfp_compile.CONTAINER_TAXI_DATA
    # Epochs mode: no step budget unless a run sets one (submit --train-steps).
    assert json.loads(params["train_args"]) == {"num_steps": 0}
    assert job["runtimeConfig"]["gcsOutputDirectory"] == PIPELINE_ROOT


def test_run_metrics_are_a_pipeline_parameter_the_pusher_reads(compiled, tmp_path):
    """The compiled run's metrics (#39): the Pusher, the last task, takes ``pushgateway_url`` from
    the pipeline's parameter (off by default; the config's monitoring.pushgateway_url is its
    default), its job name and timeout as constants, and the DriftGate's output as an input."""
    cfg, _, job = compiled
    assert kfp_spec.declared_parameters(job)[kfp_spec.PUSHGATEWAY_PARAM] == ""
    pusher = job["pipelineSpec"]["root"]["dag"]["tasks"]["Pusher"]["inputs"]
    assert pusher["parameters"]["pushgateway_url"] == {"componentInputParameter": kfp_spec.PUSHGATEWAY_PARAM}
    assert pusher["parameters"]["pipeline_name"]["runtimeValue"]["constant"] == cfg.name
    assert pusher["artifacts"]["drift_anomalies"]["taskOutputArtifact"]["producerTask"] == "DriftGate"
    # the config's gateway becomes the default a submission can override (--param pushgateway_url=...)
    gateway = load_config(overrides=["monitoring.pushgateway_url=http://pushgateway.monitoring:9091"])
    other = kfp_compile.compile_pipeline(gateway, image=IMAGE, pipeline_root=PIPELINE_ROOT,
                                         output=str(tmp_path / "p.json"))
    assert kfp_spec.declared_parameters(other)[kfp_spec.PUSHGATEWAY_PARAM] == "http://pushgateway.monitoring:9091"


def test_compiled_spec_runs_on_open_source_kfp(compiled):
    """Only container and importer executors: what open-source KFP's v2 backend runs (the
    baseline is resolved in a container component, not by a TFX Resolver)."""
    _, _, job = compiled
    kinds = kfp_spec.executor_kinds(job)
    assert kinds and set(kinds.values()) <= set(kfp_spec.PORTABLE_EXECUTORS), kinds
    assert kfp_spec.non_portable_executors(job) == []
    kfp_spec.check_open_source_kfp(job)


def test_every_task_runs_tfx_entrypoint_through_the_projects(compiled):
    """Every container executor runs kubeflow/entrypoint.py (TFX's entrypoint, without TFX's
    sdist for in-pod Beam runners); ExampleGen's Vertex driver hook keeps TFX's command."""
    _, _, job = compiled
    containers = {label: e["container"] for label, e in job["pipelineSpec"]["deploymentSpec"]["executors"].items()
                  if "container" in e}
    assert len(containers) >= 9
    for label, container in containers.items():
        assert container["command"] == list(kfp_entrypoint.COMMAND), label
        for hook in container.get("lifecycle", {}).values():
            assert hook["command"][:2] == ["python", "-m"] and hook["command"][2].startswith("tfx."), label


def test_project_entrypoint_runs_tfx_entrypoint_with_its_arguments():
    """The command as the image runs it reaches TFX's absl app with its arguments: ``--help``
    lists TFX's own flags. (That no sdist is built is checked on the containerised run's
    logs, tests/test_containers.py.)"""
    proc = subprocess.run([sys.executable, "-m", "tfxline.kubeflow.entrypoint", "--help"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "--executor_class_path" in proc.stdout and "--json_serialized_invocation_args" in proc.stdout
    # the task's log says whether the run-time patches were on (patches/guard.py)
    assert "kubeflow.entrypoint: runtime patches: on\n" in proc.stderr
    off = subprocess.run([sys.executable, "-m", "tfxline.kubeflow.entrypoint", "--help"], cwd=ROOT,
                         capture_output=True, text=True, timeout=300,
                         env=dict(os.environ, TFXLINE_RUNTIME_PATCHES="off"))
    assert off.returncode == 0 and "kubeflow.entrypoint: runtime patches: off" in off.stderr, off.stderr[-2000:]


RESOLVER_LABEL = "latest_blessed_model_resolver-model-resolver_executor"
RESOLVER_EXECUTOR = {"resolver": {"outputArtifactQueries": {"model": {
    "filter": "schema_title=\"tfx.Model\" AND state=LIVE"}}}}  # what TFX's Resolver compiles to


def test_kfp_submission_refuses_executors_it_cannot_run(compiled, tmp_path, capsys):
    _, _, job = compiled
    bad = copy.deepcopy(job)
    bad["pipelineSpec"]["deploymentSpec"]["executors"][RESOLVER_LABEL] = RESOLVER_EXECUTOR
    path = tmp_path / "with_resolver.json"
    path.write_text(json.dumps(bad))
    with pytest.raises(kfp_submit.SubmitError,
                       match=re.escape(f"{RESOLVER_LABEL} (resolver)") + ".*only container and importer"):
        kfp_submit.build_request(str(path), target="kfp", host="http://kfp")
    code = cli.main(["submit", str(path), "--target", "kfp", "--host", "http://kfp", "--dry-run"])
    assert code == cli.EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert err.count("error:") == 1 and RESOLVER_LABEL in err and "--target vertex" in err
    # Vertex AI runs resolver executors: the same spec is accepted there.
    assert kfp_submit.build_request(str(path), target="vertex", project="p", region="r").target == "vertex"


def normalize(job):
    """Drop what changes between SDK versions or runs: labels, versions, timestamps."""
    job = copy.deepcopy(job)
    job.pop("labels", None)
    job["pipelineSpec"].pop("sdkVersion", None)
    text = json.dumps(job, indent=2, sort_keys=True)
    text = re.sub(r"tfx-\d+\.\d+\.\d+(\.dev\d*)?", "tfx-VERSION", text)
    return json.loads(text)


def test_a_window_of_spans_is_refused_at_compile_time(tmp_path, capsys):
    """data.spans window:N is TFX's rolling span-range Resolver, which TFX's Kubeflow V2 compiler
    cannot compile: one line naming the setting and the fix, no file written."""
    out = tmp_path / "window.json"
    code = cli.main(["compile", "--set", "data.spans=window:2", "--set", "data.pattern=span-{SPAN}/*.csv",
                     "--image", IMAGE, "--pipeline-root", PIPELINE_ROOT, "--pipeline-json", str(out)])
    assert code == cli.EXIT_BAD_INPUT and not out.exists()
    err = capsys.readouterr().err
    assert err.count("error:") == 1 and "data.spans window:2 runs on LocalDagRunner only" in err
    assert "--set data.spans=latest" in err


def test_a_name_kfp_refuses_is_refused_at_compile_time_with_the_fix(tmp_path, capsys):
    """TFX's Kubeflow V2 compiler takes only names matching [a-z0-9][a-z0-9-]{0,127}
    (pipeline_builder.py:36) and says so in a traceback that does not name the pipeline: compile
    refuses another name in one line with a name it takes; TFX's own check agrees on each."""
    from tfx.orchestration.kubeflow.v2 import pipeline_builder

    from tfxline.kubeflow import names

    out = tmp_path / "named.json"
    code = cli.main(["compile", "--set", "name=CreditCard_card", "--image", IMAGE,
                     "--pipeline-root", PIPELINE_ROOT, "--pipeline-json", str(out)])
    assert code == cli.EXIT_BAD_INPUT and not out.exists()
    err = capsys.readouterr().err
    assert err.count("error:") == 1 and "--set name=creditcard-card" in err and "Traceback" not in err
    for name in ("taxi", "creditcard-card", "CreditCard_card", "-x", "a" * 129, "9lives", "x.y", ""):
        ours = names.kfp_name_problem(name) is None
        try:
            pipeline_builder._check_name(name)
            theirs = True
        except ValueError:
            theirs = False
        assert ours == theirs, name
        assert names.kfp_name_problem(names.portable(name)) is None, name


def test_span_patterns_are_refused_for_open_source_kfp(tmp_path, capsys):
    """A {SPAN} pattern is resolved by ExampleGen's driver (lifecycle.preCacheCheck), which
    Vertex AI runs and open-source KFP does not: kfp submission refuses it by name."""
    cfg = load_config(overrides=[f"data.path={tmp_path}", "data.pattern=span-{SPAN}/*.csv"])
    path = str(tmp_path / "spans.json")
    job = kfp_compile.compile_pipeline(cfg, image=IMAGE, pipeline_root=PIPELINE_ROOT, output=path)
    assert kfp_spec.span_patterns_needing_driver(job) == [("CsvExampleGen", "span-{SPAN}/*.csv")]
    assert cli.main(["submit", path, "--target", "kfp", "--host", "http://kfp", "--dry-run"]) == cli.EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert "task CsvExampleGen reads the span pattern 'span-{SPAN}/*.csv'" in err and "data_root" in err
    assert kfp_submit.build_request(path, target="vertex", project="p", region="r").target == "vertex"


def test_matches_golden_file(compiled):
    """Refresh after an intended change: UPDATE_GOLDEN=1 pytest tests/test_kubeflow.py"""
    _, _, job = compiled
    got = normalize(job)
    if os.environ.get("UPDATE_GOLDEN"):
        with open(GOLDEN, "w") as f:
            json.dump(got, f, indent=2, sort_keys=True)
            f.write("\n")
    with open(GOLDEN) as f:
        assert got == json.load(f), "compiled spec differs from tests/golden/kfp_pipeline.json"


def test_dry_run_submit_to_vertex_carries_overrides(compiled, capsys):
    _, out, _ = compiled
    code = cli.main(["submit", out, "--target", "vertex", "--project", "p", "--region", "europe-west4",
                     "--param", "data_root=gs://b/new-data", "--train-steps", "77", "--dry-run"])
    assert code == 0
    request = json.loads(capsys.readouterr().out)
    assert request["template_path"] == os.path.abspath(out)
    assert request["pipeline_root"] == PIPELINE_ROOT
    assert request["parameter_values"] == {"data_root": "gs://b/new-data",
                                           "train_args": json.dumps({"num_steps": 77})}
    assert request["project"] == "p" and request["region"] == "europe-west4"


def test_submit_reaches_vertex_pipeline_job_with_the_request(compiled):
    _, out, _ = compiled
    request = kfp_submit.build_request(out, target="vertex", project="p", region="us-central1",
                                       parameters={"data_root": "gs://x"}, service_account="sa@p")
    with mock.patch("google.cloud.aiplatform.PipelineJob") as job_cls:
        job_cls.return_value.resource_name = "projects/p/pipelineJobs/1"
        assert kfp_submit.submit(request) == "projects/p/pipelineJobs/1"
    kwargs = job_cls.call_args.kwargs
    assert kwargs["template_path"] == os.path.abspath(out)
    assert kwargs["parameter_values"] == {"data_root": "gs://x"}
    assert kwargs["pipeline_root"] == PIPELINE_ROOT and kwargs["location"] == "us-central1"
    job_cls.return_value.submit.assert_called_once_with(service_account="sa@p")


def test_submit_reaches_kfp_client(compiled, tmp_path):
    """The real kfp.Client, down to its API stubs (the network edge, mocked): it takes the
    package we hand it (a PipelineSpec YAML: a PipelineJob JSON is refused by its reader), and
    the run it creates carries schema 2.1.0, every parameter, the pipeline root and the
    Kubernetes service account (the JSON body the client posts, as its ApiClient serialises it)."""
    import kfp_server_api

    _, out, _ = compiled
    cfg = load_config(overrides=["serving.serving_root=/mnt/serving"])  # a volume: the platform spec mounts it
    out = str(tmp_path / "volume.json")
    kfp_compile.compile_pipeline(cfg, image=IMAGE, pipeline_root=PIPELINE_ROOT, output=out)
    request = kfp_submit.build_request(out, target="kfp", host="http://127.0.0.1:8080", train_steps=5,
                                       serving_pvc="tfxline-serving", service_account="tfxline-runner")
    created = {}

    def call_api(self, resource_path, method, *args, body=None, **kwargs):
        """The KFP REST API as the client's generated stubs call it (the same paths in kfp 2.5
        and 2.17, whose stub method names differ)."""
        if (method, resource_path) == ("GET", "/apis/v2beta1/healthz"):
            return kfp_server_api.V2beta1GetHealthzResponse(multi_user=False)
        if (method, resource_path) == ("GET", "/apis/v2beta1/experiments"):
            return kfp_server_api.V2beta1ListExperimentsResponse(experiments=[])
        if (method, resource_path) == ("POST", "/apis/v2beta1/experiments"):
            return kfp_server_api.V2beta1Experiment(experiment_id="e-1", display_name=body.display_name)
        if (method, resource_path) == ("POST", "/apis/v2beta1/runs"):
            created["run"] = body
            return kfp_server_api.V2beta1Run(run_id="run-1")
        raise AssertionError(f"unexpected KFP API call {method} {resource_path}")

    with mock.patch.object(kfp_server_api.ApiClient, "call_api", call_api):
        assert kfp_submit.submit(request) == "run-1"
    run = created["run"]
    assert run.experiment_id == "e-1" and run.display_name == request.display_name
    posted = kfp_server_api.ApiClient().sanitize_for_serialization(run)
    assert posted["service_account"] == "tfxline-runner"  # the workflow's serviceAccountName
    pipeline, platform = run.pipeline_spec["pipeline_spec"], run.pipeline_spec["platform_spec"]
    assert pipeline["schemaVersion"] == "2.1.0"
    assert set(pipeline["root"]["dag"]["tasks"]) == set(spec_of(out)["root"]["dag"]["tasks"])
    # The serving volume, mounted where the tasks push (the compiled serving root), in each task
    # that reads or writes serving versions (the AnomaliesGate reads what serves when it reports a stop).
    executors = platform["platforms"]["kubernetes"]["deploymentSpec"]["executors"]
    assert sorted(executors) == ["AnomaliesGate_executor", "DriftGate_executor", "Pusher_executor",
                                 "ServingBaseline_executor"]
    assert all(e == {"pvcMount": [{"constant": "tfxline-serving", "mountPath": "/mnt/serving"}]}
               for e in executors.values())
    assert run.runtime_config.pipeline_root == PIPELINE_ROOT
    assert run.runtime_config.parameters == {
        "data_root": kfp_spec.declared_parameters(kfp_spec.load_job(out))["data_root"],
        "train_args": json.dumps({"num_steps": 5}), "pushgateway_url": ""}
    with pytest.raises(ValueError, match="should end with one of the following formats"):
        import kfp

        kfp.client.client._extract_pipeline_yaml(out)  # what submitting the JSON itself did


def spec_of(path):
    return kfp_spec.pipeline_spec(kfp_spec.load_job(path))


@pytest.mark.parametrize("kwargs, message", [
    ({"target": "vertex", "parameters": {"nope": 1}, "project": "p", "region": "r"}, "not runtime parameters"),
    ({"target": "vertex"}, "needs --project and --region"),
    ({"target": "kfp"}, "needs --host"),
    ({"target": "kfp", "host": "http://kfp", "serving_pvc": "s"}, "pushes to gs://example-bucket/tfxline/serving/taxi, "
     "an object store the tasks write themselves; leave --serving-pvc out"),
    ({"target": "kfp", "host": "http://kfp", "serving_pvc": "s", "service_account": "sa@p.iam.gserviceaccount.com"},
     "takes its name .*not a Google service account's e-mail; pass e.g. --service-account pipeline-runner"),
    ({"target": "airflow"}, "unknown target"),
])
def test_bad_submissions_are_named(compiled, kwargs, message):
    _, out, _ = compiled
    with pytest.raises(kfp_submit.SubmitError, match=message):
        kfp_submit.build_request(out, **kwargs)


def test_vertex_training_worker_pool_spec_reaches_the_trainer(tmp_path):
    cfg = load_config(overrides=[
        "vertex_training.enabled=true", "vertex_training.project=p", "vertex_training.replica_count=3",
        "vertex_training.accelerator_type=NVIDIA_TESLA_T4", "vertex_training.accelerator_count=2"])
    job = kfp_compile.compile_pipeline(cfg, image=IMAGE, pipeline_root=PIPELINE_ROOT,
                                       output=str(tmp_path / "p.json"))
    text = json.dumps(job)
    assert "ai_platform_training_args" in text
    custom = json.loads(tasks(job)["Trainer"]["inputs"]["parameters"]["custom_config"]
                        ["runtimeValue"]["constant"])
    pools = custom["ai_platform_training_args"]["worker_pool_specs"]
    assert [p["replica_count"] for p in pools] == [1, 2]
    assert pools[0]["machine_spec"] == {"machine_type": "n1-standard-8",
                                        "accelerator_type": "NVIDIA_TESLA_T4", "accelerator_count": 2}
    assert pools[0]["container_spec"]["image_uri"] == IMAGE
    assert custom["ai_platform_enable_vertex"] is True


DOCKERFILE = os.path.join(ROOT, "kubeflow", "Dockerfile")


def test_dockerfile_copies_only_existing_files_and_sets_keras():
    text = open(DOCKERFILE).read()
    copies = re.findall(r"^COPY\s+(?!--from=)(.+?)\s+\S+\s*$", text, flags=re.M)
    assert copies
    for line in copies:
        for src in line.split():
            assert glob.glob(os.path.join(ROOT, src)), f"Dockerfile copies missing {src}"
    assert "TF_USE_LEGACY_KERAS=1" in text
    # Both stacks' lock files, chosen by the TFX_STACK build argument (default: the current).
    assert re.search(r"^ARG TFX_STACK=1\.21$", text, flags=re.M)
    for lock in ("requirements/tfx-1.21-py313.lock.txt", "requirements/tfx-1.16-py310.lock.txt"):
        assert lock in text and os.path.exists(os.path.join(ROOT, lock))
    assert f"{kfp_compile.CONTAINER_SITE_PACKAGES}" in text  # the link compile.py relies on
    assert kfp_compile.CONTAINER_PROJECT_DIR in text


def test_dockerfile_passes_hadolint():
    hadolint = shutil.which("hadolint") or os.path.join(os.path.dirname(os.sys.executable), "hadolint")
    result = subprocess.run([hadolint, DOCKERFILE], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_second_dataset_compiles_with_container_paths(tmp_path):
    """The penguin config (package: data, TFRecords, epochs mode) compiles with the data inside
    the image's site-packages, its own pattern and schema, and no step budget."""
    cfg = load_config("penguin")
    job = kfp_compile.compile_pipeline(cfg, image=IMAGE, pipeline_root=PIPELINE_ROOT,
                                       output=str(tmp_path / "penguin.json"))
    params = kfp_spec.declared_parameters(job)
    assert params["data_root"] == (f"{kfp_compile.CONTAINER_SITE_PACKAGES}"
                                   "/tfx/components/testdata/penguin/data")
    assert json.loads(params["train_args"]) == {"num_steps": 0}
    assert "ImportExampleGen" in tasks(job) and "CsvExampleGen" not in tasks(job)
    text = json.dumps(job)
    assert "Split-*/*" in text and "/pipeline/schema/penguin.pbtxt" in text


def test_the_tasks_push_where_the_pipeline_root_is_or_to_a_volume(compiled, tmp_path):
    """The tasks push through serving/storage.py: by default to <pipeline root>/serving, in the
    pipeline root's own object store (no volume: KFP takes no --serving-pvc); a scheme TensorFlow
    has no file system for (KFP's minio://) is refused in one line; on KFP a path is where
    --serving-pvc mounts a volume."""
    _, out, job = compiled
    assert set(kfp_spec.serving_dirs(job)) == {"gs://example-bucket/tfxline/serving/taxi"}
    request = kfp_submit.build_request(out, target="kfp", host="http://kfp")
    assert (request.serving_pvc, request.serving_root) == ("", "")
    with pytest.raises(ConfigError, match="bad pipeline root: 'minio://mlpipeline/v2'; the tasks write through "
                                          "TensorFlow's file systems, which read gs, s3, hdfs URIs"):
        kfp_compile.compile_pipeline(load_config(), image=IMAGE, pipeline_root="minio://mlpipeline/v2",
                                     output=str(tmp_path / "p.json"))
    cfg = load_config(overrides=["serving.serving_root=s3://models/tfxline"])
    job = kfp_compile.compile_pipeline(cfg, image=IMAGE, pipeline_root=PIPELINE_ROOT, output=str(tmp_path / "p.json"))
    assert set(kfp_spec.serving_dirs(job)) == {"s3://models/tfxline/taxi"}
    cfg = load_config(overrides=["serving.serving_root=/mnt/serving"])
    job = kfp_compile.compile_pipeline(cfg, image=IMAGE, pipeline_root=PIPELINE_ROOT, output=str(tmp_path / "p.json"))
    request = kfp_submit.build_request(str(tmp_path / "p.json"), target="kfp", host="http://kfp", serving_pvc="models")
    assert request.serving_root == "/mnt/serving" and set(kfp_spec.serving_dirs(job)) == {"/mnt/serving/taxi"}
