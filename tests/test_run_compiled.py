"""run-compiled without containers: the ExecutorInput each task gets from the compiled spec, as
each Kubeflow Pipelines backend release's driver and launcher make it, and what the project's
entrypoint hands TFX's (the containerised runs themselves are in tests/test_containers.py).

Every behaviour is checked against kubeflow/pipelines' source at the tag named beside it
(/work/.mirror/kubeflow+pipelines; kubeflow/launcher.py and kfp_backends.py cite the lines)."""
import json
import os
import subprocess
import sys

import pytest

from tfx.dsl.components.base import base_executor

from tfxline.kubeflow import compile as kfp_compile, launcher, run_compiled as rc, spec
from tfxline.cli import main as cli
from tfxline.pipeline.config.load import load_config

IMAGE = "tfxline:unit"


@pytest.fixture(scope="module")
def local_job(tmp_path_factory):
    root = tmp_path_factory.mktemp("kfp-local")
    out = str(root / "pipeline.json")
    kfp_compile.compile_pipeline(load_config(), image=IMAGE, pipeline_root=str(root / "root"), output=out)
    return out, spec.load_job(out), str(root / "root")


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FAMILIES = ("2.4", launcher.NEWEST)  # before executor-logs (2.0-2.4) and the newest (2.5+)


def fake_outputs(job, task, kfp_version=launcher.NEWEST, ids=iter(range(1, 10**6))):
    """What a task's container would have produced (its output artifacts, by key), as the
    launcher records them in MLMD."""
    body = spec.pipeline_spec(job)["root"]["dag"]["tasks"][task]
    component = spec.pipeline_spec(job)["components"][body["componentRef"]["name"]]
    outputs = {key: {"uri": f"/x/{task}/{key}", "metadata": {"span": 0.0}, "type": d["artifactType"]}
               for key, d in component.get("outputDefinitions", {}).get("artifacts", {}).items()}
    return launcher.record_artifacts(outputs, launcher.backend(kfp_version), "/x", lambda: next(ids))


def task_parts(job, task):
    pipeline = spec.pipeline_spec(job)
    body = pipeline["root"]["dag"]["tasks"][task]
    component = pipeline["components"][body["componentRef"]["name"]]
    return body, component, pipeline["deploymentSpec"]["executors"][component["executorLabel"]]


def executor_input(job, task, values=None, kfp_version=launcher.NEWEST, run_root="/run"):
    produced = {t: fake_outputs(job, t, kfp_version) for t in spec.tasks_in_order(job)}
    body, component, _ = task_parts(job, task)
    values = {**spec.declared_parameters(job), **(values or {})}
    return launcher.build_executor_input(body, component, values, produced, run_root=run_root, task=task,
                                         kfp_version=kfp_version, salt="SALT")


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
    # as KFP's driver passes them on: read back from MLMD, named by their id, without their schema
    assert all(a["artifacts"][0]["type"] == {"instanceSchema": ""} for a in arts.values())
    assert all(a["artifacts"][0]["name"].isdigit() for a in arts.values())
    assert arts["model"]["artifacts"][0]["metadata"] == {
        "span": 0.0, "display_name": "model", "store_session_info": '{"Provider":"gs","Params":{"fromEnv":"true"}}'}
    outs = ei["outputs"]["artifacts"]
    assert outs["blessing"]["artifacts"][0]["uri"] == "/run/Evaluator/SALT/blessing"
    assert ei["outputs"]["outputFile"] == "/tmp/kfp_outputs/output_metadata.json"  # a local root's
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


TASK_ROOT = "gs://b/root/taxi/run-1"
BLESSING = {"instanceSchema": "title: tfx.ModelBlessing\ntype: object\n"}
EVALUATION = {"instanceSchema": "title: tfx.ModelEvaluation\ntype: object\n"}
LOGS = {"schemaTitle": "system.Artifact"}


def outputs_of(job, task, kfp_version):
    return executor_input(job, task, kfp_version=kfp_version, run_root=TASK_ROOT)["outputs"]


