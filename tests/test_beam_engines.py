"""The beam section's engines (pipeline/beam/engines.py): the args each makes, the values each
needs (one line naming the key and the fix), and a compiled Vertex spec carrying Dataflow's."""
import json

import pytest

from tfxline.pipeline.beam import engines as beam_engines
from tfxline.pipeline.beam import stack_compat
from tfxline.pipeline.config import ConfigError
from tfxline.pipeline.config.load import load_config

IMAGE = "us-docker.pkg.dev/p/r/tfxline:1"
DATAFLOW = ["beam.engine=dataflow", "beam.project=proj", "beam.region=europe-west4", "beam.temp_location=gs://b/tmp"]


def args(*overrides, image=""):
    cfg = load_config(overrides=list(overrides))
    return beam_engines.beam_args(cfg.beam, cfg.runtime.beam_args, image=image)


def test_direct_is_the_default_and_extra_args_come_last():
    assert args() == ("--direct_running_mode=in_memory", "--direct_num_workers=1")
    assert args("beam.direct_running_mode=multi_processing", "beam.direct_num_workers=2",
                "runtime.beam_args=[--direct_num_workers=3]") == (
        "--direct_running_mode=multi_processing", "--direct_num_workers=2", "--direct_num_workers=3")


def test_auto_runs_the_evaluator_in_a_process_per_core_on_a_large_day():
    """The default direct mode: in memory, and, on a day CsvExampleGen writes in 2+ shards, the
    components measured faster in worker processes get one per core, at most one per shard;
    runtime.beam_args still come last."""
    cfg = load_config()
    assert beam_engines.component_args(cfg.beam, shards=1, cpus=16) == {}  # one file: one worker would read it
    assert beam_engines.component_args(cfg.beam, shards=4, cpus=1) == {}
    parallel = beam_engines.component_args(cfg.beam, shards=4, cpus=16)
    assert set(parallel) == {"Evaluator"}
    assert parallel["Evaluator"] == ("--direct_running_mode=multi_processing", "--direct_num_workers=4")
    assert beam_engines.component_args(cfg.beam, shards=4, cpus=2)["Evaluator"][-1] == "--direct_num_workers=2"
    cfg = load_config(overrides=["runtime.beam_args=[--direct_num_workers=3]"])
    assert beam_engines.component_args(cfg.beam, 4, cfg.runtime.beam_args, cpus=2)["Evaluator"][-1] == "--direct_num_workers=3"
    for mode in ("in_memory", "multi_processing"):
        cfg = load_config(overrides=[f"beam.direct_running_mode={mode}"])
        assert beam_engines.component_args(cfg.beam, shards=4, cpus=16) == {}
    cfg = load_config(overrides=DATAFLOW)
    assert beam_engines.component_args(cfg.beam, shards=4, cpus=16) == {}


def test_a_component_gets_its_args_after_the_pipelines(tmp_path):
    """TFX puts a component's own Beam args after the pipeline's, so they win for it alone."""
    from tfxline.pipeline.factory import create_pipeline

    cfg = load_config()
    pipeline = create_pipeline(
        cfg, data_root=str(tmp_path), data_pattern="*.csv", schema_path=str(tmp_path / "s.pbtxt"),
        pipeline_root=str(tmp_path / "root"), serving_dir=str(tmp_path / "serving"),
        beam_pipeline_args=["--direct_running_mode=in_memory"],
        component_beam_args=beam_engines.component_args(cfg.beam, shards=2, cpus=2))
    got = {c.id: c.executor_spec.beam_pipeline_args for c in pipeline.components
           if hasattr(c.executor_spec, "beam_pipeline_args")}
    assert got["Evaluator"] == [
        "--direct_running_mode=in_memory", "--direct_running_mode=multi_processing", "--direct_num_workers=2"]
    assert got["StatisticsGen"] == got["CsvExampleGen"] == got["Transform"] == ["--direct_running_mode=in_memory"]
    # the runner sends stderr to the run's log exactly when a component starts worker processes
    assert [c for c, a in got.items() if beam_engines.starts_worker_processes(a)] == ["Evaluator"]


