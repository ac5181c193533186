"""local/interactive.ComponentRunner outside a notebook (tests/test_notebooks.py runs it in one):
the components are the pipeline a run builds, and running one whose inputs were not made yet,
or one the pipeline does not have, is refused in one line before TFX is asked."""
import pytest

from tests.conftest import write_taxi_slice


@pytest.fixture
def components(tmp_path):
    from tfxline.local.interactive import ComponentRunner
    from tfxline.pipeline.config.load import load_config

    data = write_taxi_slice(tmp_path / "data" / "taxi.csv", limit=200)
    cfg = load_config("taxi", [f"output_root={tmp_path / 'out'}", f"data.path={data}"])
    return ComponentRunner(cfg, str(tmp_path / "interactive"))


def test_the_components_are_the_local_runs(components):
    from tfxline.local import runner

    built = runner.build_pipeline(components.cfg, components.paths)
    assert list(components.components) == [c.id for c in built.components]
    assert components.artifact("CsvExampleGen", "examples") is None  # not run yet


def test_a_component_whose_inputs_were_not_made_is_refused(components):
    with pytest.raises(ValueError, match="Transform reads examples from CsvExampleGen, which has not run"):
        components.run("Transform")
    with pytest.raises(KeyError, match="no component 'Trainr' in the pipeline; it has CsvExampleGen"):
        components.run("Trainr")


@pytest.mark.e2e
def test_a_component_runs_and_runs_again_from_the_cache(components, monkeypatch, capsys):
    """TFX's InteractiveContext runs only in IPython (it checks builtins.__IPYTHON__): as if there.
    Each run prints a progress line; the same component on the same inputs is served from the
    context's cache, and its output is the first run's."""
    import builtins

    monkeypatch.setattr(builtins, "__IPYTHON__", True, raising=False)
    first = components.run("CsvExampleGen")
    examples = components.artifact("CsvExampleGen", "examples")
    again = components.run("CsvExampleGen")
    assert not components.cached(first.execution_id) and components.cached(again.execution_id)
    assert components.artifact("CsvExampleGen", "examples").uri == examples.uri
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(" (")[0] for line in lines] == ["[ done  ] CsvExampleGen", "[cached ] CsvExampleGen"]