@pytest.mark.parametrize("kfp_version, evaluator, gate", [
    # 2.0-2.3: <run root>/<task>/<key>, the fixed output file (driver.go:1053 at 2.0.0, :1242 at 2.3.0)
    ("2.3", {"outputFile": "/tmp/kfp_outputs/output_metadata.json", "artifacts": {
        "blessing": {"artifacts": [{"uri": f"{TASK_ROOT}/Evaluator/blessing", "type": BLESSING}]},
        "evaluation": {"artifacts": [{"uri": f"{TASK_ROOT}/Evaluator/evaluation", "type": EVALUATION}]}}},
     {"outputFile": "/tmp/kfp_outputs/output_metadata.json"}),
    # 2.4: a salt directory (driver.go:1588 at 2.4.0); still no executor-logs
    ("2.4", {"outputFile": "/tmp/kfp_outputs/output_metadata.json", "artifacts": {
        "blessing": {"artifacts": [{"uri": f"{TASK_ROOT}/Evaluator/SALT/blessing", "type": BLESSING}]},
        "evaluation": {"artifacts": [{"uri": f"{TASK_ROOT}/Evaluator/SALT/evaluation", "type": EVALUATION}]}}},
     {"outputFile": "/tmp/kfp_outputs/output_metadata.json"}),
    # 2.5 (to 2.14): executor-logs on every task, a component with no outputs too (driver.go:2023-2039 at 2.5.0)
    ("2.5", {"outputFile": "/tmp/kfp_outputs/output_metadata.json", "artifacts": {
        "blessing": {"artifacts": [{"uri": f"{TASK_ROOT}/Evaluator/SALT/blessing", "type": BLESSING}]},
        "evaluation": {"artifacts": [{"uri": f"{TASK_ROOT}/Evaluator/SALT/evaluation", "type": EVALUATION}]},
        "executor-logs": {"artifacts": [{"uri": f"{TASK_ROOT}/Evaluator/SALT/executor-logs", "type": LOGS}]}}},
     {"outputFile": "/tmp/kfp_outputs/output_metadata.json", "artifacts": {
         "executor-logs": {"artifacts": [{"uri": f"{TASK_ROOT}/AnomaliesGate/SALT/executor-logs", "type": LOGS}]}}}),
    # 2.15, 2.16: named by key; the output file under the task's local root (driver.go:700, :720 at 2.15.0)
    ("2.16", {"outputFile": "/gcs/b/root/taxi/run-1/Evaluator/SALT/output_metadata.json", "artifacts": {
        "blessing": {"artifacts": [{"name": "blessing", "uri": f"{TASK_ROOT}/Evaluator/SALT/blessing", "type": BLESSING}]},
        "evaluation": {"artifacts": [{"name": "evaluation", "uri": f"{TASK_ROOT}/Evaluator/SALT/evaluation",
                                      "type": EVALUATION}]},
        "executor-logs": {"artifacts": [{"name": "executor-logs", "uri": f"{TASK_ROOT}/Evaluator/SALT/executor-logs",
                                         "type": LOGS}]}}},
     {"outputFile": "/gcs/b/root/taxi/run-1/AnomaliesGate/SALT/output_metadata.json", "artifacts": {
         "executor-logs": {"artifacts": [{"name": "executor-logs", "type": LOGS,
                                          "uri": f"{TASK_ROOT}/AnomaliesGate/SALT/executor-logs"}]}}}),
    # 2.17: the launcher suffixes executor-logs with the retry index (launcher_v2.go:538-604 at 2.17.0)
    ("2.17", {"outputFile": "/gcs/b/root/taxi/run-1/Evaluator/SALT/output_metadata.json", "artifacts": {
        "blessing": {"artifacts": [{"name": "blessing", "uri": f"{TASK_ROOT}/Evaluator/SALT/blessing", "type": BLESSING}]},
        "evaluation": {"artifacts": [{"name": "evaluation", "uri": f"{TASK_ROOT}/Evaluator/SALT/evaluation",
                                      "type": EVALUATION}]},
        "executor-logs": {"artifacts": [{"name": "executor-logs", "uri": f"{TASK_ROOT}/Evaluator/SALT/executor-logs-0",
                                         "type": LOGS}]}}},
     {"outputFile": "/gcs/b/root/taxi/run-1/AnomaliesGate/SALT/output_metadata.json", "artifacts": {
         "executor-logs": {"artifacts": [{"name": "executor-logs", "type": LOGS,
                                          "uri": f"{TASK_ROOT}/AnomaliesGate/SALT/executor-logs-0"}]}}}),
])
def test_outputs_are_provisioned_as_each_kfp_release_does(local_job, kfp_version, evaluator, gate):
    """driver.go provisionOutputs, per backend release: the Evaluator's outputs and those of a
    component that declares none (AnomaliesGate), with a gs:// pipeline root."""
    _, job, _ = local_job
    assert outputs_of(job, "Evaluator", kfp_version) == evaluator
    assert outputs_of(job, "AnomaliesGate", kfp_version) == gate


