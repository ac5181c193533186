# The README's two commands: `make run` and `make test`. Both set up .venv/ first (once),
# with the newest TFX stack this machine can install (tools/bootstrap.sh says which and why).
VENV := $(or $(TFXLINE_VENV),.venv)
BIN := $(VENV)/bin
PYTEST_ARGS ?=
RUN_ARGS ?=
NOTEBOOK_ARGS ?=
IMAGE ?= tfxline:local

.PHONY: setup run test test-fast notebook notebook-strip lint typecheck measures test-tfx121 shell-tfx121 image lock lock-tfx121 docs clean

setup:
	@bash tools/bootstrap.sh $(VENV)

run: setup
	$(BIN)/tfxline run $(RUN_ARGS)

test: setup
	$(BIN)/python -m pytest $(PYTEST_ARGS)

# Unit tests only (skips the pipeline runs), for a quick local loop.
test-fast: setup
	$(BIN)/python -m pytest -m "not e2e" $(PYTEST_ARGS)

# JupyterLab on the project's venv with the notebooks open (docs/notebooks.md): the whole pipeline,
# then compiled for a cluster (quickstart), and one component at a time (components).
# NOTEBOOK_ARGS passes flags, e.g. "--no-browser --ip 0.0.0.0" on a remote machine. As root (a
# container, the Debian 13 root of make shell-tfx121) Jupyter refuses to start without --allow-root.
notebook: setup
	$(BIN)/jupyter lab $(if $(filter 0,$(shell id -u)),--allow-root) $(NOTEBOOK_ARGS) \
	    notebooks/quickstart.ipynb notebooks/components.ipynb

# The notebooks' outputs stripped before a commit (tests/test_notebooks.py fails on outputs).
notebook-strip:
	python3 tools/strip_notebooks.py

# ruff on the product folders (rules: pyproject.toml), the tree's measures (tools/measures.py:
# layer order, folder shares, file and function sizes; tests/test_layers.py checks them too), and
# the type check (tools/typecheck.sh: pyright, basic mode, against the venv; `make typecheck` alone).
lint: setup
	bash tools/lint.sh
	python3 tools/measures.py
	TFXLINE_VENV=$(VENV) bash tools/typecheck.sh

typecheck: setup
	TFXLINE_VENV=$(VENV) bash tools/typecheck.sh

# The same test command on the current stack (TFX 1.21, Python 3.13) inside a Debian 13
# root built with debootstrap (needs root; the root is cached in .roots/).
test-tfx121:
	PYTEST_ARGS='$(PYTEST_ARGS)' bash tools/debian13_root.sh make test

shell-tfx121:
	bash tools/debian13_root.sh

# The pipeline image (kubeflow/Dockerfile, TFX 1.21) from a locally made base and the lock's
# wheels (no registry needed); tests/test_containers.py runs the compiled pipeline in it.
image:
	bash tools/image.sh $(IMAGE)

# Re-resolve the TFX 1.16 stack into the lock file (needs the package registry).
lock:
	bash tools/lock.sh 1.16

lock-tfx121:
	bash tools/debian13_root.sh bash tools/lock.sh 1.21

# The manual (docs/ -> site/, MkDocs --strict) in its own venv, .venv-docs/.
docs: setup
	bash tools/docs.sh

clean:
	rm -rf output test-artifacts site
