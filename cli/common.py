"""What every ``tfxline`` command shares: exit codes, the one-line bad-input error, the config
flags and how they become a config. Imported by cli/main.py (the local commands) and by
cli/kubeflow.py (compile, submit, run-compiled); it imports neither."""
from __future__ import annotations

import argparse
import os
import sys

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT = 0, 1, 2
EXIT_BROKEN_PIPE = 141  # stdout's reader left, as a shell reports a command SIGPIPE ended (128 + 13)


# pipeline/configs/*.yaml, by name (a literal: the help must not import the config loader)
PACKAGED_CONFIGS = ("taxi", "penguin", "penguin_mass")


def count(text: str) -> int:
    """An option's value that counts something (runs --last N): a whole number, at least 1."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"needs a whole number of at least 1, got {text!r}")
    return value


class Parser(argparse.ArgumentParser):
    """Every tfxline parser and subparser (add_subparsers makes its own class's): an option is
    taken only as written. argparse's prefix matching took ``schema draft --out x`` as
    ``--output x``, a different flag from the one the user meant."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)


def add_config_args(p: argparse.ArgumentParser, default=None, training: bool = False) -> None:
    """The config flags. ``training``: also --train-steps, --strategy and --precision, for the
    commands that train (run, compile); elsewhere they would only clutter the help."""
    p.add_argument("--config", metavar="FILE", default=default,
                   help=f"YAML config file, or a packaged config by name: {', '.join(PACKAGED_CONFIGS)} "
                        "(default: ./config.yaml, the project tfxline init wrote here, when there is one; else taxi)")
    p.add_argument("--data", metavar="PATH", default=default,
                   help="data file or directory, or package:PKG/PATH (data.path)")
    p.add_argument("--output", metavar="DIR", default=default, help="output root (output_root)")
    p.add_argument("--schema", metavar="NAME_OR_FILE", default=default,
                   help="schema name in schema/ or a .pbtxt (data.schema)")
    if training:
        p.add_argument("--train-steps", type=int, metavar="N", default=default,
                       help="train N optimizer steps instead of passes over the data "
                            "(training.mode=steps, training.train_steps=N)")
        p.add_argument("--strategy", default=default, help="runtime.strategy")
        p.add_argument("--precision", default=default, help="runtime.precision")
    elif default is None:
        p.set_defaults(train_steps=None, strategy=None, precision=None)
    p.add_argument("--set", action="append", default=[] if default is None else default,
                   metavar="SECTION.KEY=VALUE", help="override any config key (repeatable)")


# The config key each shared flag sets (--train-steps sets two, and may lower training.epochs:
# pipeline/config/steps.fit_rounds_to_steps).
FLAG_KEYS = {"--data": ("data.path",), "--output": ("output_root",), "--schema": ("data.schema",),
             "--train-steps": ("training.train_steps", "training.mode"), "--strategy": ("runtime.strategy",),
             "--precision": ("runtime.precision",)}


PROJECT_CONFIG = "config.yaml"  # what `tfxline init` writes (--dir, default: here)


def config_file(args: argparse.Namespace):
    """--config, else the project's config in the current directory (``tfxline init`` wrote it: a
    command run there without --config means that project, not the packaged taxi), else None."""
    if getattr(args, "config", None):
        return args.config
    return PROJECT_CONFIG if os.path.isfile(PROJECT_CONFIG) else None


def config_from_args(args: argparse.Namespace, data: bool = True):
    """The config the flags ask for. --train-steps N also fits the config's rounds (training.epochs
    in steps mode) to N unless --set training.epochs is given, and says so on stderr when it lowers them."""
    from tfxline.pipeline.config import ConfigError
    from tfxline.pipeline.config.load import config_from_dict, raw_config
    from tfxline.pipeline.config.steps import fit_rounds_to_steps

    explicit = {
        "data.path": args.data, "output_root": args.output, "data.schema": args.schema,
        "training.train_steps": args.train_steps, "runtime.strategy": args.strategy,
        "training.mode": "steps" if args.train_steps is not None else None,
        "runtime.precision": args.precision,
    }
    overrides = {item.partition("=")[0].strip(): item.partition("=")[2] for item in args.set}
    for flag, keys in FLAG_KEYS.items():
        for key in keys:
            if explicit[key] is not None and key in overrides and overrides[key] != str(explicit[key]):
                value = getattr(args, flag[2:].replace('-', '_'))
                raise ConfigError(f"{flag} {value} and --set {key}={overrides[key]} disagree on {key}; "
                                  "keep one of them")
    raw = raw_config(config_file(args), args.set, explicit)
    note = fit_rounds_to_steps(raw, args.train_steps) if "training.epochs" not in overrides else None
    cfg = config_from_dict(raw, data=data)
    if note:
        print(f"note: {note}", file=sys.stderr)
    return cfg


class BadInput(Exception):
    """Bad input or config: ``main`` prints it as one ``error:`` line and exits 2. ``reason``:
    which, in a refused run's metrics (components/run_metrics.REASONS: config or bad_input)."""

    def __init__(self, message: str, reason: str = "bad_input"):
        super().__init__(message)
        self.reason = reason


def config_or_bad_input(args, tensorflow: bool = True, data: bool = True):
    """The command's config, or BadInput (exit 2, one line). ``data``: the command reads the
    data, so its path must exist; the commands that read what runs left (runs, report, gc,
    serving, predict) keep working after the day's file is moved away."""
    from tfxline.pipeline.config import ConfigError
    from tfxline.pipeline.config.load import MissingDataError
    from tfxline.pipeline.data.source import DataError
    from tfxline.transforms.features import FeatureSpecError

    try:
        cfg = config_from_args(args, data=data)
    except (DataError, MissingDataError) as e:  # e.g. --data names no file (yet)
        raise BadInput(str(e), reason="bad_input") from None
    except (ConfigError, FeatureSpecError) as e:
        raise BadInput(str(e), reason="config") from None
    if tensorflow:
        quiet_tensorflow()  # the config is good: the command goes on to TensorFlow
    return cfg


def quiet_tensorflow() -> None:
    """Import TensorFlow without its import-time noise (after the cheap checks, so a bad
    input fails fast)."""
    from tfxline.cli.quiet import import_tensorflow_quietly

    import_tensorflow_quietly()


class ReaderMayLeave:
    """The console stream of a command that must finish whoever reads it: once the reader has
    gone (``tfxline run | head -3``), writes are dropped instead of raising BrokenPipeError in
    the middle of a run, which then went unrecorded (a run directory without run.json)."""

    def __init__(self, stream):
        self.stream, self.gone = stream, False

    def _guard(self, call, *args) -> None:
        if self.gone:
            return
        try:
            call(*args)
        except BrokenPipeError:
            self.gone = True

    def write(self, text: str) -> int:
        self._guard(self.stream.write, text)
        return len(text)

    def flush(self) -> None:
        self._guard(self.stream.flush)

    def __getattr__(self, name):  # isatty, encoding, fileno: the stream's own
        return getattr(self.stream, name)
