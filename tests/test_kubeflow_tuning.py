"""Tuning in a compiled pipeline: the one-task Tuner (open-source KFP and Vertex Pipelines), the
refusals made at compile, and Vertex AI's parallel trials through TFX's Vertex Tuner extension,
whose executor runs for real here down to aiplatform's gRPC stub (the network edge, mocked)."""
import json
from unittest import mock

import pytest

from tfxline.cli import main as cli
from tfxline.kubeflow import compile as kfp_compile
from tfxline.pipeline.config.load import load_config
from tfxline.trainer import settings as trainer_settings, tune

IMAGE = "us-docker.pkg.dev/example/tfxline/tfxline:test"
PIPELINE_ROOT = "gs://example-bucket/tfxline"
EXTENSION = "tfx.extensions.google_cloud_ai_platform"
VERTEX = ["vertex_training.enabled=true", "vertex_training.project=p", "vertex_training.region=europe-west4"]


def compile_with(tmp_path, *overrides):
    cfg = load_config(overrides=list(overrides))
    return cfg, kfp_compile.compile_pipeline(cfg, image=IMAGE, pipeline_root=PIPELINE_ROOT,
                                             output=str(tmp_path / "p.json"))


def tasks(job):
    return job["pipelineSpec"]["root"]["dag"]["tasks"]


def constant(task, name):
    return task["inputs"]["parameters"][name]["runtimeValue"]["constant"]


def executor_args(job, task_id):
    return job["pipelineSpec"]["deploymentSpec"]["executors"][f"{task_id}_executor"]["container"]["args"]


@pytest.fixture(scope="module")
def tuned(tmp_path_factory):
    return compile_with(tmp_path_factory.mktemp("tuned"), "tuning.enabled=true", "tuning.max_trials=3")


def test_tuning_compiles_to_a_tuner_task_the_trainer_reads(tuned):
    """A targeted check, not a second golden file: the Tuner task runs our executor on our
    tuner_fn over Transform's outputs, and the Trainer takes its best hyperparameters."""
    cfg, job = tuned
    tuner, trainer = tasks(job)["Tuner"], tasks(job)["Trainer"]
    assert executor_args(job, "Tuner")[:2] == ["--executor_class_path", "tfxline.components.tuning.TuningExecutor"]
    assert constant(tuner, "tuner_fn") == "tfxline.trainer.tune.tuner_fn"
    assert set(tuner["dependentTasks"]) == {"CsvExampleGen", "ImportSchemaGen", "Transform"}
    assert trainer["inputs"]["artifacts"]["hyperparameters"] == {
        "taskOutputArtifact": {"outputArtifactKey": "best_hyperparameters", "producerTask": "Tuner"}}
    custom = json.loads(constant(tuner, "custom_config"))
    assert custom["tuning"]["max_trials"] == 3 and not {"enabled", "reuse", "parallel_trials"} & set(custom["tuning"])
    settings, tuning = tune.settings_of(custom)  # what the task's tuner_fn reads, read here
    assert tuning.max_trials == 3 and settings.features.task == cfg.features.task
    assert "tune_args" not in tuner["inputs"]["parameters"]


def test_reuse_latest_is_refused_at_compile_time(tmp_path, capsys):
    out = tmp_path / "latest.json"
    code = cli.main(["compile", "--set", "tuning.reuse=latest", "--image", IMAGE,
                     "--pipeline-root", PIPELINE_ROOT, "--pipeline-json", str(out)])
    assert code == cli.EXIT_BAD_INPUT and not out.exists()
    err = capsys.readouterr().err
    assert err.count("error:") == 1 and "tuning.reuse: latest is resolved from a local run's metadata store" in err
    assert "--set tuning.reuse=gs://" in err and "Traceback" not in err


