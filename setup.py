"""tfxline: a production TFX pipeline (CsvExampleGen -> ... -> Pusher), local and Kubeflow."""
from setuptools import find_packages, setup

# The layers, lowest first (tests/test_layers.py): each imports only those before it.
PACKAGES = ("task_types", "transforms", "trainer", "serving", "components", "pipeline", "runs", "local", "kubeflow",
            "cli", "schema")

setup(
    name="tfxline",
    version="0.1.0",
    description="End-to-end TFX pipeline: local LocalDagRunner runs and Kubeflow/Vertex compiles",
    python_requires=">=3.10",
    packages=[p for p in find_packages(include=[f"{p}*" for p in PACKAGES])],
    package_data={
        "pipeline": ["configs/*.yaml"],
        "runs": ["report/templates/*.j2", "report/templates/*.css", "report/templates/sections/*.j2"],
        "schema": ["*.pbtxt"],
    },
    # The stack is pinned in requirements/*.lock.txt and installed from there (tools/bootstrap.sh);
    # these are the direct dependencies, for a plain `pip install .` into a prepared env.
    install_requires=["tfx>=1.16,<1.22", "PyYAML", "Jinja2", "prometheus-client"],
    entry_points={"console_scripts": ["tfxline = cli.main:entry"]},
)
