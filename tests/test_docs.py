"""The manual cannot drift from the code: the configuration reference (docs/configuration.md) is
generated from the config dataclasses and their field comments (tools/config_reference.py), and
every field has a comment to generate from."""
import dataclasses
import subprocess
import sys
import typing

import pytest

from pipeline.config import PipelineConfig
from tests.conftest import ROOT
from tools import config_reference


def test_the_configuration_reference_is_the_generated_one():
    done = subprocess.run([sys.executable, "tools/config_reference.py", "--check"], cwd=ROOT,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr + " (a config field or its comment changed)"


@pytest.mark.parametrize("section, cls", config_reference.sections())
def test_every_config_key_is_documented_where_it_is_declared(section, cls):
    comments = config_reference.field_comments(cls)
    undocumented = [f.name for f in dataclasses.fields(cls) if not comments.get(f.name)]
    assert not undocumented, f"{section}: add a comment beside or above {', '.join(undocumented)}"


def test_every_section_and_key_is_in_the_reference():
    text = open(config_reference.OUTPUT).read()
    hints = typing.get_type_hints(PipelineConfig)
    for section, cls in config_reference.sections():
        assert f"## `{section}`" in text
        for f in dataclasses.fields(cls):
            assert f"| `{section}.{f.name}` |" in text
    assert all(f"| `{f.name}` |" in text for f in dataclasses.fields(PipelineConfig)
               if not dataclasses.is_dataclass(hints[f.name]) or f.name == "features")


def test_the_error_catalogue_lists_every_error_the_code_raises():
    """docs/troubleshooting.md is tools/error_catalogue.py's output: a new `raise ConfigError(...)`
    (or any user-facing error class) changes it, so it cannot ship undocumented."""
    done = subprocess.run([sys.executable, "tools/error_catalogue.py", "--check"], cwd=ROOT,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr + " (an error message was added or changed)"


def test_the_catalogue_reads_messages_and_the_config_table():
    from tools import error_catalogue

    found = error_catalogue.collect()
    messages = {m for _, _, _, m in found}
    assert "the data of span {...} drifted" not in " ".join(messages)
    assert any(m.startswith("{...} looks delimited by {...}, not commas") for m in messages)
    assert "bad config value for evaluation.max_error_increase: {...}; must be >= 0 (a fraction of the serving " \
           "model's RMSE: 0.1 allows 10 % more)" in messages
    classes = {c for c, _, _, _ in found}
    assert {"ConfigError", "DataError", "SpecError", "SubmitError", "DataDriftError"} <= classes
