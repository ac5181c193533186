"""One import namespace (issue #63): the installed distribution claims one top-level name,
``tfxline``, so it installs beside PyPI's packages named like its folders (``kubeflow``, the
Kubeflow SDK; ``schema``, a validation library) and neither side shadows the other.

The test builds the wheel from a copy of the sources (both stacks' suites run on one tree at
once in CI: no build/ folder in the checkout), installs it into a fresh venv with pip, next to
the namesakes' wheels (.ci/run downloads them, pinned, into .roots/pypi-namesakes), and imports
both sides from a folder outside the checkout. The venv sees the project's stack (TFX and the
rest) through a .pth line, not its editable install: a .pth in a folder named by a .pth line is
not read, so ``tfxline`` can only come from the wheel."""
import json
import os
import pathlib
import shutil
import subprocess
import sys
import sysconfig

import pytest

from tests.conftest import missing

ROOT = pathlib.Path(__file__).resolve().parent.parent
NAMESAKES = ROOT / ".roots" / "pypi-namesakes"
WHEELS = ("kubeflow-0.5.0-py3-none-any.whl", "schema-0.7.8-py2.py3-none-any.whl")
PROBE = """
import importlib.metadata as md, json, sys
import kubeflow, schema
import tfxline.cli.main, tfxline.kubeflow.compile, tfxline.schema, tfxline.pipeline.data.source as ds
claimed = sorted(name for name, dists in md.packages_distributions().items() if "tfxline" in dists)
print(json.dumps({"kubeflow": kubeflow.__version__, "kubeflow_file": kubeflow.__file__,
                  "schema_has_Schema": hasattr(schema, "Schema"), "schema_file": schema.__file__,
                  "ours": tfxline.kubeflow.compile.__file__, "taxi_schema": ds.schema_path("taxi"),
                  "claimed": claimed}))
"""


def _packages() -> tuple:
    """setup.py's PACKAGES: the folders it maps under tfxline."""
    namespace: dict = {}
    exec(compile((ROOT / "setup.py").read_text().split("setup(")[0], "setup.py", "exec"), namespace)
    return namespace["PACKAGES"]


def _sources(dest: pathlib.Path) -> None:
    """What setup.py packages: itself, the README and the folders it maps under tfxline, with
    tfxline/'s links to them kept as links, as a clone has them."""
    for name in ("setup.py", "README.md"):
        shutil.copy(ROOT / name, dest / name)
    for folder in ("tfxline", *_packages()):
        shutil.copytree(ROOT / folder, dest / folder, symlinks=True, ignore=shutil.ignore_patterns("__pycache__"))


def test_each_folder_is_a_relative_link_under_tfxline():
    """In a checkout, tfxline/<folder> is a committed relative link to ../<folder> for each folder
    setup.py maps (issue #74): Python and static tools (jedi, pyright) follow it, nothing is computed
    at import time, and a folder added to PACKAGES without its link fails here, not in an editor."""
    links = {p.name: os.readlink(p) for p in (ROOT / "tfxline").iterdir() if p.is_symlink()}
    assert links == {folder: f"../{folder}" for folder in _packages()}
    assert sorted(p.name for p in (ROOT / "tfxline").iterdir() if not p.is_symlink() and p.name != "__pycache__") == [
        "__init__.py"]


@pytest.mark.slow
def test_the_wheel_installs_beside_pypis_kubeflow_and_schema(tmp_path):
    if not all((NAMESAKES / w).is_file() for w in WHEELS):
        missing(f"no namesake wheels in {NAMESAKES} (python3 -m pip download --no-deps -d {NAMESAKES} "
                "kubeflow==0.5.0 schema==0.7.8, as .ci/run does)", "TFXLINE_REQUIRE_NAMESAKES")
    src, dist, venv, elsewhere = (tmp_path / d for d in ("src", "dist", "venv", "elsewhere"))
    for d in (src, elsewhere):
        d.mkdir()
    _sources(src)

    def run(*cmd, **kw):
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=600, **kw)
        assert done.returncode == 0, f"{' '.join(map(str, cmd))[:200]}: {done.stderr[-3000:]}"
        return done

    run(sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "--use-pep517",
        "-w", str(dist), str(src))
    ours = list(dist.glob("tfxline-*.whl"))
    assert len(ours) == 1, list(dist.iterdir())
    run(sys.executable, "-m", "venv", str(venv))
    python = venv / "bin" / "python"
    site = pathlib.Path(run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])").stdout.strip())
    (site / "project_stack.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    run(python, "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(ours[0]),
        *(str(NAMESAKES / w) for w in WHEELS))

    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    probe = json.loads(run(python, "-c", PROBE, cwd=elsewhere, env=env).stdout.strip().splitlines()[-1])
    assert probe["kubeflow"] == "0.5.0" and probe["kubeflow_file"].startswith(str(site))
    assert probe["schema_has_Schema"] and probe["schema_file"].startswith(str(site))
    assert probe["ours"].startswith(str(site / "tfxline" / "kubeflow")), probe
    assert pathlib.Path(probe["taxi_schema"]).is_file(), probe  # package data travels in the wheel
    assert probe["claimed"] == ["tfxline"], probe
    # The console command is the wheel's too.
    assert "usage: tfxline" in run(venv / "bin" / "tfxline", "--help", cwd=elsewhere, env=env).stdout


def test_jedi_follows_a_tfxline_import_to_its_definition():
    """Go-to-definition in a checkout (issue #74): jedi (the analyser of IPython and several editors,
    in both locks) resolves ``tfxline.trainer.run.run_fn`` to trainer/run.py's def, through the link."""
    import jedi

    script = jedi.Script("from tfxline.trainer import run\nrun.run_fn\n", project=jedi.Project(str(ROOT)))
    (found,) = script.goto(2, 6)
    assert found.module_path.resolve() == (ROOT / "trainer" / "run.py").resolve()
    assert (ROOT / "trainer" / "run.py").read_text().splitlines()[found.line - 1].startswith("def run_fn(")