def test_input_metadata_is_what_mlmd_gives_back_per_release(local_job):
    """display_name from 2.0 (client.go:865-868 at 2.0.0), store_session_info from 2.3
    (client.go:924-931 at 2.3.0; none at 2.2.0)."""
    _, job, _ = local_job
    model = lambda v: executor_input(job, "Evaluator", kfp_version=v)["inputs"]["artifacts"]["model"]["artifacts"][0]  # noqa: E731
    assert model("2.2")["metadata"] == {"span": 0.0, "display_name": "model"}
    assert set(model("2.3")["metadata"]) == {"span", "display_name", "store_session_info"}


def test_unknown_kfp_versions_are_refused(local_job, capsys):
    path, _, root = local_job
    assert launcher.backend("2.17.0").version == "2.17" and launcher.backend("2.4.1").version == "2.4"
    with pytest.raises(launcher.UnsupportedSpec, match=r"--kfp-version 2\.9: not a Kubeflow Pipelines backend release"):
        launcher.backend("2.9")
    assert cli.main(["run-compiled", path, "--kfp-version", "2.9"]) == cli.EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert err.count("error:") == 1 and "use one of 2.0, 2.1, 2.2, 2.3, 2.4, 2.5, 2.14, 2.15, 2.16, 2.17" in err
    assert not os.path.exists(os.path.join(root, "taxi"))  # nothing ran


def tfx_parse(argv):
    """What TFX's own entrypoint parses before the executor runs (kubeflow_v2_run_executor.py
    _run_executor, the same in TFX 1.16 and 1.21): the invocation, then inputs and outputs
    through parse_raw_artifact_dict."""
    from google.protobuf import json_format
    from kfp.pipeline_spec import pipeline_spec_pb2
    from tfx.orchestration.kubeflow.v2.container import kubeflow_v2_entrypoint_utils as utils

    from tfxline.kubeflow import entrypoint

    message = pipeline_spec_pb2.ExecutorInput()
    json_format.Parse(argv[argv.index(entrypoint.INVOCATION_FLAG) + 1], message, ignore_unknown_fields=True)
    names = {}
    return (utils.parse_raw_artifact_dict(message.inputs.artifacts, names),
            utils.parse_raw_artifact_dict(message.outputs.artifacts, names))


def container_argv(job, task, ei):
    _, _, executor = task_parts(job, task)
    return [launcher.fill_placeholders(a, ei) for a in executor["container"]["args"]]


