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
