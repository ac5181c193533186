import os

import pytest

from tfxline.pipeline.config import ConfigError
from tfxline.pipeline.config.load import load_config, packaged_config_path


def write(tmp_path, text, name="c.yaml"):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def test_default_config_loads_taxi_spec():
    cfg = load_config()
    assert cfg.name == "taxi"
    assert cfg.features.label.name == "big_tipper"
    assert cfg.features.task == "binary"
    assert "tips" not in cfg.features.serving_columns
    assert "tips" in cfg.features.raw_columns
    assert os.path.isabs(cfg.output_root)
    assert cfg.runtime.strategy == "auto"


def test_overrides_and_explicit_values_are_typed():
    cfg = load_config(overrides=["training.train_steps=123", "model.hidden_units=[8, 4]",
                                 "evaluation.slices=[payment_type]"],
                      **{"runtime.precision": "float32", "output_root": "/tmp/x"})
    assert cfg.training.train_steps == 123
    assert cfg.model.hidden_units == (8, 4)
    assert cfg.evaluation.slices == ("payment_type",)
    assert cfg.runtime.precision == "float32"
    assert cfg.output_root == "/tmp/x"
    assert cfg.metadata_path == "/tmp/x/metadata.sqlite"
    assert cfg.serving_dir == "/tmp/x/serving/taxi"


@pytest.mark.parametrize("override, message", [
    ("training.trian_steps=5", "unknown config key training.trian_steps"),
    ("bogus=1", "unknown config key bogus; allowed keys: beam, data, drift, evaluation, features,"),
    ("trainig.epochs=3", r"unknown config key trainig; did you mean 'training'\? allowed keys: beam,"),
    ("runtime.strategy=warp", "runtime.strategy"),
    ("runtime.precision=float8", "runtime.precision"),
    ("training.batch_size=0", "training.batch_size"),
    ("training.batch_size=abc", "expected an integer"),
    ("training.batch_scaling=max", "training.batch_scaling: 'max'; use one of auto, always, off"),
    ("evaluation.min_auc=1.5", "evaluation.min_auc"),
    ("evaluation.slices=[no_such_column]", "evaluation.slices"),
    ("training.cache=maybe", "expected true or false"),
    ("data.path=/does/not/exist.csv", "does not exist"),
    ("training", "section.key=value"),
    ("training.mode=forever", "training.mode"),
    ("training.gradient_accumulation_steps=0", "training.gradient_accumulation_steps"),
    ("training.cache_max_gb=0", "training.cache_max_gb"),
    ("drift.numeric_threshold=0", "drift.numeric_threshold"),
    ("drift.text_token_threshold=0", r"drift.text_token_threshold: 0.0; must be > 0 and < 1 \(a share"),
    ("drift.text_oov_rise=1", "drift.text_oov_rise"),
    ("drift.text_length_ratio=1", r"drift.text_length_ratio: 1.0; must be > 1 \(a ratio either way"),
    ("drift.numeric_threshold=2", r"drift.numeric_threshold: 2.0; must be > 0 and < 1 \(the measure is at most 1"),
    ("drift.categorical_threshold=1", "drift.categorical_threshold: 1.0; must be > 0 and < 1"),
    ("drift.features={fare: 1.5}", "drift.features"),
    ("model.weight_decay=-0.1", "model.weight_decay"),
    ("runtime.steps_per_execution=-1", "runtime.steps_per_execution"),
    ("runtime.profile_steps=-1", "runtime.profile_steps"),
    ("metadata.backend=postgres", "metadata.backend"),
    ("metadata.port=70000", "metadata.port"),
    ("drift.features={no_such_column: 0.2}", "drift.features: no_such_column not among"),
    ("drift.features={fare: high}", "drift.features.fare: expected a number"),
    ("drift.features=[fare]", "drift.features: expected a mapping"),
    ("runtime.jit_compile=yes please", "runtime.jit_compile: 'yes please'; use auto"),
    ("data.spans=newest", "data.spans: 'newest'; use latest, or {window: N}"),
    ("data.spans=window:0", "data.spans: 'window:0'"),
    ("data.spans={window: two}", "data.spans: {'window': 'two'}"),
    ("data.spans={days: 2}", "data.spans: {'days': 2}"),
    ("data.validation_buckets=-1", "data.validation_buckets: -1; must be >= 0"),
    ("data.spans=window:3", "a window of spans needs TFX's {SPAN} placeholder in data.pattern"),
    ("serving.tflite=int4", "serving.tflite: 'int4'; use off or a quantization: none, dynamic, float16, int8"),
    ("serving.tflite_tolerance=-0.1", "serving.tflite_tolerance: -0.1; must be >= 0"),
])
def test_bad_keys_and_values_name_the_problem(override, message):
    with pytest.raises(ConfigError, match=message.replace(".", r"\.")):
        load_config(overrides=[override])


