#!/usr/bin/env bash
# ruff on the product folders, with the rules in pyproject.toml (docs/contributing.md).
# Pinned here and installed beside the venvs in .roots/ruff (a development tool, not part of the
# product or its locks). `make lint`; .ci/run runs it before the tests.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
RUFF_VERSION=0.17.6
target=.roots/ruff
if [[ "$(cat "$target/VERSION" 2>/dev/null)" != "$RUFF_VERSION" ]]; then
  rm -rf "$target"
  python3 -m pip install -q --disable-pip-version-check --root-user-action=ignore --no-deps --target "$target" "ruff==$RUFF_VERSION"
  echo "$RUFF_VERSION" > "$target/VERSION"
fi
PYTHONPATH="$target" python3 -m ruff check "$@"
