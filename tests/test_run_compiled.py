"""run-compiled without containers: the ExecutorInput each task gets from the compiled spec
(the containerised runs themselves are in tests/test_containers.py)."""
import json
import os

import pytest

from kubeflow import compile as kfp_compile, launcher, run_compiled as rc, spec
from pipeline import cli
from pipeline.config_loader import load_config

IMAGE = "tfxline:unit"


@pytest.fixture(scope="module")
def local_job(tmp_path_factory):
    root = tmp_path_factory.mktemp("kfp-local")
    out = str(root / "pipeline.json")
    kfp_compile.compile_pipeline(load_config(), image=IMAGE, pipeline_root=str(root / "root"), output=out)
    return out, spec.load_job(out), str(root / "root")


def fake_outputs(job, task):
    """What a task's container would have produced (its output artifacts, by key)."""
    body = spec.pipeline_spec(job)["root"]["dag"]["tasks"][task]
    component = spec.pipeline_spec(job)["components"][body["componentRef"]["name"]]
    return {key: {"name": f"r/{task}/{key}", "uri": f"/x/{task}/{key}", "metadata": {"span": 0.0},
                  "type": d["artifactType"]}
            for key, d in component.get("outputDefinitions", {}).get("artifacts", {}).items()}


def executor_input(job, task, values=None):
    produced = {t: fake_outputs(job, t) for t in spec.tasks_in_order(job)}
    pipeline = spec.pipeline_spec(job)
    body = pipeline["root"]["dag"]["tasks"][task]
    component = pipeline["components"][body["componentRef"]["name"]]
    values = {**spec.declared_parameters(job), **(values or {})}
    return launcher.build_executor_input(body, component, values, produced, f"/run/{task}", "r", task)


def test_tasks_run_after_everything_they_read(local_job):
    _, job, _ = local_job
    order = spec.tasks_in_order(job)
    tasks = spec.pipeline_spec(job)["root"]["dag"]["tasks"]
    assert sorted(order) == sorted(tasks)
    for task, body in tasks.items():
        for upstream in set(body.get("dependentTasks", [])) | spec.producers(body):
            assert order.index(upstream) < order.index(task), (upstream, task)
    assert order.index("ServingBaseline") < order.index("Evaluator") < order.index("Pusher")


def test_evaluator_gets_its_upstream_artifacts_and_output_uris(local_job):
    _, job, _ = local_job
    ei = executor_input(job, "Evaluator")
    arts = ei["inputs"]["artifacts"]
    assert arts["baseline_model"]["artifacts"][0]["uri"] == "/x/ServingBaseline/baseline_model"
    assert arts["model"]["artifacts"][0]["uri"] == "/x/Trainer/model"
    assert arts["examples"]["artifacts"][0]["uri"] == "/x/CsvExampleGen/examples"
    # as KFP's driver passes them on: read back from MLMD, without their schema
    assert all(a["artifacts"][0]["type"] == {"instanceSchema": ""} for a in arts.values())
    outs = ei["outputs"]["artifacts"]
    assert outs["blessing"]["artifacts"][0]["uri"] == "/run/Evaluator/blessing"
    assert ei["outputs"]["outputFile"] == "/run/Evaluator/executor_output.json"
    # Schema 2.1's plain JSON values only, as KFP's driver passes them.
    assert set(ei["inputs"]) == {"parameterValues", "artifacts"}
    config = ei["inputs"]["parameterValues"]["eval_config"]
    assert json.loads(config)["model_specs"][0]["label_key"] == "big_tipper"


def test_runtime_parameters_reach_their_tasks(local_job):
    _, job, _ = local_job
    values = spec.parameter_overrides(job, {"data_root": "/data/today"}, train_steps=7)
    gen = executor_input(job, "CsvExampleGen", values)["inputs"]
    assert gen["parameterValues"]["input_base"] == "/data/today"
    trainer = executor_input(job, "Trainer", values)["inputs"]
    assert json.loads(trainer["parameterValues"]["train_args"]) == {"num_steps": 7}


def test_integer_parameters_are_json_numbers(local_job):
    _, job, _ = local_job
    params = executor_input(job, "CsvExampleGen")["inputs"]["parameterValues"]
    assert params["output_data_format"] == 6  # FORMAT_TF_EXAMPLE