@pytest.mark.parametrize("kfp_version", launcher.KFP_VERSIONS)
def test_tfx_reads_what_each_kfp_release_sends_once_the_entrypoint_fitted_it(local_job, kfp_version):
    """As KFP sends it, TFX's entrypoint fails on the inputs' empty schema (tensorflow/tfx#7768)
    and, from 2.5, on the executor-logs output (ImportError: Could not import system.Artifact);
    kubeflow/entrypoint.py types the inputs from the spec and leaves executor-logs out."""
    from tfxline.kubeflow import entrypoint

    _, job, _ = local_job
    argv = container_argv(job, "Evaluator", executor_input(job, "Evaluator", kfp_version=kfp_version))
    with pytest.raises(AttributeError, match="'NoneType' object has no attribute 'get'"):
        tfx_parse(argv)  # the inputs' empty schema
    fitted = entrypoint.fit_executor_input(argv)
    inputs, outputs = tfx_parse(fitted)
    assert type(inputs["model"][0]).__name__ == "Model" and inputs["model"][0].uri == "/x/Trainer/model"
    assert type(inputs["examples"][0]).__name__ == "Examples"
    assert sorted(outputs) == ["blessing", "evaluation"]
    assert entrypoint.fit_executor_input(fitted) == fitted
    # the inputs alone fixed, as the entrypoint did before: the outputs still fail from 2.5
    ei = json.loads(fitted[fitted.index(entrypoint.INVOCATION_FLAG) + 1])
    ei["outputs"] = executor_input(job, "Evaluator", kfp_version=kfp_version)["outputs"]
    inputs_only = list(fitted)
    inputs_only[fitted.index(entrypoint.INVOCATION_FLAG) + 1] = json.dumps(ei)
    if launcher.backend(kfp_version).executor_logs:
        with pytest.raises(ImportError, match="Could not import system.Artifact"):
            tfx_parse(inputs_only)
    else:
        tfx_parse(inputs_only)


def test_generic_outputs_no_component_declares_are_left_out(local_job, capsys):
    """Any output TFX cannot type (none, or KFP's system.*) is not the component's: left out with
    one stderr line; the declared ones stay as they came."""
    from tfxline.kubeflow import entrypoint

    _, job, _ = local_job
    ei = executor_input(job, "Evaluator")
    ei["outputs"]["artifacts"]["metrics"] = {"artifacts": [{"uri": "/m", "type": {"schemaTitle": "system.Metrics"}}]}
    ei["outputs"]["artifacts"]["untyped"] = {"artifacts": [{"uri": "/u"}]}
    fitted = entrypoint.fit_executor_input(container_argv(job, "Evaluator", ei))
    got = json.loads(fitted[fitted.index(entrypoint.INVOCATION_FLAG) + 1])["outputs"]
    assert sorted(got["artifacts"]) == ["blessing", "evaluation"]
    assert got["artifacts"]["blessing"] == ei["outputs"]["artifacts"]["blessing"]
    assert got["outputFile"] == ei["outputs"]["outputFile"]
    err = capsys.readouterr().err
    assert "output executor-logs (system.Artifact) is not this component's" in err
    assert "output metrics (system.Metrics)" in err and "output untyped (no type)" in err


class EchoExecutor(base_executor.BaseExecutor):
    """A TFX executor that writes down what TFX's entrypoint gave it (to $ECHO_TO) and marks
    its outputs, for the entrypoint run below."""

    def Do(self, input_dict, output_dict, exec_properties):
        seen = {"inputs": {k: [type(a).__name__ for a in v] for k, v in input_dict.items()},
                "outputs": {k: [type(a).__name__ for a in v] for k, v in output_dict.items()},
                "exec_properties": sorted(exec_properties)}
        for listed in output_dict.values():
            for artifact in listed:
                artifact.set_int_custom_property("echoed", 1)
        with open(os.environ["ECHO_TO"], "w") as f:
            json.dump(seen, f)


