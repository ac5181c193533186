"""tfxline: a production TFX pipeline (CsvExampleGen -> ... -> Pusher), local and Kubeflow."""
from setuptools import find_packages, setup

# The layers, lowest first (tests/test_layers.py): each imports only those before it.
PACKAGES = ("patches", "typed_config", "task_types", "transforms", "trees", "trainer", "serving", "components", "pipeline",
            "runs", "local", "kubeflow", "cli", "schema")
# One top-level import name: each folder above is a subpackage of tfxline (tfxline/__init__.py),
# so installing this never claims a generic name like ``kubeflow`` or ``schema`` (issue #63).
SUBPACKAGES = sorted(p for p in find_packages(include=[f"{p}*" for p in PACKAGES]))

setup(
    name="tfxline",
    version="0.1.0",
    description="End-to-end TFX pipeline: local LocalDagRunner runs and Kubeflow/Vertex compiles",
    python_requires=">=3.10",
    packages=["tfxline"] + [f"tfxline.{p}" for p in SUBPACKAGES],
    package_dir={"tfxline": "tfxline", **{f"tfxline.{p}": p.replace(".", "/") for p in SUBPACKAGES}},
    package_data={
        "tfxline.pipeline": ["configs/*.yaml"],
        "tfxline.runs": ["report/templates/*.j2", "report/templates/*.css", "report/templates/sections/*.j2"],
        "tfxline.schema": ["*.pbtxt"],
    },
    # The stack is pinned in requirements/*.lock.txt and installed from there (tools/bootstrap.sh);
    # these are the direct dependencies, for a plain `pip install .` into a prepared env.
    install_requires=["tfx>=1.16,<1.22", "PyYAML", "Jinja2", "prometheus-client"],
    entry_points={"console_scripts": ["tfxline = tfxline.cli.main:entry"]},
)
