#!/usr/bin/env bash
# Builds the S3-compatible server the object-store tests run against: SeaweedFS's `weed`, from
# the pseudo-version pinned in tests/objectstore/seaweedfs/go.mod (a wrapper module: SeaweedFS's
# own go.mod has a replace directive, which holds only in the main module), once, into a cache
# dir. Needs only the Go module proxy and a Go at least as new as SeaweedFS's go directive
# (scripts/go-toolchain.sh installs one when the machine's is older).
#
# Usage: scripts/build-seaweedfs.sh [--print-dir] [--force]
#   PPU_TOOLS_DIR   where `weed` goes (default: $HOME/.cache/ppu-seaweedfs/<version>)
#   GO              go binary to prefer
# Prints the directory that holds `weed` on its last line.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

MODDIR="$PPU_REPO/tests/objectstore/seaweedfs"
MODULE=github.com/seaweedfs/seaweedfs
VERSION="$(ppu_modver "$MODDIR" "$MODULE")"
[[ -n "$VERSION" ]] || ppu_die build-seaweedfs "cannot read the $MODULE version from $MODDIR/go.mod"
OUT="${PPU_TOOLS_DIR:-${HOME:-/root}/.cache/ppu-seaweedfs/$VERSION}"

ppu_tool_flags build-seaweedfs 2,11 --print-dir -- "$@"
if [[ $PRINT_ONLY == 1 ]]; then
  echo "$OUT"
  exit 0
fi

GO_MIN="$(sed -n 's/^go \([0-9.]*\)$/\1/p' "$MODDIR/go.mod")"
export PPU_GO_MIN="$GO_MIN" PPU_GO_PIN="${PPU_GO_PIN:-1.27.3}" # the pin: fetched only where the machine's Go is older than GO_MIN
ppu_go build-seaweedfs
ppu_lock "$OUT/.lock"
if [[ $FORCE == 1 || ! -x "$OUT/weed" ]]; then
  start=$(date +%s)
  echo "build-seaweedfs: building weed $VERSION into $OUT (the first time takes minutes)" >&2
  export GOFLAGS=-mod=mod GOTOOLCHAIN=local CGO_ENABLED=0
  (cd "$MODDIR" && nice "$GO" build -trimpath -ldflags "-s -w" -o "$OUT/weed.tmp" "$MODULE/weed")
  mv "$OUT/weed.tmp" "$OUT/weed"
  echo "build-seaweedfs: weed built in $(($(date +%s) - start)) s" >&2
fi
echo "$OUT"
