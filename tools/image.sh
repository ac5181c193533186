#!/usr/bin/env bash
# Build the pipeline image (kubeflow/Dockerfile) on the current stack, TFX 1.21 / Python 3.13.
#   tools/image.sh [TAG]          (default tfxline:local; `make image`)
# Where a registry is reachable, `BASE_IMAGE=python:3.13-slim-trixie tools/image.sh` uses the
# official base and the registry's packages. Otherwise (as on these machines) it makes both
# locally, each cached in .roots/ (git-ignored) and rebuilt only when its recipe changes:
#   - the base: a Debian 13 minbase root with Python 3.13 (debootstrap), imported with
#     `docker import` as tfxline-base:trixie;
#   - the lock's wheels, made inside the Debian 13 root (tools/debian13_root.sh: same Python
#     and glibc as the base) into .roots/image-wheels/, and served to the build over HTTP on
#     the Docker bridge for the time of the build (WHEELS_URL; installed with --no-index).
#     Served, not copied into the build context: a copied wheel folder would be a layer of
#     its own (~0.9 GB more in the image, and twice that on disk while it builds).
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
WHEELS=.roots/image-wheels  # relative: the Debian 13 root sees the repository as its /src
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
  rm -rf "$WHEELS" && mkdir -p "$WHEELS"
  bash tools/debian13_root.sh python3 -m pip wheel --quiet --no-deps -r "$LOCK" -w "$WHEELS"
  if ! compgen -G "$WHEELS/*.whl" >/dev/null; then
    echo "error: pip wheel left no wheels in $WHEELS; see its output above" >&2
    exit 1
  fi
  echo "$want" > "$stamp"
}

# The default bridge's gateway address: IPAM's, or where the engine leaves it out of the IPAM
# config (Docker 20.10 from Debian 12, freshly started, 2026-11-23: Subnet only) the bridge
# interface's own IPv4 address.
bridge_gateway() {
  local gateway name
  gateway="$(docker network inspect bridge -f '{{range .IPAM.Config}}{{.Gateway}}{{end}}')"
  if [[ -z "$gateway" ]]; then
    name="$(docker network inspect bridge -f '{{index .Options "com.docker.network.bridge.name"}}')"
    gateway="$(python3 - "${name:-docker0}" <<'PY' 2>/dev/null || true
import fcntl, socket, struct, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
print(socket.inet_ntoa(fcntl.ioctl(s.fileno(), 0x8915, struct.pack("256s", sys.argv[1][:15].encode()))[20:24]))
PY
)"
  fi
  if [[ -z "$gateway" ]]; then
    echo "error: found no address of Docker's default bridge (docker network inspect bridge); start dockerd with its default bridge, or build with a registry: BASE_IMAGE=python:3.13-slim-trixie tools/image.sh" >&2
    exit 1
  fi
  echo "$gateway"
}

# Serve $WHEELS to the build's containers: a plain HTTP listing on the bridge's gateway
# address (reachable from build containers, not from outside this machine). A fixed port
# where it is free: WHEELS_URL is part of the install step's cache key, so the same URL lets
# a rebuild after a source change reuse the venv layer (the lock, copied, decides the rest).
serve_wheels() {
  local gateway port="${TFXLINE_WHEELS_PORT:-38765}"
  gateway="$(bridge_gateway)"
  if ! python3 -c "import socket, sys; socket.socket().bind(('$gateway', int(sys.argv[1])))" "$port" 2>/dev/null; then
    port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("", 0)); print(s.getsockname()[1])')"
  fi
  python3 -m http.server --bind "$gateway" --directory "$WHEELS" "$port" >/dev/null 2>&1 &
  SERVER_PID=$!
  trap 'kill "$SERVER_PID" 2>/dev/null || true' EXIT
  for _ in $(seq 50); do
    python3 -c "import urllib.request; urllib.request.urlopen('http://$gateway:$port/')" 2>/dev/null && break
    sleep 0.2
  done
  WHEELS_URL="http://$gateway:$port/"
}

WHEELS_URL=""  # the registry's packages, as a user's build would
if [[ -n "${BASE_IMAGE:-}" ]]; then
  base="$BASE_IMAGE"
else
  local_base
  local_wheels
  serve_wheels
  base="$BASE_TAG"
  # What the build's containers see: a firewall on the bridge would otherwise surface as pip's
  # "No matching distribution found" halfway through the build.
  if ! docker run --rm "$base" python3 -c "import urllib.request; urllib.request.urlopen('$WHEELS_URL', timeout=10)" >/dev/null 2>&1; then
    echo "error: containers cannot reach the wheel server at $WHEELS_URL (a firewall on the Docker bridge?); allow it, or build with a registry: BASE_IMAGE=python:3.13-slim-trixie tools/image.sh" >&2
    exit 1
  fi
fi

echo "building $TAG from $base (kubeflow/Dockerfile, TFX 1.21)" >&2
# The classic builder: no BuildKit/buildx needed; the context is what .dockerignore leaves.
mkdir -p .roots
log=.roots/image-build.log
# --force-rm: a failed step's container does not stay behind holding its layer.
DOCKER_BUILDKIT=0 docker build --force-rm -f kubeflow/Dockerfile --build-arg BASE_IMAGE="$base" \
  --build-arg WHEELS_URL="$WHEELS_URL" -t "$TAG" . > "$log" 2>&1 || {
  tail -n 30 "$log" >&2
  echo "error: docker build failed; the whole log is $log (free disk where Docker keeps images: $(df -h --output=avail "$(docker info -f '{{.DockerRootDir}}')" | tail -1 | tr -d ' '); the build needs ~5 GB)" >&2
  exit 1
}
# A rebuild leaves the previous image untagged (~3.7 GB each): drop those, only this
# Dockerfile's (label), and the build stage of the former two-stage Dockerfile.
docker image prune -f --filter label=tfxline.image=pipeline >/dev/null
docker image prune -f --filter label=tfxline.stage=build >/dev/null
size="$(docker image inspect -f '{{.Size}}' "$TAG")"
echo "image $TAG: $((size / 1000000)) MB, built in $((SECONDS - START)) s" >&2
