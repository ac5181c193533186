#!/usr/bin/env bash
# Run a command on the current TFX stack (TFX 1.21, Python 3.13) inside a Debian 13 root,
# with this source tree bind-mounted at /src:
#   tools/debian13_root.sh make test      # the README's test command, on TFX 1.21
#   tools/debian13_root.sh                # a shell in the root
# Why a root: TFX 1.17+ needs glibc >= 2.39 (manylinux_2_39 wheels); Debian 12 hosts have
# 2.36. Debian 13 has glibc 2.41 and Python 3.13. Needs root (debootstrap, mount, chroot).
#
# The root is built once into .roots/debian13 (git-ignored) and reused while this script's
# recipe is unchanged; the venv inside it (/opt/tfxline-venv) is set up by tools/bootstrap.sh
# from the TFX 1.21 lock, like .venv on the host.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DIR="${TFXLINE_ROOT_DIR:-$REPO/.roots/debian13}"
SUITE=trixie
# python3-dev and g++: pyfarmhash has no cp313 wheel and builds from source. make: the
# README's commands. zstd: bench/gpu_machine.sh's trace archive (tests/test_gpu_machine.py).
PACKAGES="python3,python3-venv,python3-pip,python3-dev,g++,make,ca-certificates,zstd"
# Installed with apt inside the new root (debootstrap's resolver does not take virtual
# packages such as chromium's dbus-session-bus): the run report's real-browser test.
APT_PACKAGES="chromium"
RECIPE="$SUITE $PACKAGES $APT_PACKAGES"
READY="$DIR/.tfxline-root"

if [[ "$(id -u)" != 0 ]]; then
  echo "error: the Debian 13 root needs root (debootstrap, mount, chroot); run it with sudo" >&2
  exit 1
fi

# shellcheck source=tools/rootfs.sh
source "$REPO/tools/rootfs.sh"

# One call at a time per root: a second waits here (they would share, and the first to
# finish would unmount, the mounts below).
mkdir -p "$(dirname "$DIR")"
exec 9>"$DIR.lock"
if ! flock -n 9; then
  echo "waiting for another tools/debian13_root.sh using $DIR" >&2
  flock 9
fi

if [[ ! -f "$READY" || "$(cat "$READY")" != "$RECIPE" ]]; then
  build_rootfs "$DIR" "$SUITE" "$PACKAGES" "$APT_PACKAGES" "$RECIPE"
fi

# Name resolution and the host's CA bundle (pip may reach the registry through a proxy whose
# CA only the host trusts).
cp /etc/resolv.conf "$DIR/etc/resolv.conf"
cp /etc/ssl/certs/ca-certificates.crt "$DIR/etc/ssl/certs/host-ca-certificates.crt"

MOUNTED=()
mount_once() {  # mount_once TARGET MOUNT-ARGS...
  local target="$1"; shift
  mkdir -p "$target"
  if ! mountpoint -q "$target"; then
    mount "$@" "$target"
    MOUNTED=("$target" "${MOUNTED[@]}")
  fi
}
cleanup() {
  local m
  for m in "${MOUNTED[@]}"; do umount "$m" 2>/dev/null || umount -l "$m" || true; done
}
trap cleanup EXIT
mount_once "$DIR/proc" -t proc proc
mount_once "$DIR/dev/shm" --bind /dev/shm   # Beam multi-processing
mount_once "$DIR/src" --bind "$REPO"

if [[ $# -eq 0 ]]; then set -- bash; fi
# A clean environment: only what the commands need, nothing from the host's Python setup.
chroot "$DIR" /usr/bin/env -i \
  PATH=/usr/local/bin:/usr/bin:/bin HOME=/root LANG=C.UTF-8 TERM="${TERM:-dumb}" \
  CI="${CI:-}" TFXLINE_VENV=/opt/tfxline-venv \
  PIP_CERT=/etc/ssl/certs/host-ca-certificates.crt PIP_DEFAULT_TIMEOUT=180 \
  PYTEST_ARGS="${PYTEST_ARGS:-}" TFXLINE_REQUIRE_GCS="${TFXLINE_REQUIRE_GCS:-}" \
  TFXLINE_REQUIRE_NAMESAKES="${TFXLINE_REQUIRE_NAMESAKES:-}" TFXLINE_BOTH_STACKS="${TFXLINE_BOTH_STACKS:-}" \
  /bin/bash -c 'cd /src && exec "$@"' bash "$@"