@pytest.mark.parametrize("kfp_version", FAMILIES)
def test_the_entrypoint_runs_tfx_on_what_kfp_sends_and_writes_what_its_launcher_reads(local_job, tmp_path,
                                                                                       kfp_version):
    """The container's command as KFP runs it, end to end on this machine: `python -m
    tfxline.kubeflow.entrypoint` (TFX's kubeflow_v2_run_executor inside) with the Evaluator's compiled
    arguments and the ExecutorInput of KFP 2.4 (no executor-logs) and of the newest release
    (executor-logs: before this entrypoint left it out, TFX exited with "ImportError: Could not
    import system.Artifact"), the executor swapped for one that echoes what it got. The output
    metadata file TFX writes is then read as KFP's launcher reads it (protojson, strict) and
    merged into the outputs; executor-logs stays the launcher's."""
    _, job, _ = local_job
    ei = executor_input(job, "Evaluator", kfp_version=kfp_version, run_root=str(tmp_path / "root"))
    ei["outputs"]["outputFile"] = str(tmp_path / "kfp_outputs" / "output_metadata.json")  # run-compiled's mount
    argv = container_argv(job, "Evaluator", ei)
    argv[argv.index("--executor_class_path") + 1] = f"{__name__}.EchoExecutor"
    echo = tmp_path / "echo.json"
    proc = subprocess.run([sys.executable, "-m", "tfxline.kubeflow.entrypoint", *argv], cwd=ROOT, capture_output=True,
                          text=True, timeout=600, env={**os.environ, "ECHO_TO": str(echo)})
    assert proc.returncode == 0, proc.stderr[-3000:]
    seen = json.loads(echo.read_text())
    assert seen["inputs"] == {"baseline_model": ["Model"], "examples": ["Examples"], "model": ["Model"]}
    assert seen["outputs"] == {"blessing": ["ModelBlessing"], "evaluation": ["ModelEvaluation"]}
    assert "eval_config" in seen["exec_properties"]
    release = launcher.backend(kfp_version)
    written = launcher.executor_output(ei["outputs"]["outputFile"])
    assert sorted(written["artifacts"]) == ["blessing", "evaluation"]
    got = launcher.read_outputs(ei, release)
    assert got["blessing"]["metadata"]["echoed"] == 1 and got["blessing"]["uri"] == (
        ei["outputs"]["artifacts"]["blessing"]["artifacts"][0]["uri"])
    if release.executor_logs:
        assert got["executor-logs"] == ei["outputs"]["artifacts"]["executor-logs"]["artifacts"][0]
        assert "output executor-logs (system.Artifact) is not this component's" in proc.stderr
    else:
        assert "executor-logs" not in got


def test_what_kfp_local_sends_is_read_by_tfx_once_fitted(local_job):
    """kfp.local's DockerRunner (kfp >= 2.6; 2.17 in the TFX 1.21 stack) builds the ExecutorInput
    with its own construct_executor_input: declared outputs with their declared types (no
    executor-logs), upstream artifacts typed system.Artifact."""
    import inspect

    import kfp

    executor_input_utils = pytest.importorskip("kfp.local.executor_input_utils")
    if "block_input_artifact" not in inspect.signature(executor_input_utils.construct_executor_input).parameters:
        pytest.skip(f"kfp.local runs pipelines (upstream artifacts) from kfp 2.6; this stack has kfp {kfp.__version__}")
    from google.protobuf import json_format
    from kfp import dsl
    from kfp.pipeline_spec import pipeline_spec_pb2

    from tfxline.kubeflow import entrypoint

    _, job, _ = local_job
    body, component, _ = task_parts(job, "Evaluator")
    arguments = {k: v["runtimeValue"]["constant"] for k, v in body["inputs"]["parameters"].items()}
    arguments.update({k: dsl.Artifact(name=k, uri=f"/x/{k}", metadata={})
                      for k in component["inputDefinitions"]["artifacts"]})
    message = executor_input_utils.construct_executor_input(
        json_format.ParseDict(component, pipeline_spec_pb2.ComponentSpec()), arguments, "/local/Evaluator",
        block_input_artifact=False)
    ei = executor_input_utils.executor_input_to_dict(message, json_format.ParseDict(component,
                                                                                    pipeline_spec_pb2.ComponentSpec()))
    assert sorted(ei["outputs"]["artifacts"]) == ["blessing", "evaluation"]
    assert {a["artifacts"][0]["type"]["schemaTitle"] for a in ei["inputs"]["artifacts"].values()} == {"system.Artifact"}
    argv = container_argv(job, "Evaluator", ei)
    with pytest.raises(ImportError, match="Could not import system.Artifact"):
        tfx_parse(argv)
    inputs, outputs = tfx_parse(entrypoint.fit_executor_input(argv))
    assert type(inputs["model"][0]).__name__ == "Model" and sorted(outputs) == ["blessing", "evaluation"]


