"""Files the config points at are part of MLMD's cache key (issue #48): an edit in place re-runs
what depends on it. MLMD keys an execution on its inputs and exec properties, so

- the schema: the local runner hands ImportSchemaGen a copy named by its content
  (runs/files.content_copy), so the schema_file property changes exactly when the file does;
- the data: ExampleGen's driver fingerprints its input files (TFX's
  calculate_splits_fingerprint_span_and_version) by name, size and modification second only, so
  the local runner also puts the CSVs' content digest in ExampleGen's custom_config;
- the config: every value a component uses is one of its exec properties.
"""
import dataclasses
import os

from tfxline.runs import files
from tfxline.local import runner as local_runner
from tfxline.pipeline.config.load import load_config
from tests.conftest import write_taxi_slice


def exec_properties(cfg, paths, component_id):
    pipeline = local_runner.build_pipeline(cfg, paths)
    return next(c for c in pipeline.components if c.id == component_id).exec_properties


def test_a_schema_edited_in_place_changes_import_schema_gens_key(tmp_path):
    data = write_taxi_slice(tmp_path / "data" / "taxi.csv", limit=50)
    schema = tmp_path / "my.pbtxt"
    schema.write_bytes(open(load_and_path(tmp_path, data)[1].schema_path, "rb").read())
    cfg = load_config(overrides=[f"data.path={data}", f"output_root={tmp_path / 'out'}", f"data.schema={schema}"])
    paths = local_runner.resolve_inputs(cfg)
    first = exec_properties(cfg, paths, "ImportSchemaGen")["schema_file"]
    assert first == exec_properties(cfg, paths, "ImportSchemaGen")["schema_file"]  # unchanged: the same key
    schema.write_text(schema.read_text().replace("min_fraction: 1.0", "min_fraction: 0.5", 1))
    second = exec_properties(cfg, paths, "ImportSchemaGen")["schema_file"]
    assert second != first
    assert open(second).read() == schema.read_text() and open(first).read() != schema.read_text()


def load_and_path(tmp_path, data):
    cfg = load_config(overrides=[f"data.path={data}", f"output_root={tmp_path / 'o'}"])
    return cfg, local_runner.resolve_inputs(cfg)


def test_content_copy_names_the_content(tmp_path):
    a = tmp_path / "a" / "s.pbtxt"
    a.parent.mkdir()
    a.write_text("one")
    first = files.content_copy(str(a), str(tmp_path / "copies"))
    assert files.content_copy(str(a), str(tmp_path / "copies")) == first
    a.write_text("two")
    assert files.content_copy(str(a), str(tmp_path / "copies")) != first
    assert sorted(os.listdir(tmp_path / "copies")) == sorted(os.path.basename(p) for p in (
        first, files.content_copy(str(a), str(tmp_path / "copies"))))


def test_data_edited_in_place_changes_example_gens_key(tmp_path):
    """A CSV rewritten in place with the same size within the same second: TFX's driver
    fingerprint (size and modification second) is unchanged, ExampleGen's cache key is not."""
    from tfx.components.example_gen import utils
    from tfx.proto import example_gen_pb2

    path = tmp_path / "d" / "taxi.csv"
    write_taxi_slice(path, limit=50)
    cfg = load_config(overrides=[f"data.path={path}", f"output_root={tmp_path / 'out'}"])
    split = example_gen_pb2.Input.Split(name="single_split", pattern="*.csv")
    stat = os.stat(path)
    fingerprint = utils.calculate_splits_fingerprint_span_and_version(str(path.parent), [split])[0]
    before = exec_properties(cfg, local_runner.resolve_inputs(cfg), "CsvExampleGen")["custom_config"]
    text = path.read_text()
    path.write_text(text.replace("Cash", "Cesh", 1))  # same size
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # as cp -p or rsync -t keep it
    assert utils.calculate_splits_fingerprint_span_and_version(str(path.parent), [split])[0] == fingerprint
    after = exec_properties(cfg, local_runner.resolve_inputs(cfg), "CsvExampleGen")["custom_config"]
    assert after != before
    path.write_text(text)
    assert exec_properties(cfg, local_runner.resolve_inputs(cfg), "CsvExampleGen")["custom_config"] == before



def trainer_cache_inputs(tmp_path, data, *overrides):
    """What MLMD keys the Trainer's execution on besides its input artifacts, as the local runner
    compiles it: the node's parameters (exec properties, custom_config among them) and its executor
    spec (where a Beam component's Beam args go)."""
    return local_cache_inputs(tmp_path, data, *overrides)[0]["Trainer"]


