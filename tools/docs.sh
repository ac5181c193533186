#!/usr/bin/env bash
# Build the manual (docs/ -> site/) with MkDocs in its own venv, .venv-docs/, from
# requirements/docs.lock.txt (the docs toolchain stays apart from the TFX stacks). Strict: a
# broken link, a missing page or a page outside the nav fails the build.
#   tools/docs.sh [PYTHON]   (default: the interpreter .venv/ was made with)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
VENV="$ROOT/.venv-docs"
LOCK="requirements/docs.lock.txt"
PY="${1:-$(.venv/bin/python -c 'import sys; print(sys._base_executable)' 2>/dev/null || command -v python3)}"
STAMP="$VENV/.installed"
if [[ ! -f "$STAMP" || "$(cat "$STAMP")" != "$(sha256sum "$LOCK" | cut -d' ' -f1)" ]]; then
  rm -rf "$VENV"
  "$PY" -m venv "$VENV"
  "$VENV/bin/pip" install -q --disable-pip-version-check --no-deps -r "$LOCK" \
    2> >(grep -v "^WARNING: Location" >&2)
  sha256sum "$LOCK" | cut -d' ' -f1 > "$STAMP"
fi
# NO_MKDOCS_2_WARNING: Material's start-up banner about MkDocs 2.0 (this lock pins MkDocs 1.6).
# Not --quiet: it hides the warnings that --strict counts, and the build then passes.
NO_MKDOCS_2_WARNING=true "$VENV/bin/mkdocs" build --strict 2> >(grep -v "^INFO" >&2)
echo "docs: built into site/ (open site/index.html)"