@pytest.mark.parametrize("reuse", ["gs://b/hp/best_hyperparameters.txt", "gs://b/hp/", "gs://b/hp"])
def test_reuse_of_a_saved_file_imports_its_folder(tmp_path, reuse):
    _, job = compile_with(tmp_path, f"tuning.reuse={reuse}")
    assert "Tuner" not in tasks(job)
    importer = job["pipelineSpec"]["deploymentSpec"]["executors"]["ReusedHyperparameters_executor"]["importer"]
    assert importer["artifactUri"] == {"constant": "gs://b/hp"}
    assert tasks(job)["Trainer"]["inputs"]["artifacts"]["hyperparameters"]["taskOutputArtifact"] == {
        "outputArtifactKey": "result", "producerTask": "ReusedHyperparameters"}


def test_parallel_trials_without_vertex_are_refused_at_compile_time(tmp_path, capsys):
    out = tmp_path / "parallel.json"
    code = cli.main(["compile", "--set", "tuning.enabled=true", "--set", "tuning.parallel_trials=4", "--image", IMAGE,
                     "--pipeline-root", PIPELINE_ROOT, "--pipeline-json", str(out)])
    assert code == cli.EXIT_BAD_INPUT and not out.exists()
    err = capsys.readouterr().err
    assert err.count("error:") == 1 and "tuning.parallel_trials 4 runs on Vertex AI only" in err
    assert "vertex_training.enabled=true" in err and "--set tuning.parallel_trials=1" in err


def test_the_extensions_keys_are_left_out_by_our_reader():
    """The Vertex extensions pass their own keys through to the job's custom_config
    (google_cloud_ai_platform/runner.py:196-200 hands the whole exec_properties on): our reader
    leaves out exactly theirs, and still refuses any other unknown key."""
    from tfx.extensions.google_cloud_ai_platform import constants
    from tfx.extensions.google_cloud_ai_platform.trainer import executor as trainer_executor
    from tfx.extensions.google_cloud_ai_platform.tuner import executor as tuner_executor

    from tfxline.pipeline.config import ConfigError

    theirs = {v for m in (trainer_executor, tuner_executor) for k, v in vars(m).items()
              if k.endswith("_KEY") and isinstance(v, str)} | {constants.VERTEX_CONTAINER_IMAGE_URI_KEY}
    assert theirs == trainer_settings.CLOUD_EXTENSION_KEYS
    custom = load_config().trainer_settings.to_custom_config()
    read = trainer_settings.TrainerSettings.from_custom_config(dict(custom, **{k: {} for k in theirs}))
    assert read == trainer_settings.TrainerSettings.from_custom_config(custom)
    with pytest.raises(ConfigError, match="unknown config key ai_platform_other"):
        trainer_settings.TrainerSettings.from_custom_config(dict(custom, ai_platform_other=1))


PARALLEL = 4


@pytest.fixture(scope="module")
def parallel(tmp_path_factory):
    return compile_with(tmp_path_factory.mktemp("parallel"), "tuning.enabled=true", "tuning.max_trials=8",
                        f"tuning.parallel_trials={PARALLEL}", *VERTEX)


def test_parallel_trials_compile_to_the_vertex_tuner_extension(parallel):
    _, job = parallel
    tuner = tasks(job)["Tuner"]
    assert executor_args(job, "Tuner")[:2] == ["--executor_class_path", f"{EXTENSION}.tuner.executor.Executor"]
    assert json.loads(constant(tuner, "tune_args")) == {"num_parallel_trials": PARALLEL}
    assert constant(tuner, "tuner_fn") == "tfxline.trainer.tune.tuner_fn"
    custom = json.loads(constant(tuner, "custom_config"))
    pools = custom["ai_platform_tuning_args"]["job_spec"]["worker_pool_specs"]
    assert [p["replica_count"] for p in pools] == [1, PARALLEL - 1]
    assert custom["ai_platform_enable_vertex"] is True and custom["ai_platform_vertex_region"] == "europe-west4"


def exec_properties_of(job, task_id):
    """The task's exec properties as the launcher hands them to the executor: its constants and
    the root defaults of the runtime parameters it reads."""
    defaults = {k: v["defaultValue"] for k, v in job["pipelineSpec"]["root"]["inputDefinitions"]["parameters"].items()}
    out = {}
    for name, value in tasks(job)[task_id]["inputs"]["parameters"].items():
        out[name] = value["runtimeValue"]["constant"] if "runtimeValue" in value else defaults[value["componentInputParameter"]]
    return out