def test_steps_mode_needs_a_step_per_round():
    with pytest.raises(ConfigError, match=r"in steps mode it counts the rounds .* must be <= training\.train_steps"):
        load_config(overrides=["training.mode=steps", "training.epochs=2000"])


@pytest.mark.parametrize("argv, epochs", [
    (["run", "--train-steps", "5"], 5),                  # the taxi config's 10 passes: 5 rounds of 1 step
    (["run", "--train-steps", "40"], 10),                # 10 rounds of 4 steps
    (["run", "--train-steps", "1", "--config", "penguin"], 1),
    (["run", "--train-steps", "50", "--set", "training.epochs=2"], 2),
])
def test_train_steps_fits_the_configs_rounds_to_its_budget(argv, epochs):
    """`tfxline run --train-steps 5` on the defaults: a documented flag that works alone."""
    from tfxline.cli import common, main as cli

    cfg = common.config_from_args(cli.build_parser().parse_args(argv))
    assert (cfg.training.mode, cfg.training.train_steps, cfg.training.epochs) == (
        "steps", int(argv[2]), epochs)


def test_train_steps_says_when_it_lowers_the_rounds(capsys):
    """The rounds are lowered in the open: one note on stderr names the flag, both counts and the
    key that picks another; none when the config's rounds fit or --set training.epochs chose them."""
    from tfxline.cli import common, main as cli

    common.config_from_args(cli.build_parser().parse_args(["run", "--train-steps", "5"]))
    assert capsys.readouterr().err == (
        "note: --train-steps 5 lowers training.epochs from 10 to 5: in steps mode it counts the rounds the 5 "
        "steps are split into, each ending with a validation pass; --set training.epochs=N picks another count\n")
    for argv in (["--train-steps", "40"], ["--train-steps", "50", "--set", "training.epochs=2"], []):
        common.config_from_args(cli.build_parser().parse_args(["run"] + argv))
        assert capsys.readouterr().err == ""
    with pytest.raises(ConfigError):  # a refused config: its error line alone
        common.config_from_args(cli.build_parser().parse_args(["run", "--train-steps", "5", "--set", "name=a b"]))
    assert capsys.readouterr().err == ""


def test_each_section_checks_its_own_values():
    """A section's rules sit beside its fields (problems()); the pipeline config names the section."""
    import dataclasses

    from tfxline.pipeline.config import DataConfig, MonitoringConfig

    cfg = load_config()
    assert list(cfg.problems()) == []
    assert [tuple(p) for p in DataConfig(format="xml").problems()] == [("format", "'xml'", "use one of csv, tfrecord, images, text")]
    labels = MonitoringConfig(labels={"job": "a"})
    assert [p.key for p in labels.problems()] == ["labels"] and list(labels.push_problems())
    bad = dataclasses.replace(cfg, training=dataclasses.replace(cfg.training, batch_size=0))
    assert [p.key for p in bad.problems()] == ["training.batch_size"]
    assert all(list(getattr(cfg, name).problems()) == [] for name in ("model", "training", "runtime"))
    assert [tuple(p) for p in dataclasses.replace(cfg.runtime, precision="half").problems()] == [
        ("precision", "'half'", "use one of auto, float32, mixed_float16, mixed_bfloat16")]  # the Trainer's own rule


def test_a_refused_run_reports_with_its_checked_reporting_keys(tmp_path):
    from tfxline.pipeline.config.reporting import load_reporting_config

    cfg = load_reporting_config(None, ["name=daily", "monitoring.labels={env: prod}", "model.dropout=7"],
                                output_root=str(tmp_path))
    assert (cfg.name, cfg.output_root, cfg.monitoring.labels) == ("daily", str(tmp_path), {"env": "prod"})
    with pytest.raises(ConfigError, match=r"monitoring\.pushgateway_url: 'gw'; must start with http://"):
        load_reporting_config(None, ["monitoring.pushgateway_url=gw"])
    with pytest.raises(ConfigError, match=r"monitoring\.labels: 'job' is a label tfxline's metrics use already"):
        load_reporting_config(None, ["monitoring.labels={job: a}"])


def test_a_train_steps_flag_against_an_explicit_epochs_names_both():
    from tfxline.cli import common, main as cli

    args = cli.build_parser().parse_args(["run", "--train-steps", "5", "--set", "training.epochs=10"])
    with pytest.raises(ConfigError, match=r"training\.epochs: 10; in steps mode it counts the rounds "
                                          r"training\.train_steps \(--train-steps\) is split into"):
        common.config_from_args(args)


