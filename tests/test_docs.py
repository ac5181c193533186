"""The manual cannot drift from the code: the configuration reference (docs/configuration.md) is
generated from the config dataclasses and their field comments (tools/config_reference.py), and
every field has a comment to generate from."""
import dataclasses
import subprocess
import sys
import typing

import pytest

from tfxline.pipeline.config import PipelineConfig
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


def test_the_bench_tables_are_what_the_benches_wrote():
    """Every table of figures in the manual is rendered from bench/results/*.json
    (tools/bench_tables.py): re-run the bench, then the tool; a hand edit fails here."""
    done = subprocess.run([sys.executable, "tools/bench_tables.py", "--check"], cwd=ROOT,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("page", ["docs/performance.md", "docs/training.md"])
def test_no_table_of_figures_is_typed_by_hand(page):
    from tools import bench_tables

    text = open(f"{ROOT}/{page}").read()
    outside = bench_tables.BLOCK.sub("", text)
    typed = [line for line in outside.splitlines() if line.lstrip().startswith("|")]
    assert not typed, f"{page}: a table outside <!-- bench-table --> markers: {typed[0]}"
    assert bench_tables.BLOCK.search(text)


def test_a_table_follows_its_json(monkeypatch):
    from tools import bench_tables

    real = bench_tables.load

    def changed(name):
        data = real(name)
        if name == "scale.json":
            data["runs"][1]["wall_seconds"] = 299.4
            data["time_ratio"] = 1.2
        return data

    monkeypatch.setattr(bench_tables, "load", changed)
    page = "x\n  <!-- bench-table: scale -->\n  | stale |\n  <!-- /bench-table -->\ny\n"
    out = bench_tables.render_page(page)
    assert "| stale |" not in out and "| 1,000,000 | 299 s |" in out and "| time ratio | 1.2 |" in out
    assert out.startswith("x\n  <!-- bench-table: scale -->\n  | rows |") and out.endswith("<!-- /bench-table -->\ny\n")
    with pytest.raises(KeyError, match="unknown bench table 'nope'"):
        bench_tables.render_page("<!-- bench-table: nope -->\n<!-- /bench-table -->\n")


# Messages whose fix is filled in at run time: the {...} at the end is pipeline/data/check._type_problem's
# "needs an integer, got 'x'; fix the value or ...".
FIX_FILLED_IN = {"{...} line {...}: column {...} {...}"}


def test_every_error_names_its_fix():
    """Each catalogued message says, after the semicolon, what to do (docs/troubleshooting.md)."""
    from tools import error_catalogue

    without = sorted({f"{path}:{line}: {m}" for _, path, line, m in error_catalogue.collect()
                      if ";" not in m and m not in FIX_FILLED_IN})
    assert not without, "add '; <the fix>' to:\n" + "\n".join(without)
