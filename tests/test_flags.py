"""Every shared flag of the commands, alone and with the others it can meet, on each packaged
config, through the config loader (no runs): each lands on its config key; a flag and a --set of
the same key that disagree are refused naming both; the commands' own flags parse."""
import itertools

import pytest

from tfxline.cli import common
from tfxline.cli import main as cli
from tfxline.cli import run_command
from tfxline.pipeline.config import ConfigError

CONFIGS = ("taxi", "penguin", "penguin_mass")
COMMANDS_WITH_CONFIG = ("run", "runs", "gc", "serving", "report", "schema draft", "compile")
TRAINING_COMMANDS = ("run", "compile")  # the others have no --train-steps, --strategy, --precision
TRAINING_FLAGS = ("--train-steps", "--strategy", "--precision")


@pytest.fixture(scope="module")
def csv_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("flags") / "data.csv"
    path.write_text("a,b\n1,2\n")
    return str(path)


def flag_values(csv_file, tmp):
    return {"--data": csv_file, "--output": str(tmp / "out"), "--schema": "taxi", "--train-steps": "7",
            "--strategy": "one_device", "--precision": "float32", "--set": "model.dropout=0.1"}


EXPECTED = {"--data": ("data", "path"), "--output": ("output_root",), "--schema": ("data", "schema"),
            "--train-steps": ("training", "train_steps"), "--strategy": ("runtime", "strategy"),
            "--precision": ("runtime", "precision"), "--set": ("model", "dropout")}


def value_at(cfg, path):
    for part in path:
        cfg = getattr(cfg, part)
    return cfg


def argv_for(command, config, flags, values):
    argv = command.split() + ["--config", config]
    for flag in flags:
        argv += [flag, values[flag]]
    if command == "compile":
        argv += ["--image", "i", "--pipeline-root", "gs://b/r"]
    return argv


@pytest.mark.parametrize("config", CONFIGS)
def test_every_combination_of_the_shared_flags_lands_on_its_keys(config, csv_file, tmp_path):
    values = flag_values(csv_file, tmp_path)
    parser = cli.build_parser()
    flags = list(EXPECTED)
    for n in range(len(flags) + 1):
        for chosen in itertools.combinations(flags, n):
            cfg = common.config_from_args(parser.parse_args(argv_for("run", config, chosen, values)))
            for flag in chosen:
                got = value_at(cfg, EXPECTED[flag])
                want = {"--train-steps": 7, "--set": 0.1, "--output": str(tmp_path / "out")}.get(flag, values[flag])
                assert got == want, (chosen, flag)
            if "--train-steps" in chosen:
                assert cfg.training.mode == "steps" and cfg.training.epochs <= 7


@pytest.mark.parametrize("command", COMMANDS_WITH_CONFIG)
def test_each_command_takes_the_shared_flags(command, csv_file, tmp_path, capsys):
    values = flag_values(csv_file, tmp_path)
    training = command in TRAINING_COMMANDS
    flags = [f for f in EXPECTED if training or f not in TRAINING_FLAGS]
    cfg = common.config_from_args(cli.build_parser().parse_args(argv_for(command, "taxi", flags, values)))
    assert cfg.data.path == csv_file and cfg.model.dropout == 0.1
    if training:
        assert cfg.training.train_steps == 7
        return
    with pytest.raises(SystemExit) as refused:  # a command that trains nothing does not take them
        cli.build_parser().parse_args(argv_for(command, "taxi", flags + ["--train-steps"], values))
    err = capsys.readouterr().err  # runs and serving have subcommands: argparse then names the value
    assert refused.value.code == 2 and ("unrecognized arguments: --train-steps" in err or "invalid choice: '7'" in err)


@pytest.mark.parametrize("flag, value, key, other", [
    ("--train-steps", "7", "training.mode", "epochs"),
    ("--train-steps", "7", "training.train_steps", "9"),
    ("--strategy", "mirrored", "runtime.strategy", "default"),
    ("--precision", "float32", "runtime.precision", "mixed_bfloat16"),
    ("--schema", "taxi", "data.schema", "penguin"),
])
def test_a_flag_and_a_set_that_disagree_are_named(flag, value, key, other):
    args = cli.build_parser().parse_args(["run", flag, value, "--set", f"{key}={other}"])
    with pytest.raises(ConfigError, match=f"{flag} {value} and --set {key}={other} disagree on {key}; keep one"):
        common.config_from_args(args)
    agreeing = cli.build_parser().parse_args(["run", flag, value, "--set", f"{key}={value}"]) if key != "training.mode" \
        else cli.build_parser().parse_args(["run", flag, value, "--set", f"{key}=steps"])
    common.config_from_args(agreeing)


def test_the_commands_own_flags_parse():
    parser = cli.build_parser()
    assert parser.parse_args(["run", "--span", "2026-11-25", "--no-cache"]).span == "2026-11-25"
    assert run_command.span_number("2026-11-25") == 20782  # days since 1970-01-01, as TFX numbers date spans and run_command.span_number("3") == 3
    assert parser.parse_args(["runs", "--last", "3", "show", "r1"]).run_id == "r1"
    assert parser.parse_args(["gc", "--keep-runs", "2", "--dry-run"]).keep_runs == 2
    rollback = parser.parse_args(["serving", "rollback", "--to", "4", "--reason", "bad", "--dry-run"])
    assert (rollback.to, rollback.reason, rollback.dry_run) == (4, "bad", True)
    assert parser.parse_args(["predict", "--input", "a.csv", "--predictions", "p.jsonl"]).predictions == "p.jsonl"
    submit = parser.parse_args(["submit", "p.json", "--target", "kfp", "--host", "h", "--serving-pvc", "v",
                                "--param", "data_root=/d", "--train-steps", "3", "--dry-run"])
    assert (submit.serving_pvc, submit.param, submit.train_steps) == ("v", ["data_root=/d"], 3)
    assert parser.parse_args(["run-compiled", "p.json", "--image", "x"]).image == "x"
