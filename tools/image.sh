#!/usr/bin/env bash
# Build the pipeline image (kubeflow/Dockerfile) on the current stack, TFX 1.21 / Python 3.13.
#   tools/image.sh [TAG]          (default tfxline:local; `make image`)
# Where a registry is reachable, `BASE_IMAGE=python:3.13-slim-trixie tools/image.sh` uses the
# official base and the registry's packages. Otherwise (as on these machines) it makes both
# locally, each cached in .roots/ (git-ignored) and rebuilt only when its recipe changes:
#   - the base: a Debian 13 minbase root with Python 3.13 (debootstrap), imported with
#     `docker import` as tfxline-base:trixie;
#   - the lock's wheels, made inside the Debian 13 root (tools/debian13_root.sh: same Python
#     and glibc as the base) and handed to the build in kubeflow/wheels/ (installed with
#     --no-index: the build needs no network).
# Needs root (debootstrap, chroot) for the local base, and a running Docker engine.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO"
TAG="${1:-tfxline:local}"
LOCK=requirements/tfx-1.21-py313.lock.txt
BASE_TAG=tfxline-base:trixie
BASE_DIR="$REPO/.roots/image-base"
BASE_TAR="$REPO/.roots/image-base.tar"
# What the image's Python needs at run time: the interpreter and venv, CA certificates for
# cloud storage, and the C++ runtime that TensorFlow and pyfarmhash link.
BASE_PACKAGES="python3,python3-venv,ca-certificates,libstdc++6,libgomp1"
BASE_RECIPE="trixie $BASE_PACKAGES"
WHEELS=kubeflow/wheels
START=$SECONDS

if ! docker info >/dev/null 2>&1; then
  echo "error: no Docker engine answers; install and start one (apt-get install docker.io; dockerd &)" >&2
  exit 1
fi

local_base() {
  if [[ "$(id -u)" != 0 ]]; then
    echo "error: building the local base image needs root (debootstrap, chroot); run with sudo or set BASE_IMAGE" >&2
    exit 1
  fi
  local stamp="$BASE_TAR.recipe"
  if [[ ! -f "$BASE_TAR" || "$(cat "$stamp" 2>/dev/null)" != "$BASE_RECIPE" ]]; then
    # shellcheck source=tools/rootfs.sh
    source "$REPO/tools/rootfs.sh"
    build_rootfs "$BASE_DIR" trixie "$BASE_PACKAGES" "" "$BASE_RECIPE"
    rm -rf "$BASE_DIR"/var/cache/apt/archives/*.deb "$BASE_DIR"/var/lib/apt/lists/*
    tar -C "$BASE_DIR" -cf "$BASE_TAR.partial" .
    mv "$BASE_TAR.partial" "$BASE_TAR"
    echo "$BASE_RECIPE" > "$stamp"
    rm -rf "$BASE_DIR"
    docker image rm -f "$BASE_TAG" >/dev/null 2>&1 || true
  fi
  if ! docker image inspect "$BASE_TAG" >/dev/null 2>&1; then
    echo "importing $BASE_TAR as $BASE_TAG" >&2
    docker import --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
      --change 'CMD ["/bin/bash"]' "$BASE_TAR" "$BASE_TAG" >/dev/null
  fi
}

local_wheels() {
  local stamp="$WHEELS/.lock-sha256" want
  want="$(sha256sum "$LOCK" | cut -d' ' -f1)"
  if [[ "$(cat "$stamp" 2>/dev/null)" == "$want" ]]; then return; fi
  echo "making the lock's wheels in the Debian 13 root ($WHEELS)" >&2
  find "$WHEELS" -name '*.whl' -delete
  bash tools/debian13_root.sh python3 -m pip wheel --quiet --no-deps -r "$LOCK" -w "$WHEELS"
  echo "$want" > "$stamp"
}

if [[ -n "${BASE_IMAGE:-}" ]]; then
  base="$BASE_IMAGE"
  find "$WHEELS" -name '*.whl' -delete  # the registry's packages, as a user's build would
else
  local_base
  local_wheels
  base="$BASE_TAG"
fi

echo "building $TAG from $base (kubeflow/Dockerfile, TFX 1.21)" >&2
# The classic builder: no BuildKit/buildx needed; the context is what .dockerignore leaves.
mkdir -p .roots
log=.roots/image-build.log
DOCKER_BUILDKIT=0 docker build -f kubeflow/Dockerfile --build-arg BASE_IMAGE="$base" -t "$TAG" . \
  > "$log" 2>&1 || { tail -n 30 "$log" >&2; echo "error: docker build failed; the whole log is $log" >&2; exit 1; }
# The build stage's image (the venv and the wheels, ~4 GB) is not part of the result; drop it
# (only dangling images this Dockerfile's build stage labelled), or every build adds one.
docker image prune -f --filter label=tfxline.stage=build >/dev/null
size="$(docker image inspect -f '{{.Size}}' "$TAG")"
echo "image $TAG: $((size / 1000000)) MB, built in $((SECONDS - START)) s" >&2
