#!/usr/bin/env bash
# Builds shfmt, the shell formatter scripts/check-scripts.sh runs, from its official Go module
# (mvdan.cc/sh/v3) at a pinned version, once, into a cache dir, the way build-helm.sh builds
# helm. A lint tool, never product code. v3.12.0 is the newest release whose go.mod asks for no
# newer Go than the toolchain scripts/go-toolchain.sh pins (its `go` line is 1.23.0; v3.13
# needs 1.25, v3.14 1.26).
#
# Usage: scripts/build-shfmt.sh [--print-path] [--force]
#   PPU_SHFMT_VERSION  shfmt version (default below)
#   PPU_TOOLS_DIR      cache root (default: $HOME/.cache/ppu-tools); binary at <root>/shfmt-<version>/shfmt
#   GO                 go binary to prefer (scripts/go-toolchain.sh installs one if none is new enough)
# Prints the path of the shfmt binary on its last line. Needs the Go module proxy only to build.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

VERSION="${PPU_SHFMT_VERSION:-v3.12.0}"
OUT="$PPU_TOOLS_CACHE/shfmt-$VERSION"
BIN="$OUT/shfmt"

ppu_tool_flags build-shfmt 2,13 --print-path -- "$@"
if [[ $PRINT_ONLY == 1 ]]; then
  echo "$BIN"
  exit 0
fi

ppu_lock "$OUT/.lock"
if [[ $FORCE == 1 || ! -x "$BIN" ]]; then
  ppu_go build-shfmt
  start=$(date +%s)
  echo "build-shfmt: building shfmt $VERSION into $OUT" >&2
  ppu_go_install "$BIN" "mvdan.cc/sh/v3/cmd/shfmt@$VERSION" -ldflags "-s -w"
  echo "build-shfmt: built in $(($(date +%s) - start)) s" >&2
fi
got="$("$BIN" --version)"
[[ "$got" == "$VERSION" ]] || ppu_die build-shfmt "$BIN reports '$got', expected $VERSION (rerun with --force)"
echo "$BIN"