def test_placeholders_are_filled():
    ei = {"inputs": {"parameterValues": {"n": 3, "s": "x", "f": 0.5, "big": 1e20, "b": True}, "artifacts": {}},
          "outputs": {"outputFile": "/o/out.json", "artifacts": {"m": {"artifacts": [{"uri": "/o/m"}]}},
                      "parameters": {"p": {"outputFile": "/tmp/kfp/outputs/p"}}}}
    assert json.loads(launcher.fill_placeholders("{{$}}", ei)) == ei
    assert launcher.fill_placeholders("--n={{$.inputs.parameters['n']}}", ei) == "--n=3"
    # strconv.FormatFloat(v, 'f', -1, 64) and FormatBool (launcher_v2.go:1144-1148 at 2.17.0)
    assert [launcher.fill_placeholders("{{$.inputs.parameters['%s']}}" % k, ei) for k in ("f", "big", "b")] == [
        "0.5", "100000000000000000000", "true"]
    assert launcher.fill_placeholders("{{$.outputs.artifacts['m'].uri}}/f", ei) == "/o/m/f"
    assert launcher.fill_placeholders("{{$.outputs.output_file}}", ei) == "/o/out.json"
    assert launcher.fill_placeholders("{{$.outputs.parameters['p'].output_file}}", ei) == "/tmp/kfp/outputs/p"
    with pytest.raises(launcher.UnsupportedSpec, match="unsupported placeholder"):
        launcher.fill_placeholders("{{$.pipeline_job_resource_name}}", ei)


def test_declared_defaults_and_output_parameters_reach_the_container():
    """The launcher's addDefaultParams (launcher_v2.go:1310-1333 at 2.17.0) and the driver's
    output parameter files (driver.go:794-798 at 2.17.0)."""
    component = {"inputDefinitions": {"parameters": {"given": {"parameterType": "STRING"},
                                                     "n": {"parameterType": "NUMBER_INTEGER", "defaultValue": 4}}},
                 "outputDefinitions": {"parameters": {"count": {"parameterType": "NUMBER_INTEGER"}}}}
    body = {"inputs": {"parameters": {"given": {"runtimeValue": {"constant": "x"}}}}}
    ei = launcher.build_executor_input(body, component, {}, {}, run_root="/r", task="t", kfp_version="2.0")
    assert ei == {"inputs": {"parameterValues": {"given": "x", "n": 4}},
                  "outputs": {"outputFile": "/tmp/kfp_outputs/output_metadata.json",
                              "parameters": {"count": {"outputFile": "/tmp/kfp/outputs/count"}}}}


def test_outputs_take_what_the_executor_wrote_as_the_launcher_merges_it(tmp_path):
    """mergeRuntimeArtifacts (launcher_v2.go:1188-1206 at 2.17.0): URI replaced, metadata fields
    added; executor-logs kept as given from 2.17 (:802-807); a file that is no ExecutorOutput is
    refused as protojson refuses it (:1232)."""
    out_file = tmp_path / "output_metadata.json"
    given = lambda: {"outputFile": str(out_file), "artifacts": {  # noqa: E731
        "blessing": {"artifacts": [{"name": "blessing", "uri": "/u", "metadata": {"kept": "k"}, "type": {}}]},
        "executor-logs": {"artifacts": [{"name": "executor-logs", "uri": "/l-0", "type": LOGS}]}}}
    out_file.write_text(json.dumps({"artifacts": {
        "blessing": {"artifacts": [{"uri": "/u2", "metadata": {"blessed": 1.0}}]},
        "executor-logs": {"artifacts": [{"uri": "/l"}]}}}))
    got = launcher.read_outputs({"outputs": given()}, launcher.backend("2.17"))
    assert got["blessing"]["metadata"] == {"kept": "k", "blessed": 1.0} and got["blessing"]["uri"] == "/u2"
    assert got["executor-logs"]["uri"] == "/l-0"
    assert launcher.read_outputs({"outputs": given()}, launcher.backend("2.16"))["executor-logs"]["uri"] == "/l"
    out_file.write_text(json.dumps({"artifacts": {}, "extra": 1}))
    with pytest.raises(launcher.BadExecutorOutput, match="not an ExecutorOutput KFP's launcher reads"):
        launcher.read_outputs({"outputs": given()}, launcher.backend("2.17"))


