#!/usr/bin/env bash
# Makes the Debian bookworm base image the Dockerfile builds FROM, without any container
# registry: debootstrap (minbase) from the Debian archive this machine's apt is configured with,
# brought up to date with the same apt sources (security updates included, so the build stage's
# apt-get install never needs a newer libc than the runtime stage has), cleaned, and imported
# into local container storage with `podman import`.
#
# Usage: scripts/build-base-image.sh [--force] [--print-name]
#   PPU_BASE_IMAGE   image name (default localhost/ppu-debian:bookworm)
#   PPU_BASE_CACHE   rootfs tarball cache (default $HOME/.cache/ppu-base-image/bookworm.tar)
#   PPU_DEBIAN_MIRROR  archive URL for debootstrap (default: the first bookworm URI in apt's sources)
# Prints the image name on its last line. Needs root, debootstrap and podman
# (scripts/cluster.sh deps installs them).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

NAME="${PPU_BASE_IMAGE:-localhost/ppu-debian:bookworm}"
CACHE="${PPU_BASE_CACHE:-${HOME:-/root}/.cache/ppu-base-image/bookworm.tar}"
ppu_tool_flags build-base-image 2,14 --print-name -- "$@"
if [[ $PRINT_ONLY == 1 ]]; then
  echo "$NAME"
  exit 0
fi
for t in debootstrap podman; do
  command -v "$t" >/dev/null || ppu_die build-base-image "$t not found (bash scripts/cluster.sh deps)"
done
if [[ $FORCE == 0 ]] && podman image exists "$NAME"; then
  echo "$NAME"
  exit 0
fi

# The archive apt already uses: deb822 .sources (URIs:) or one-line sources.list (deb URL bookworm).
mirror() {
  local f
  for f in /etc/apt/sources.list.d/*.sources; do
    [[ -r "$f" ]] || continue
    awk 'BEGIN{RS=""} /Suites:[^\n]*bookworm( |\n|$)/ && !/bookworm-security/ {
           if (match($0, /URIs:[ \t]*[^ \t\n]+/)) { u=substr($0, RSTART, RLENGTH); sub(/URIs:[ \t]*/, "", u); print u; exit } }' "$f"
  done
  awk '$1=="deb" && $3=="bookworm" {print $2; exit}' /etc/apt/sources.list 2>/dev/null || true
}
MIRROR="${PPU_DEBIAN_MIRROR:-$(mirror | head -1)}"
[[ -n "$MIRROR" ]] || ppu_die build-base-image "no bookworm archive in /etc/apt/sources*; set PPU_DEBIAN_MIRROR"

ppu_lock "$CACHE.lock"
if [[ $FORCE == 1 || ! -s "$CACHE" ]]; then
  start=$(date +%s)
  rootfs="$(mktemp -d /var/tmp/ppu-rootfs.XXXXXX)"
  cleanup() {
    for m in proc dev/pts dev; do mountpoint -q "$rootfs/$m" && umount -l "$rootfs/$m"; done
    rm -rf --one-file-system "$rootfs"
  }
  trap cleanup EXIT
  echo "build-base-image: debootstrap bookworm (minbase) into $rootfs" >&2
  debootstrap --variant=minbase --components=main bookworm "$rootfs" "$MIRROR" >&2
  # The same apt sources as this machine (bookworm, -updates, -security), then upgrade.
  rm -f "$rootfs/etc/apt/sources.list"
  if compgen -G '/etc/apt/sources.list.d/*.sources' >/dev/null; then
    for f in /etc/apt/sources.list.d/*.sources; do
      grep -q 'bookworm' "$f" && cp "$f" "$rootfs/etc/apt/sources.list.d/"
    done
  fi
  [[ -f /etc/apt/sources.list ]] && grep -q '^deb .*bookworm' /etc/apt/sources.list && cp /etc/apt/sources.list "$rootfs/etc/apt/"
  mount -t proc proc "$rootfs/proc"
  mount --bind /dev "$rootfs/dev"
  chroot "$rootfs" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive \
    sh -c 'apt-get update -qq && apt-get dist-upgrade -y -qq && apt-get clean' >&2
  umount "$rootfs/dev" "$rootfs/proc"
  rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/*.bin "$rootfs"/var/log/*.log \
    "$rootfs"/tmp/* "$rootfs"/var/tmp/*
  : >"$rootfs/etc/machine-id"
  tar --numeric-owner --xattrs -C "$rootfs" -cf "$CACHE.tmp" .
  mv "$CACHE.tmp" "$CACHE"
  echo "build-base-image: rootfs made in $(($(date +%s) - start)) s ($(du -h "$CACHE" | cut -f1))" >&2
fi
podman import --change 'CMD ["/bin/bash"]' --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --message "Debian bookworm minbase (debootstrap), scripts/build-base-image.sh" "$CACHE" "$NAME" >&2
echo "$NAME"