def test_beam_flags_alone_leave_the_trainers_cache_key(tmp_path):
    """The Trainer's custom_config carries only what trainer/run.py reads (TrainerSettings): a change
    of Beam flags (runtime.beam_args, the beam section) or of Transform's statistics compiles the same
    Trainer (parameters and executor spec: its part of the cache key), where runtime.beam_args used to
    change it; a setting it reads still does. (Its input artifacts are the rest of its key: a local run
    keeps the Beam flags out of the upstream Beam components' keys too, the test below.)"""
    import json

    from tfxline.pipeline.factory import trainer_custom_config
    from tfxline.trainer.settings import TrainerRuntime, TrainerSettings

    data = write_taxi_slice(tmp_path / "data" / "taxi.csv", limit=50)
    cfg = load_config(overrides=[f"data.path={data}", "runtime.beam_args=[--direct_num_workers=2]"])
    custom = json.loads(json.dumps(trainer_custom_config(cfg)))
    assert sorted(custom) == ["features", "model", "runtime", "threshold", "training"]
    assert sorted(custom["runtime"]) == sorted(f.name for f in dataclasses.fields(TrainerRuntime))
    assert TrainerSettings.from_custom_config(custom) == cfg.trainer_settings  # what run_fn reads back
    first = trainer_cache_inputs(tmp_path, data)
    assert trainer_cache_inputs(tmp_path, data, "runtime.beam_args=[--direct_num_workers=2, --max_num_workers=3]",
                                "beam.direct_running_mode=multi_threading", "runtime.transform_statistics=true") == first
    assert trainer_cache_inputs(tmp_path, data, "training.epochs=3")[0] != first[0]


def local_cache_inputs(tmp_path, data, *overrides):
    """Each node's parameters and executor spec as the local runner compiles them (Beam args as
    environment placeholders, local/beam_flags.py), and the args' values it sets for the run."""
    from tfx.dsl.compiler import compiler
    from tfx.proto.orchestration import pipeline_pb2

    from tfxline.local import beam_flags

    cfg = load_config(overrides=[f"data.path={data}", f"output_root={tmp_path / 'out'}", *overrides])
    pipeline = local_runner.build_pipeline(cfg, local_runner.resolve_inputs(cfg))
    values = beam_flags.outside_the_cache_key(pipeline.components)
    ir = compiler.Compiler().compile(pipeline)
    deployment = pipeline_pb2.IntermediateDeploymentConfig()
    ir.deployment_config.Unpack(deployment)
    keys = {n.pipeline_node.node_info.id: (n.pipeline_node.parameters.SerializeToString(deterministic=True),
                                           deployment.executor_specs[n.pipeline_node.node_info.id].value)
            for n in ir.nodes}
    return keys, values, deployment


def test_beam_flags_alone_leave_every_components_cache_key(tmp_path):
    """A local run's Beam flags reach the executors as environment placeholders: a change of their
    values alone (the engine's workers, runtime.beam_args) compiles the same node for every
    component, Beam's included, so a re-run serves them all from the cache and the Trainer's inputs
    are the same artifacts; TFX resolves the placeholders to the flags when an executor starts."""
    from tfx.dsl.compiler import placeholder_utils
    from tfx.orchestration.portable import data_types
    from tfx.proto.orchestration import executable_spec_pb2

    from tfxline.local import beam_flags

    data = write_taxi_slice(tmp_path / "data" / "taxi.csv", limit=50)
    one, one_values, _ = local_cache_inputs(tmp_path, data, "beam.direct_running_mode=in_memory",
                                            "beam.direct_num_workers=1", "runtime.beam_args=[--max_num_workers=3]")
    two, two_values, deployment = local_cache_inputs(  # the same mode: on Beam 2.68+ the runner pin follows it
        tmp_path, data, "beam.direct_running_mode=in_memory", "beam.direct_num_workers=2",
        "runtime.beam_args=[--max_num_workers=5]")
    assert one == two and one_values != two_values
    assert "--max_num_workers=5" in beam_flags.args_of(two_values, "Transform")
    spec = executable_spec_pb2.BeamExecutableSpec()
    deployment.executor_specs["Transform"].Unpack(spec)
    with beam_flags.in_environment(two_values):  # as the executor operator resolves them in the run
        context = placeholder_utils.ResolutionContext(exec_info=data_types.ExecutionInfo())
        resolved = [placeholder_utils.resolve_placeholder_expression(p, context)
                    for p in spec.beam_pipeline_args_placeholders]
    assert resolved == beam_flags.args_of(two_values, "Transform") and not spec.beam_pipeline_args
    assert not any(k.startswith(beam_flags.PREFIX) for k in os.environ)  # the environment as it was
    three, _, _ = local_cache_inputs(tmp_path, data, "runtime.beam_args=[--max_num_workers=3, --foo=1]")
    assert three["Transform"] != one["Transform"] and three["Trainer"] == one["Trainer"]  # a flag added: a new key
