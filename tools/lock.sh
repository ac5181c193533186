#!/usr/bin/env bash
# Re-resolve the stack in a scratch venv and write requirements/tfx-1.16-py310.lock.txt.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
LOCK="$ROOT/requirements/tfx-1.16-py310.lock.txt"
PY="${PYTHON:-$(ls "$(pyenv root 2>/dev/null)"/versions/3.10*/bin/python3.10 2>/dev/null | head -1)}"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
"$PY" -m venv "$TMP/venv"
# dill: tensorflow_transform imports it, and Beam 2.74 no longer depends on it.
# apache-beam 2.59.0 is the version TFX 1.16 was tested with (its RELEASE table); the newest
# Beam (2.74) breaks TFT's deep-copy optimisation that the Transform executor switches on.
"$TMP/venv/bin/pip" install "tfx[kfp]==1.16.0" "apache-beam[gcp]==2.59.0" dill pytest
{
  echo "# The full resolved stack for TFX 1.16.0 on Python 3.10 (the newest TFX whose wheels"
  echo "# install on glibc 2.36). Installed with --no-deps, so it is exactly this set every time."
  echo "# Regenerate: make lock (see README)."
  # --all keeps setuptools and wheel (astunparse requires wheel at run time); pip itself is not pinned.
  "$TMP/venv/bin/pip" freeze --all --exclude-editable | grep -v "^pip=="
} > "$LOCK"
echo "wrote $LOCK"