def test_a_relative_root_a_bad_mount_or_env_is_refused_before_anything_runs(tmp_path, capsys, monkeypatch):
    """An object-store root runs (tests/test_containers.py); a relative one cannot be mounted."""
    monkeypatch.chdir(tmp_path)
    out = str(tmp_path / "relative.json")
    kfp_compile.compile_pipeline(load_config(), image=IMAGE, pipeline_root="kfp-root", output=out)
    assert cli.main(["run-compiled", out]) == cli.EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert err.count("error:") == 1 and "--pipeline-root /an/absolute/dir or gs://BUCKET/path" in err
    cloud = str(tmp_path / "cloud.json")
    kfp_compile.compile_pipeline(load_config(), image=IMAGE, pipeline_root="gs://b/root", output=cloud)
    assert cli.main(["run-compiled", cloud, "--mount", "/no/such/key.json"]) == cli.EXIT_BAD_INPUT
    assert capsys.readouterr().err.startswith("error: --mount /no/such/key.json: no such absolute path")
    monkeypatch.delenv("TFXLINE_UNSET", raising=False)
    assert cli.main(["run-compiled", cloud, "--env", "TFXLINE_UNSET"]) == cli.EXIT_BAD_INPUT
    assert "names no value; fix: give NAME=VALUE, or NAME of a variable set in this shell" in capsys.readouterr().err
    assert sorted(os.listdir(tmp_path)) == ["cloud.json", "relative.json"]  # nothing ran, nothing written


def test_unknown_parameters_and_missing_specs_are_named(local_job, tmp_path, capsys):
    path, _, _ = local_job
    assert cli.main(["run-compiled", path, "--param", "nope=1"]) == cli.EXIT_BAD_INPUT
    assert "nope are not runtime parameters" in capsys.readouterr().err
    assert cli.main(["run-compiled", str(tmp_path / "missing.json")]) == cli.EXIT_BAD_INPUT
    assert "run 'tfxline compile' first" in capsys.readouterr().err


def test_summary_reads_the_tasks_outputs():
    def task(name, key, metadata):
        return rc.TaskResult(name, 1.0, {key: {"uri": f"/r/{name}/{key}", "metadata": metadata}}, "")

    result = rc.RunResult("taxi-1", "/r", "tfxline:local", kfp_version="2.17", tasks=[
        task("DriftGate", "drift_anomalies", {"compared_with": "serving version 7's training data"}),
        task("ServingBaseline", "baseline_model", {"baseline_found": 1.0, "serving_version": "7"}),
        task("Evaluator", "blessing", {"blessed": 0.0}),
        task("Pusher", "pushed_model", {"pushed": 0.0})], seconds=12.0)
    lines = result.summary_lines("auc 0.5000", ["auc 0.5000 is below the minimum 0.75"])
    assert lines == [
        "run taxi-1 (4 tasks in containers of tfxline:local, as KFP 2.17 runs them): wall time 12s",
        "  drift: none vs serving version 7's training data",
        "  baseline: serving version 7",
        "  eval (overall): auc 0.5000",
        "  blessing: NOT blessed: auc 0.5000 is below the minimum 0.75",
        "  pushed: nothing (model not blessed)",
        "  task inputs, outputs and logs: /r"]


def test_the_failing_line_of_a_task_log_is_found(tmp_path):
    log = tmp_path / "log.txt"
    log.write_text("I0101 starting\nTraceback (most recent call last):\n  File x\n"
                   "tfxline.components.anomalies_gate.DataAnomaliesError: the data violates the schema (1 anomalies)\n"
                   "I0101 exiting\n")
    assert rc.last_error_line(str(log)) == (
        "tfxline.components.anomalies_gate.DataAnomaliesError: the data violates the schema (1 anomalies)")


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
