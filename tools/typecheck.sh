#!/usr/bin/env bash
# pyright (basic mode, pyproject.toml's [tool.pyright]) on every product folder, against the
# project's venv: `make lint` runs it after ruff and the measures; docs/contributing.md says how to
# read it and how an editor gets the same answers. Usage: tools/typecheck.sh [PYRIGHT ARGS...]
# (the venv: $TFXLINE_VENV, default .venv, as the Makefile's VENV).
# Pinned here and installed from npm beside ruff in .roots/pyright (a development tool, not part of
# the product or its locks; needs Node.js >= 14 and npm). Before it runs, tools/proto_stubs.py
# writes the protobuf modules' stubs from the venv into .roots/pyright-stubs (the config's
# stubPath), again whenever the venv, the generator or the set of *_pb2 imports changes.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PYRIGHT_VERSION=1.1.414
VENV="${TFXLINE_VENV:-.venv}"
target=.roots/pyright
stubs=.roots/pyright-stubs
if [[ ! -x "$VENV/bin/python" ]]; then
  echo "error: no venv at $VENV: the type check reads the stack's packages from it; run make setup first" >&2
  exit 1
fi
if [[ "$(cat "$target/VERSION" 2>/dev/null)" != "$PYRIGHT_VERSION" ]]; then
  if ! command -v npm >/dev/null; then
    echo "error: installing pyright $PYRIGHT_VERSION needs npm (Node.js); apt-get install nodejs npm" >&2
    exit 1
  fi
  rm -rf "$target"
  npm install --prefix "$target" --no-audit --no-fund --no-save --loglevel=error "pyright@$PYRIGHT_VERSION" >&2
  echo "$PYRIGHT_VERSION" > "$target/VERSION"
fi
products=(patches typed_config task_types transforms trees trainer serving components pipeline runs local kubeflow cli)
want="$( (cat "$VENV/.tfxline-installed" 2>/dev/null || realpath "$VENV"; cat tools/proto_stubs.py
          grep -rhoE --include='*.py' '[A-Za-z0-9_.]*_pb2' "${products[@]}" | sort -u) | sha256sum | cut -d' ' -f1)"
if [[ "$(cat "$stubs.stamp" 2>/dev/null)" != "$want" ]]; then
  "$VENV/bin/python" tools/proto_stubs.py "$stubs" 2> >(grep -v -E "^[0-9-]+ [0-9:.]+: [IW] |^To enable the following|rebuild TensorFlow" >&2)
  echo "$want" > "$stubs.stamp"
fi
"$target/node_modules/.bin/pyright" --pythonpath "$VENV/bin/python" "$@"
