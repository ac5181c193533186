# The README's two commands: `make run` and `make test`. Both set up .venv/ first (once).
VENV := .venv
BIN := $(VENV)/bin
PYTEST_ARGS ?=
RUN_ARGS ?=

.PHONY: setup run test test-fast lock clean

setup:
	@bash tools/bootstrap.sh

run: setup
	$(BIN)/tfxline run $(RUN_ARGS)

test: setup
	$(BIN)/python -m pytest $(PYTEST_ARGS)

# Unit tests only (skips the pipeline runs), for a quick local loop.
test-fast: setup
	$(BIN)/python -m pytest -m "not e2e" $(PYTEST_ARGS)

# Re-resolve the TFX 1.16 stack into the lock file (needs the package registry).
lock:
	bash tools/lock.sh

clean:
	rm -rf output test-artifacts