def test_dataflow_runs_runner_v2_with_the_pipeline_image():
    got = args(*DATAFLOW, "runtime.beam_args=[--max_num_workers=20]", image=IMAGE)
    assert got == ("--runner=DataflowRunner", "--project=proj", "--region=europe-west4", "--temp_location=gs://b/tmp",
                   "--experiments=use_runner_v2", f"--sdk_container_image={IMAGE}", "--sdk_location=container",
                   "--max_num_workers=20")
    assert "--sdk_container_image=other" in args(*DATAFLOW, "beam.sdk_container_image=other", image=IMAGE)
    # TFX builds no sdist of itself for workers that run the image (its own rule: an image is named)
    from apache_beam.options.pipeline_options import PipelineOptions
    assert PipelineOptions(list(got)).get_all_options()["sdk_container_image"] == IMAGE
    with pytest.raises(ConfigError, match=r"beam.sdk_container_image: ''; the dataflow engine runs its workers"):
        args(*DATAFLOW)  # a local run with no image to give the workers


def test_portable_engines_run_on_a_job_endpoint():
    assert args("beam.engine=flink", "beam.job_endpoint=flink-jobserver:8099", image=IMAGE) == (
        "--runner=PortableRunner", "--job_endpoint=flink-jobserver:8099", "--environment_type=DOCKER",
        f"--environment_config={IMAGE}", f"--sdk_container_image={IMAGE}")
    assert args("beam.engine=portable", "beam.job_endpoint=embed", "beam.environment_type=EXTERNAL",
                "beam.environment_config=localhost:50000") == (
        "--runner=PortableRunner", "--job_endpoint=embed", "--environment_type=EXTERNAL",
        "--environment_config=localhost:50000")
    assert args("beam.engine=spark", "beam.job_endpoint=spark:8099", "beam.environment_type=LOOPBACK") == (
        "--runner=PortableRunner", "--job_endpoint=spark:8099", "--environment_type=LOOPBACK")


@pytest.mark.parametrize("overrides, message", [
    (["beam.engine=dask"], "beam.engine: 'dask'; use one of direct, dataflow, flink, spark, portable"),
    (["beam.direct_num_workers=0"], "beam.direct_num_workers: 0; must be >= 1"),
    (["beam.direct_running_mode=threads"], "beam.direct_running_mode: 'threads'; use one of auto, in_memory"),
    (["beam.engine=dataflow"], "beam.project: ''; the dataflow engine needs the Google Cloud project"),
    (DATAFLOW[:3] + ["beam.temp_location=/tmp/x"], "beam.temp_location: '/tmp/x'; the dataflow engine needs a gs://"),
    (["beam.engine=flink"], "beam.job_endpoint: ''; the flink engine needs the Beam job service's host:port"),
    (["beam.engine=spark", "beam.job_endpoint=embed"], "beam.job_endpoint: 'embed'; the spark engine runs on its own"),
    (["beam.engine=portable", "beam.job_endpoint=embed", "beam.environment_type=EXTERNAL"],
     "beam.environment_config: ''; EXTERNAL workers need the worker pool's host:port"),
    (["beam.environment_type=docker"], "beam.environment_type: 'docker'; use one of DOCKER, EXTERNAL"),
])
def test_an_engine_missing_a_value_is_one_line_naming_it(overrides, message):
    with pytest.raises(ConfigError, match=message.replace(".", r"\.").replace("(", r"\(")) as e:
        load_config(overrides=overrides)
    assert "\n" not in str(e.value)


def test_the_compiled_vertex_spec_carries_the_dataflow_args(tmp_path):
    """Every Beam component of the compiled PipelineJob gets Dataflow's args with the image it
    was compiled for; the direct engine's FnApiRunner pin is not added to them."""
    from tfxline.kubeflow import compile as kfp_compile

    cfg = load_config(overrides=DATAFLOW)
    job = kfp_compile.compile_pipeline(cfg, image=IMAGE, pipeline_root="gs://b/root", output=str(tmp_path / "p.json"))
    with open(tmp_path / "p.json") as f:
        assert json.load(f) == job
    executors = job["pipelineSpec"]["deploymentSpec"]["executors"]
    beam_tasks = {}
    for label, executor in executors.items():
        argv = executor.get("container", {}).get("args", [])
        if "--runner=DataflowRunner" in argv:
            beam_tasks[label] = argv
    assert {label.split("_")[0] for label in beam_tasks} >= {"CsvExampleGen", "StatisticsGen", "Transform", "Evaluator"}
    for argv in beam_tasks.values():
        assert f"--sdk_container_image={IMAGE}" in argv and "--experiments=use_runner_v2" in argv
        assert "--project=proj" in argv and "--temp_location=gs://b/tmp" in argv
        assert not any(a.startswith("--direct_") or stack_compat.FN_API_RUNNER in a for a in argv)
