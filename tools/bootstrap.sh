#!/usr/bin/env bash
# Create a venv with one of the two supported TFX stacks and install this project in it
# (editable). Usage: tools/bootstrap.sh [VENV_DIR]   (default .venv)
#                    tools/bootstrap.sh --print-stack   (only say which stack, and why)
#
# The stack: TFXLINE_STACK=1.21 | 1.16 | auto (default). auto picks the newest stack the
# machine can install:
#   TFX 1.21 (Python 3.11-3.13) when glibc >= 2.39 and such a Python is found: TFX 1.17+
#     depends on ml-metadata / TFDV / tfx-bsl wheels built for manylinux_2_39 only;
#   TFX 1.16 (Python 3.10) otherwise.
# Each stack is one lock file installed with --no-deps, so the set is exactly the same every
# time. Re-running reuses the venv unless the lock file or setup.py changed.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PRINT_ONLY=0
if [[ "${1:-}" == "--print-stack" ]]; then PRINT_ONLY=1; shift; fi
VENV="$(realpath -m "${1:-$ROOT/.venv}")"
STAMP="$VENV/.tfxline-installed"
STACK="${TFXLINE_STACK:-auto}"
MIN_GLIBC_FOR_CURRENT="2.39"

lock_of() {
  case "$1" in
    1.21) echo "requirements/tfx-1.21-py313.lock.txt" ;;
    1.16) echo "requirements/tfx-1.16-py310.lock.txt" ;;
  esac
}
pythons_of() {  # the minor versions a stack runs on, newest first
  case "$1" in
    1.21) echo "3.13 3.12 3.11" ;;
    1.16) echo "3.10" ;;
  esac
}

glibc_version() { getconf GNU_LIBC_VERSION 2>/dev/null | awk '{print $2}'; }
version_ge() { [[ "$(printf '%s\n%s\n' "$1" "$2" | sort -V | head -1)" == "$2" ]]; }

# A Python interpreter of one of the given minor versions: $PYTHON first, then python3.X on
# PATH, pyenv's installs (the pyenv shim refuses unless the version is selected, so the
# interpreter is used directly), the usual system paths, python3.
find_python() {
  local minors="$1" c v candidates=("${PYTHON:-}")
  for v in $minors; do
    candidates+=("python$v")
    if command -v pyenv >/dev/null 2>&1; then
      candidates+=("$(pyenv root)"/versions/"$v"*/bin/python"$v")
    fi
    candidates+=("/usr/bin/python$v" "/usr/local/bin/python$v")
  done
  candidates+=(python3)
  for c in "${candidates[@]}"; do
    [[ -n "$c" ]] || continue
    local got
    got="$("$c" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)" || continue
    for v in $minors; do
      if [[ "$got" == "$v" ]]; then command -v "$c" || echo "$c"; return 0; fi
    done
  done
  return 1
}

GLIBC="$(glibc_version)"
case "$STACK" in
  auto)
    if [[ -n "$GLIBC" ]] && version_ge "$GLIBC" "$MIN_GLIBC_FOR_CURRENT" \
        && PY="$(find_python "$(pythons_of 1.21)")"; then
      STACK=1.21
      WHY="auto: glibc $GLIBC >= $MIN_GLIBC_FOR_CURRENT and $("$PY" --version 2>&1) found"
    else
      STACK=1.16
      if [[ -z "$GLIBC" ]] || ! version_ge "$GLIBC" "$MIN_GLIBC_FOR_CURRENT"; then
        WHY="auto: glibc ${GLIBC:-unknown} < $MIN_GLIBC_FOR_CURRENT (TFX 1.17+ needs manylinux_2_39 wheels)"
      else
        WHY="auto: glibc $GLIBC is new enough, but no Python 3.11-3.13 was found"
      fi
    fi ;;
  1.21)
    if [[ -z "$GLIBC" ]] || ! version_ge "$GLIBC" "$MIN_GLIBC_FOR_CURRENT"; then
      echo "error: TFXLINE_STACK=1.21 needs glibc >= $MIN_GLIBC_FOR_CURRENT, this machine has ${GLIBC:-unknown}; use TFXLINE_STACK=1.16, or run inside a Debian 13 root: make test-tfx121" >&2
      exit 1
    fi
    WHY="TFXLINE_STACK=1.21" ;;
  1.16) WHY="TFXLINE_STACK=1.16" ;;
  *)
    echo "error: TFXLINE_STACK=$STACK is not a stack; use 1.21, 1.16 or auto" >&2
    exit 1 ;;
esac
LOCK="$(lock_of "$STACK")"
echo "stack: TFX $STACK ($LOCK) - $WHY" >&2
if [[ "$PRINT_ONLY" == 1 ]]; then exit 0; fi

want="$(cat "$LOCK" setup.py | sha256sum | cut -d' ' -f1)"
if [[ -f "$STAMP" && "$(cat "$STAMP")" == "$want" && -x "$VENV/bin/tfxline" ]]; then
  exit 0
fi

if [[ -z "${PY:-}" ]] && ! PY="$(find_python "$(pythons_of "$STACK")")"; then
  echo "error: TFX $STACK needs Python $(pythons_of "$STACK" | tr ' ' '/'), none found. Install one (e.g. 'pyenv install $(pythons_of "$STACK" | cut -d' ' -f1)' or 'apt-get install python$(pythons_of "$STACK" | cut -d' ' -f1)-venv') or set PYTHON=/path/to/python" >&2
  exit 1
fi

echo "setting up $VENV with $PY ($("$PY" --version 2>&1))" >&2
rm -rf "$VENV"
"$PY" -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps -r "$LOCK"
# --use-pep517: setuptools >= 80 (TFX 1.21 stack) no longer installs editable the legacy way.
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps \
  --no-build-isolation --use-pep517 -e .
echo "$want" > "$STAMP"
echo "$VENV ready" >&2
