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
# README's commands.
PACKAGES="python3,python3-venv,python3-pip,python3-dev,g++,make,ca-certificates"
# Installed with apt inside the new root (debootstrap's resolver does not take virtual
# packages such as chromium's dbus-session-bus): the run report's real-browser test.
APT_PACKAGES="chromium"
RECIPE="$SUITE $PACKAGES $APT_PACKAGES"
READY="$DIR/.tfxline-root"

if [[ "$(id -u)" != 0 ]]; then
  echo "error: the Debian 13 root needs root (debootstrap, mount, chroot); run it with sudo" >&2
  exit 1
fi

# Unmount whatever is mounted below a directory (deepest first) before it is deleted: a
# left-over bind mount of the source tree must never be removed with the root.
unmount_below() {
  local m
  for m in $(awk -v d="$1/" 'index($2, d) == 1 {print $2}' /proc/mounts | sort -r); do
    umount "$m" 2>/dev/null || umount -l "$m"
  done
  if awk -v d="$1/" 'index($2, d) == 1 {found=1} END {exit !found}' /proc/mounts; then
    echo "error: something is still mounted below $1; unmount it, then run again" >&2
    exit 1
  fi
}

build_root() {
  if ! command -v debootstrap >/dev/null 2>&1; then
    echo "installing debootstrap (apt)" >&2
    apt-get install -y -q debootstrap >/dev/null
  fi
  local partial="$DIR.partial" log
  log="$(dirname "$DIR")/debootstrap.log"
  unmount_below "$partial"
  rm -rf "$partial"
  mkdir -p "$(dirname "$DIR")"
  echo "building the Debian 13 root in $DIR (debootstrap $SUITE and apt, about 2-3 min)" >&2
  debootstrap --variant=minbase --include="$PACKAGES" "$SUITE" "$partial" > "$log" 2>&1 || {
    echo "error: debootstrap failed; see $log" >&2; exit 1; }
  cp /etc/resolv.conf "$partial/etc/resolv.conf"
  mount -t proc proc "$partial/proc"
  chroot "$partial" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -q --no-install-recommends $APT_PACKAGES >> "$log" 2>&1 || {
      umount "$partial/proc"; echo "error: apt-get install $APT_PACKAGES in the root failed; see $log" >&2; exit 1; }
  umount "$partial/proc"
  echo "$RECIPE" > "$partial/.tfxline-root"
  unmount_below "$DIR"
  rm -rf "$DIR"
  mv "$partial" "$DIR"   # nothing half-built is ever taken for a root
}

# One call at a time per root: a second waits here (they would share, and the first to
# finish would unmount, the mounts below).
mkdir -p "$(dirname "$DIR")"
exec 9>"$DIR.lock"
if ! flock -n 9; then
  echo "waiting for another tools/debian13_root.sh using $DIR" >&2
  flock 9
fi

if [[ ! -f "$READY" || "$(cat "$READY")" != "$RECIPE" ]]; then
  build_root
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
  PYTEST_ARGS="${PYTEST_ARGS:-}" \
  /bin/bash -c 'cd /src && exec "$@"' bash "$@"
