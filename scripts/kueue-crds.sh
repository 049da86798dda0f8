#!/usr/bin/env bash
# Fetches Kueue's CRDs (config/components/crd/bases of sigs.k8s.io/kueue at the version pinned in
# tests/cluster/kueue/go.mod) from the Go module proxy, once, into a cache dir: the chart test
# validates the Kueue samples against them, and `cluster.sh kueue-up` installs them. Downloads
# the module only (nothing is built), so any Go works.
#
# Usage: scripts/kueue-crds.sh [--print-dir] [--force]
#   PPU_TOOLS_DIR  cache root (default: $HOME/.cache/ppu-tools); CRDs in <root>/kueue-crds-<version>/
#   GO             go binary to prefer (scripts/go-toolchain.sh installs one if needed)
# Prints the directory on its last line.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

VERSION="$(ppu_modver "$PPU_REPO/tests/cluster/kueue" sigs.k8s.io/kueue)"
[[ -n "$VERSION" ]] || ppu_die kueue-crds "tests/cluster/kueue/go.mod requires no sigs.k8s.io/kueue"
OUT="$PPU_TOOLS_CACHE/kueue-crds-$VERSION"

ppu_tool_flags kueue-crds 2,10 --print-dir -- "$@"
if [[ $PRINT_ONLY == 1 ]]; then
  echo "$OUT"
  exit 0
fi

if [[ $FORCE == 1 || ! -f "$OUT/.complete" ]]; then
  ppu_go kueue-crds
  ppu_lock "$OUT.lock"
  # Outside any module of ours: a plain download of that one module.
  moddir="$(cd /tmp && GOFLAGS=-mod=mod GOTOOLCHAIN=local "$GO" mod download -json "sigs.k8s.io/kueue@$VERSION" \
    | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",*$/\1/p')"
  [[ -d "$moddir/config/components/crd/bases" ]] \
    || ppu_die kueue-crds "no config/components/crd/bases in sigs.k8s.io/kueue@$VERSION (module dir '$moddir')"
  rm -rf "$OUT" "$OUT.tmp"
  mkdir -p "$OUT.tmp"
  cp "$moddir"/config/components/crd/bases/*.yaml "$OUT.tmp/"
  chmod 0644 "$OUT.tmp"/*.yaml # the module cache's files are read-only
  echo "$VERSION" >"$OUT.tmp/.complete"
  mv "$OUT.tmp" "$OUT"
fi
echo "$OUT"