def test_the_spec_is_what_kfps_api_server_and_driver_accept(local_job):
    """Schema 2.1.0 (the API server refuses any other), `runtimeValue.constant` everywhere, and
    a declared default for every root parameter (the driver fails a run without one)."""
    _, job, _ = local_job
    spec.check_open_source_kfp(job)
    pipeline = spec.pipeline_spec(job)
    assert pipeline["schemaVersion"] == "2.1.0"
    for name, declared in pipeline["root"]["inputDefinitions"]["parameters"].items():
        assert declared["defaultValue"] == job["runtimeConfig"]["parameterValues"][name], name
        assert declared["parameterType"] == "STRING"
    for task in pipeline["root"]["dag"]["tasks"].values():
        for source in task.get("inputs", {}).get("parameters", {}).values():
            assert "constantValue" not in source.get("runtimeValue", {})
    assert spec.root_parameter_values(job, {}) == spec.declared_parameters(job)


def test_the_strict_launcher_refuses_a_schema_2_0_spec_as_kfp_would(tmp_path):
    """What `tfxline compile` wrote before (TFX's default, schema 2.0.0): refused for each of the
    reasons KFP's backend would refuse it."""
    from tfx import v1 as tfx

    cfg = load_config()
    old = tfx.orchestration.experimental.KubeflowV2DagRunner(
        config=tfx.orchestration.experimental.KubeflowV2DagRunnerConfig(default_image=IMAGE),
        output_dir=str(tmp_path), output_filename="old.json").run(
        kfp_compile.build_pipeline(cfg, str(tmp_path / "root"), IMAGE),
        parameter_values={"data_root": "/d", "train_args": "{}"}, write_out=False)
    with pytest.raises(spec.SpecError, match="KFP only supports schema version 2.1.0, but the pipeline spec "
                                             "has version 2.0.0"):
        spec.check_open_source_kfp(old)
    with pytest.raises(spec.SpecError, match="neither value nor default value provided for non-optional "
                                             "parameter"):
        spec.root_parameter_values(old, {})
    with pytest.raises(launcher.UnsupportedSpec, match="param runtime value spec of type ConstantValue not "
                                                       "implemented"):
        executor_input(old, "Trainer", {"data_root": "/d", "train_args": "{}"})
    path = str(tmp_path / "old-spec.json")
    with open(path, "w") as f:
        json.dump(old, f)
    assert cli.main(["run-compiled", path]) == cli.EXIT_BAD_INPUT


def test_the_entrypoint_restores_input_types_the_driver_drops(local_job):
    """TFX's own entrypoint parsing (kubeflow_v2_entrypoint_utils) fails on the driver's empty
    schema (tensorflow/tfx#7768) and succeeds once kubeflow/entrypoint.py restored the types
    from the container's inputs spec argument."""
    from tfx.orchestration.kubeflow.v2.container import kubeflow_v2_entrypoint_utils as utils
    from kfp.pipeline_spec import pipeline_spec_pb2
    from google.protobuf import json_format

    from kubeflow import entrypoint

    _, job, _ = local_job
    pipeline = spec.pipeline_spec(job)
    component = pipeline["components"][pipeline["root"]["dag"]["tasks"]["Evaluator"]["componentRef"]["name"]]
    container = pipeline["deploymentSpec"]["executors"][component["executorLabel"]]["container"]
    ei = executor_input(job, "Evaluator")
    argv = [launcher.fill_placeholders(a, ei) for a in container["args"]]

    def parsed(args):
        message = pipeline_spec_pb2.ExecutorInput()
        json_format.Parse(args[args.index(entrypoint.INVOCATION_FLAG) + 1], message, ignore_unknown_fields=True)
        return utils.parse_raw_artifact_dict(message.inputs.artifacts, {})

    with pytest.raises(AttributeError):
        parsed(argv)
    restored = parsed(entrypoint.restore_input_types(argv))
    assert type(restored["model"][0]).__name__ == "Model" and restored["model"][0].uri == "/x/Trainer/model"
    assert type(restored["examples"][0]).__name__ == "Examples"
    assert entrypoint.restore_input_types(entrypoint.restore_input_types(argv)) == entrypoint.restore_input_types(argv)
    # kfp.local's DockerRunner types every upstream artifact as KFP's generic system.Artifact
    for listed in ei["inputs"]["artifacts"].values():
        listed["artifacts"][0]["type"] = {"schemaTitle": "system.Artifact", "schemaVersion": "0.0.1"}
    argv = [launcher.fill_placeholders(a, ei) for a in container["args"]]
    assert type(parsed(entrypoint.restore_input_types(argv))["model"][0]).__name__ == "Model"