def test_parallel_trials_reach_vertex_ai_as_one_custom_job_of_n_workers(parallel, tmp_path):
    """The extension's executor, run for real on the compiled task's exec properties down to
    aiplatform's gRPC stubs (mocked): the CustomJob it creates has the chief and N-1 workers
    (tuner/executor.py:111-154), every pool our image running TFX's run_executor on the
    extension's _WorkerExecutor (training_clients.py:134-161, :370-379) with our tuner_fn and a
    custom_config our tuner reads (the extension's keys left out)."""
    import google.auth
    from google.auth import credentials as ga_credentials
    from google.cloud.aiplatform_v1.services.job_service.transports import grpc as job_grpc
    from google.cloud.aiplatform_v1.types import custom_job as custom_job_pb, job_state
    from tfx.extensions.google_cloud_ai_platform.tuner import executor as vertex_tuner
    from tfx.types import artifact_utils, standard_artifacts

    _, job = parallel
    requests = []

    def create(request, **kwargs):
        requests.append(request)
        return custom_job_pb.CustomJob(name="projects/p/locations/europe-west4/customJobs/1")

    def get(request, **kwargs):
        return custom_job_pb.CustomJob(name=request.name, state=job_state.JobState.JOB_STATE_SUCCEEDED)

    def artifact(kind, name):
        a = kind()
        a.uri = str(tmp_path / name)
        return [a]

    inputs = {"examples": artifact(standard_artifacts.Examples, "examples"),
              "schema": artifact(standard_artifacts.Schema, "schema"),
              "transform_graph": artifact(standard_artifacts.TransformGraph, "transform")}
    outputs = {"best_hyperparameters": artifact(standard_artifacts.HyperParameters, "best"),
               "tuner_results": artifact(standard_artifacts.TunerResults, "results")}
    anonymous = (ga_credentials.AnonymousCredentials(), "p")
    with mock.patch.object(google.auth, "default", return_value=anonymous), \
            mock.patch.object(job_grpc.JobServiceGrpcTransport, "create_custom_job", property(lambda self: create)), \
            mock.patch.object(job_grpc.JobServiceGrpcTransport, "get_custom_job", property(lambda self: get)):
        vertex_tuner.Executor().Do(inputs, outputs, exec_properties_of(job, "Tuner"))

    (request,) = requests
    assert request.parent == "projects/p/locations/europe-west4"
    pools = request.custom_job.job_spec.worker_pool_specs
    assert [p.replica_count for p in pools] == [1, PARALLEL - 1]  # one machine per parallel trial
    assert all(p.machine_spec.machine_type == "n1-standard-8" for p in pools)
    commands = {tuple(p.container_spec.command) for p in pools}
    assert {p.container_spec.image_uri for p in pools} == {IMAGE} and len(commands) == 1
    command = list(commands.pop())
    assert command[:5] == ["python", "-m", "tfx.scripts.run_executor", "--executor_class_path",
                           f"{EXTENSION}.tuner.executor._WorkerExecutor"]
    args = dict(zip(command[5::2], command[6::2]))
    assert artifact_utils.parse_artifact_dict(args["--inputs"])["transform_graph"][0].uri == str(tmp_path / "transform")
    assert set(artifact_utils.parse_artifact_dict(args["--outputs"])) == {"best_hyperparameters", "tuner_results"}
    sent = json.loads(args["--exec-properties"])
    assert sent["tuner_fn"] == "tfxline.trainer.tune.tuner_fn"
    custom = json.loads(sent["custom_config"]) if isinstance(sent["custom_config"], str) else sent["custom_config"]
    assert "ai_platform_tuning_args" in custom
    settings, tuning = tune.settings_of(custom)  # what each worker's tuner_fn reads
    assert tuning.max_trials == 8 and settings == trainer_settings.TrainerSettings.from_custom_config(
        load_config().trainer_settings.to_custom_config())
