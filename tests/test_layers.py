"""The packages' import layers. The model side (transforms, trainer) and the custom components
run inside the Trainer, Transform and component containers and in unit tests without the
orchestrator, so they must not reach up into it: feature names and config types live low,
the orchestrator (pipeline, kubeflow) and the benches import them, never the reverse."""
import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
PROJECT = {"transforms", "trainer", "components", "pipeline", "kubeflow", "bench", "tools"}
ALLOWED = {  # package -> the project packages its modules may import (itself included)
    "transforms": {"transforms"},
    "trainer": {"transforms", "trainer"},
    "components": {"transforms", "trainer", "components"},
}


def imported_roots(path: pathlib.Path):
    """(line, top-level package) of every import in the file, function-level ones included."""
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            yield from ((node.lineno, alias.name.split(".")[0]) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.lineno, node.module.split(".")[0]


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_lower_packages_do_not_import_the_orchestrator(package):
    files = sorted((ROOT / package).rglob("*.py"))
    assert files, f"no modules under {package}/"
    bad = [f"{path.relative_to(ROOT)}:{line} imports {root}"
           for path in files for line, root in imported_roots(path)
           if root in PROJECT and root not in ALLOWED[package]]
    assert not bad, "; ".join(bad)


def test_the_check_sees_nested_imports(tmp_path):
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from pipeline.summary import x\n    import kubeflow.cli\n")
    assert list(imported_roots(module)) == [(2, "pipeline"), (3, "kubeflow")]


def imported_modules(path: pathlib.Path):
    """Every module the file imports, by its full dotted name."""
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module
            yield from (f"{node.module}.{alias.name}" for alias in node.names)


def test_the_command_line_modules_import_one_way():
    """pipeline/cli.py registers the Kubeflow commands (imports kubeflow/cli.py); both take their
    shared helpers from pipeline/cli_common.py, which imports neither: no cycle."""
    assert "pipeline.cli" not in set(imported_modules(ROOT / "kubeflow" / "cli.py"))
    assert "pipeline.cli_common" in set(imported_modules(ROOT / "kubeflow" / "cli.py"))
    common = set(imported_modules(ROOT / "pipeline" / "cli_common.py"))
    assert not {"pipeline.cli", "kubeflow.cli", "kubeflow"} & common
