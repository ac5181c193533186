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
    assert "tfx.Model" in arts["model"]["artifacts"][0]["type"]["instanceSchema"]
    outs = ei["outputs"]["artifacts"]
    assert outs["blessing"]["artifacts"][0]["uri"] == "/run/Evaluator/blessing"
    assert ei["outputs"]["outputFile"] == "/run/Evaluator/executor_output.json"
    # Both parameter encodings (schema 2.0 typed Values, 2.1 plain JSON), same value.
    config = ei["inputs"]["parameterValues"]["eval_config"]
    assert ei["inputs"]["parameters"]["eval_config"] == {"stringValue": config}
    assert json.loads(config)["model_specs"][0]["label_key"] == "big_tipper"


def test_runtime_parameters_reach_their_tasks(local_job):
    _, job, _ = local_job
    values = spec.parameter_overrides(job, {"data_root": "/data/today"}, train_steps=7)
    gen = executor_input(job, "CsvExampleGen", values)["inputs"]
    assert gen["parameterValues"]["input_base"] == "/data/today"
    trainer = executor_input(job, "Trainer", values)["inputs"]
    assert json.loads(trainer["parameterValues"]["train_args"]) == {"num_steps": 7}
    assert trainer["parameters"]["train_args"] == {"stringValue": json.dumps({"num_steps": 7})}


def test_integer_parameters_are_typed(local_job):
    _, job, _ = local_job
    params = executor_input(job, "CsvExampleGen")["inputs"]["parameters"]
    assert params["output_data_format"] == {"intValue": "6"}  # FORMAT_TF_EXAMPLE


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