def test_the_default_budget_is_passes_over_the_data():
    """Passes over the train split (early stopping ends it), not a fixed step count; the
    CLI's --train-steps asks for a step budget and switches the mode with it."""
    from tfxline.cli import common, main as cli

    assert load_config().training.mode == "epochs"
    args = cli.build_parser().parse_args(["run", "--train-steps", "40"])
    cfg = common.config_from_args(args)
    assert (cfg.training.mode, cfg.training.train_steps) == ("steps", 40)


def test_epochs_mode_is_not_bound_by_the_step_budget():
    cfg = load_config(overrides=["training.mode=epochs", "training.epochs=2000",
                                 "training.gradient_accumulation_steps=4", "runtime.jit_compile=true"])
    assert (cfg.training.mode, cfg.training.epochs) == ("epochs", 2000)
    assert cfg.training.gradient_accumulation_steps == 4 and cfg.runtime.jit_compile == "true"


def test_jit_compile_is_auto_unless_set_and_takes_yaml_booleans():
    assert load_config().runtime.jit_compile == "auto"
    assert load_config(overrides=["runtime.jit_compile=false"]).runtime.jit_compile == "false"
    assert load_config(overrides=["runtime.jit_compile=auto"]).runtime.jit_compile == "auto"


def test_error_message_is_one_line():
    with pytest.raises(ConfigError) as e:
        load_config(overrides=["runtime.strategy=warp"])
    assert "\n" not in str(e.value)
    assert "use one of" in str(e.value)


def test_missing_and_invalid_files(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(str(tmp_path / "nope.yaml"))
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(write(tmp_path, "a: [unclosed"))
    with pytest.raises(ConfigError, match="features"):
        load_config(write(tmp_path, "name: x\n"))


def test_config_round_trips_through_dict():
    from tfxline.pipeline.config.load import config_from_dict

    cfg = load_config()
    assert config_from_dict(cfg.to_dict()) == cfg


def test_packaged_config_is_package_data():
    assert os.path.isfile(packaged_config_path("taxi"))


def test_spans_latest_or_a_window():
    assert load_config().data.spans == "latest" and load_config().data.window == 1
    window = load_config(overrides=["data.pattern=span-{SPAN}/*.csv", "data.spans={window: 3}"])
    assert window.data.spans == "window:3" and window.data.window == 3  # YAML's form, one string
    assert load_config(overrides=["data.pattern=day-{YYYY}{MM}{DD}/*.csv", "data.spans=window:2"]).data.window == 2
    assert window.to_dict()["data"]["spans"] == "window:3"


def test_per_feature_drift_thresholds():
    cfg = load_config(overrides=["drift.features={fare: 0.3, company: 0}"])
    assert cfg.drift.features == {"fare": 0.3, "company": 0.0}
    assert cfg.to_dict()["drift"]["features"] == {"fare": 0.3, "company": 0.0}


def test_mysql_store_takes_its_password_from_the_environment(monkeypatch):
    from tfxline.runs.store import connection_config, describe_store

    cfg = load_config(overrides=["metadata.backend=mysql", "metadata.host=db", "metadata.port=3307"])
    assert cfg.metadata_store == {"mysql": {"host": "db", "port": 3307, "database": "tfxline",
                                            "user": "tfxline", "password_env": "TFXLINE_MLMD_PASSWORD"}}
    monkeypatch.delenv("TFXLINE_MLMD_PASSWORD", raising=False)
    with pytest.raises(ConfigError, match="needs its password in the environment variable TFXLINE_MLMD_PASSWORD"):
        connection_config(cfg.metadata_store)
    monkeypatch.setenv("TFXLINE_MLMD_PASSWORD", "s3cret")
    config = connection_config(cfg.metadata_store)
    assert (config.mysql.host, config.mysql.port, config.mysql.password) == ("db", 3307, "s3cret")
    assert describe_store(cfg.metadata_store) == "mysql://tfxline@db:3307/tfxline"
    assert "s3cret" not in str(cfg.to_dict())  # the config never holds the password
    assert load_config().metadata_store == load_config().metadata_path  # SQLite by default


def test_an_unquoted_off_turns_the_phone_model_off():
    """YAML 1.1 reads an unquoted ``off`` as the boolean false, and so does ``--set serving.tflite=off``:
    the refusals' own fix ("set serving.tflite: off") was refused as 'false' (a new user's trial)."""
    import yaml

    assert load_config("taxi", ["serving.tflite=off"]).serving.tflite == "off"
    assert yaml.safe_load("tflite: off") == {"tflite": False}  # what the reader is given
    with pytest.raises(ConfigError, match="serving.tflite: 'true'; use off or a quantization"):
        load_config("taxi", ["serving.tflite=true"])
