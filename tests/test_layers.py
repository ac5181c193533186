"""The tree's measures (tools/measures.py): the import layers, lowest first patches (run-time patches
of third-party libraries: third-party and standard library imports only) < task_types <
transforms < trainer < serving < components < pipeline < runs < local, kubeflow < cli (the model
side and the custom components run in containers and unit tests without the orchestrator, so they
never reach up into it), each folder's share of the product code, and the size of files and
functions."""
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
    assert measures.LAYERS[0] == ("patches",)
    ours = [(path.name, module) for path in (ROOT / "patches").glob("*.py") for _, module in measures.imports(path)
            if module.split(".")[0] == "tfxline" and not module.startswith("tfxline.patches")]
    assert not ours, ours