def test_placeholders_are_filled():
    ei = {"inputs": {"parameterValues": {"n": 3, "s": "x"}, "artifacts": {}},
          "outputs": {"outputFile": "/o/out.json", "artifacts": {"m": {"artifacts": [{"uri": "/o/m"}]}}}}
    assert json.loads(launcher.fill_placeholders("{{$}}", ei)) == ei
    assert launcher.fill_placeholders("--n={{$.inputs.parameters['n']}}", ei) == "--n=3"
    assert launcher.fill_placeholders("{{$.outputs.artifacts['m'].uri}}/f", ei) == "/o/m/f"
    assert launcher.fill_placeholders("{{$.outputs.output_file}}", ei) == "/o/out.json"
    with pytest.raises(launcher.UnsupportedSpec, match="unsupported placeholder"):
        launcher.fill_placeholders("{{$.pipeline_job_resource_name}}", ei)


def test_outputs_take_the_metadata_the_executor_wrote(tmp_path):
    out_file = tmp_path / "executor_output.json"
    ei = {"outputs": {"outputFile": str(out_file), "artifacts": {
        "blessing": {"artifacts": [{"name": "r/E/blessing", "uri": "/u", "metadata": {}, "type": {}}]}}}}
    out_file.write_text(json.dumps({"artifacts": {"blessing": {"artifacts": [
        {"uri": "/u", "metadata": {"blessed": 1.0}}]}}}))
    got = launcher.read_outputs(ei)
    assert got["blessing"]["metadata"] == {"blessed": 1.0} and got["blessing"]["name"] == "r/E/blessing"


def test_a_cloud_pipeline_root_is_refused_before_anything_runs(tmp_path, capsys):
    out = str(tmp_path / "cloud.json")
    kfp_compile.compile_pipeline(load_config(), image=IMAGE, pipeline_root="gs://b/root", output=out)
    assert cli.main(["run-compiled", out]) == cli.EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert err.count("error:") == 1 and "--pipeline-root /an/absolute/dir" in err
    assert not os.path.exists("gs:")


def test_unknown_parameters_and_missing_specs_are_named(local_job, tmp_path, capsys):
    path, _, _ = local_job
    assert cli.main(["run-compiled", path, "--param", "nope=1"]) == cli.EXIT_BAD_INPUT
    assert "nope are not runtime parameters" in capsys.readouterr().err
    assert cli.main(["run-compiled", str(tmp_path / "missing.json")]) == cli.EXIT_BAD_INPUT
    assert "run 'tfxline compile' first" in capsys.readouterr().err


def test_summary_reads_the_tasks_outputs():
    def task(name, key, metadata):
        return rc.TaskResult(name, 1.0, {key: {"uri": f"/r/{name}/{key}", "metadata": metadata}}, "")

    result = rc.RunResult("taxi-1", "/r", "tfxline:local", tasks=[
        task("DriftGate", "drift_anomalies", {"compared_with": "serving version 7's training data"}),
        task("ServingBaseline", "baseline_model", {"baseline_found": 1.0, "serving_version": "7"}),
        task("Evaluator", "blessing", {"blessed": 0.0}),
        task("Pusher", "pushed_model", {"pushed": 0.0})], seconds=12.0)
    lines = result.summary_lines("auc 0.5000", ["auc 0.5000 is below the minimum 0.75"])
    assert lines == [
        "run taxi-1 (4 tasks in containers of tfxline:local): wall time 12s",
        "  drift: none vs serving version 7's training data",
        "  baseline: serving version 7",
        "  eval (overall): auc 0.5000",
        "  blessing: NOT blessed: auc 0.5000 is below the minimum 0.75",
        "  pushed: nothing (model not blessed)",
        "  task inputs, outputs and logs: /r"]


def test_the_failing_line_of_a_task_log_is_found(tmp_path):
    log = tmp_path / "log.txt"
    log.write_text("I0101 starting\nTraceback (most recent call last):\n  File x\n"
                   "components.anomalies_gate.DataAnomaliesError: the data violates the schema (1 anomalies)\n"
                   "I0101 exiting\n")
    assert rc.last_error_line(str(log)) == (
        "components.anomalies_gate.DataAnomaliesError: the data violates the schema (1 anomalies)")


def test_no_docker_is_bad_input_named_before_anything_runs(local_job):
    path, _, root = local_job
    with pytest.raises(rc.RunCompiledError, match="no '/no/such/docker' command"):
        rc.run_compiled(path, docker="/no/such/docker")
    assert not os.path.exists(os.path.join(root, "taxi"))  # nothing half-written


def test_a_serving_dir_outside_the_pipeline_root_is_refused(tmp_path):
    out = str(tmp_path / "elsewhere.json")
    cfg = load_config(overrides=[f"serving.serving_root={tmp_path / 'srv'}"])
    kfp_compile.compile_pipeline(cfg, image=IMAGE, pipeline_root=str(tmp_path / "root"), output=out)
    with pytest.raises(rc.RunCompiledError, match="outside its pipeline root"):
        rc.run_compiled(out)
    assert not os.path.exists(tmp_path / "root")
