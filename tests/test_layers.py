"""The tree's measures (tools/measures.py): the import layers, lowest first patches (run-time patches
of third-party libraries) and typed_config (the config reader), both third-party and standard library
imports only < task_types <
transforms < trees < trainer < serving < components < pipeline < runs < local, kubeflow < cli (the model
side and the custom components run in containers and unit tests without the orchestrator, so they
never reach up into it), each folder's share of the product code, the size of files and
functions, and no import cycle among the modules of a folder."""
import importlib.util
import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("measures", ROOT / "tools" / "measures.py")
measures = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(measures)


def test_every_product_folder_is_a_layer():
    folders = {p.parent.relative_to(ROOT).parts[0] for p in ROOT.glob("*/__init__.py")}
    assert folders - {"tests", "bench", "tools", "schema", "tfxline"} == set(measures.PACKAGES)


def test_no_import_runs_against_the_layer_order():
    assert not measures.layer_violations(), "\n".join(measures.layer_violations())


def test_the_check_sees_nested_and_sideways_imports(tmp_path, monkeypatch):
    for pkg, body in {"runs": "def f():\n    from tfxline.cli.main import x\n", "local": "import tfxline.kubeflow.spec\n",
                      "cli": "import tfxline.local.runner\nfrom tfxline.runs import store\n",
                      "trainer": "from tfxline import task_types\nfrom pipeline import factory\n"}.items():
        (tmp_path / pkg).mkdir()
        (tmp_path / pkg / "m.py").write_text(body)
    monkeypatch.setattr(measures, "ROOT", tmp_path)
    found = measures.layer_violations()
    assert [v.split(" (")[0] for v in found] == ["local/m.py:1 imports tfxline.kubeflow.spec",
                                                 "runs/m.py:2 imports tfxline.cli.main", "trainer/m.py:2 imports pipeline"]


def test_no_folder_holds_more_than_a_fifth_of_the_product_code():
    shares = measures.folder_shares()
    assert max(shares.values()) <= measures.MAX_FOLDER_SHARE, shares


def test_no_product_file_is_over_the_line_limit():
    assert not measures.long_files(), "\n".join(measures.long_files())


def test_no_function_is_over_the_line_limit():
    assert not measures.long_functions(), "\n".join(measures.long_functions())


def test_run_time_patches_are_the_lowest_layer_and_import_nothing_else_of_ours():
    assert "patches" in measures.LAYERS[0]
    ours = [(path.name, module) for path in (ROOT / "patches").glob("*.py") for _, module in measures.imports(path)
            if module.split(".")[0] == "tfxline" and not module.startswith("tfxline.patches")]
    assert not ours, ours


def test_no_import_cycle_inside_a_folder():
    assert not measures.import_cycles(), "\n".join(measures.import_cycles())


def test_the_cycle_check_sees_a_loop_held_apart_by_a_function_level_import(tmp_path, monkeypatch):
    """A planted loop a -> b -> c -> a, its last step a function-level import (what once hid
    components' anomalies_gate -> metric_samples -> drift_gate loop), is found, in a subfolder and
    through a relative import too; imports across folders and a module importing itself are no loop."""
    files = {"components/a.py": "from tfxline.components import b\n",
             "components/b.py": "import tfxline.components.c as c\nfrom tfxline.runs import x\n",
             "components/c.py": "def f():\n    from tfxline.components.a import thing\n",
             "components/d.py": "from tfxline.components import d\n",
             "runs/x.py": "from tfxline.components import a\n",
             "pipeline/__init__.py": "", "pipeline/config/__init__.py": "from tfxline.pipeline.config import load\n",
             "pipeline/config/load.py": "from . import sections\n",
             "pipeline/config/sections.py": "def f():\n    from .. import config\n"}
    for name, body in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(body)
    monkeypatch.setattr(measures, "ROOT", tmp_path)
    assert measures.import_cycles() == [
        "tfxline.components.a -> tfxline.components.b -> tfxline.components.c -> tfxline.components.a",
        "tfxline.pipeline.config -> tfxline.pipeline.config.load -> tfxline.pipeline.config.sections -> "
        "tfxline.pipeline.config"]
