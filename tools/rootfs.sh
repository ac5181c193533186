# Shared by tools/debian13_root.sh and tools/image.sh (source it): build a Debian root
# file system with debootstrap, into DIR.partial, renamed to DIR only when complete.
#   build_rootfs DIR SUITE DEBOOTSTRAP_PACKAGES APT_PACKAGES RECIPE
# DEBOOTSTRAP_PACKAGES is comma-separated (debootstrap --include); APT_PACKAGES is
# space-separated and installed with apt inside the new root (debootstrap's resolver does
# not take virtual packages such as chromium's dbus-session-bus); may be empty. RECIPE is
# written to DIR/.tfxline-root, so a caller can tell a root built from another recipe.

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

build_rootfs() {
  local dir="$1" suite="$2" packages="$3" apt_packages="$4" recipe="$5"
  local partial="$dir.partial" log
  if ! command -v debootstrap >/dev/null 2>&1; then
    echo "installing debootstrap (apt)" >&2
    apt-get install -y -q debootstrap >/dev/null
  fi
  log="$(dirname "$dir")/$(basename "$dir").debootstrap.log"
  unmount_below "$partial"
  rm -rf "$partial"
  mkdir -p "$(dirname "$dir")"
  echo "building a Debian $suite root in $dir (debootstrap, about 2-3 min)" >&2
  debootstrap --variant=minbase --include="$packages" "$suite" "$partial" > "$log" 2>&1 || {
    echo "error: debootstrap failed; see $log" >&2; exit 1; }
  if [[ -n "$apt_packages" ]]; then
    cp /etc/resolv.conf "$partial/etc/resolv.conf"
    mount -t proc proc "$partial/proc"
    # shellcheck disable=SC2086  # a list of package names
    chroot "$partial" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive \
      apt-get install -y -q --no-install-recommends $apt_packages >> "$log" 2>&1 || {
        umount "$partial/proc"; echo "error: apt-get install $apt_packages in the root failed; see $log" >&2; exit 1; }
    umount "$partial/proc"
  fi
  rm -f "$partial"/var/cache/apt/archives/*.deb  # ~0.4 GB of downloaded packages, installed already
  echo "$recipe" > "$partial/.tfxline-root"
  unmount_below "$dir"
  rm -rf "$dir"
  mv "$partial" "$dir"   # nothing half-built is ever taken for a root
}
