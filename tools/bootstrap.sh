#!/usr/bin/env bash
# Create .venv/ with Python 3.10 and the locked TFX 1.16 stack, then install this project
# in editable mode. Re-running reuses .venv/ unless the lock file or setup.py changed.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
LOCK="requirements/tfx-1.16-py310.lock.txt"
VENV="$ROOT/.venv"
STAMP="$VENV/.tfxline-installed"

want="$(cat "$LOCK" setup.py | sha256sum | cut -d' ' -f1)"
if [[ -f "$STAMP" && "$(cat "$STAMP")" == "$want" && -x "$VENV/bin/tfxline" ]]; then
  exit 0
fi

is_py310() { [[ -n "$1" ]] && "$1" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 10))' 2>/dev/null; }

find_python() {
  local candidates=("${PYTHON:-}" python3.10)
  if command -v pyenv >/dev/null 2>&1; then
    # The pyenv shim refuses unless 3.10 is selected, so use the interpreter directly.
    candidates+=("$(pyenv root)"/versions/3.10*/bin/python3.10)
  fi
  candidates+=(/usr/bin/python3.10 /usr/local/bin/python3.10 python3)
  for c in "${candidates[@]}"; do
    if is_py310 "$c"; then command -v "$c" || echo "$c"; return 0; fi
  done
  return 1
}

if ! PY="$(find_python)"; then
  echo "error: Python 3.10 not found; TFX 1.16 (the newest TFX that installs on glibc < 2.39) needs Python 3.10. Install it (e.g. 'pyenv install 3.10' or 'apt-get install python3.10-venv') or set PYTHON=/path/to/python3.10" >&2
  exit 1
fi

echo "setting up .venv with $PY ($("$PY" --version 2>&1)) and $LOCK" >&2
rm -rf "$VENV"
"$PY" -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps -r "$LOCK"
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
echo "$want" > "$STAMP"
echo ".venv ready" >&2
