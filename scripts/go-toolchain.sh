#!/usr/bin/env bash
# Prints the path of a Go toolchain at least as new as the one the pinned test tools need
# (PPU_GO_MIN, default below: the newest `go` directive among them), installing one if the
# machine has none: a Go already on the machine is used when it is new enough; otherwise
# Debian's golang-go is installed as a bootstrap and the pinned release is fetched as the
# golang.org/toolchain module — the same module Go's own GOTOOLCHAIN switching downloads —
# through the Go client's configured module proxy, into a cache dir.
#
# Usage: scripts/go-toolchain.sh            # prints the go binary on its last line
#   GO              a go binary to try first
#   PPU_TOOLS_DIR   cache root (default: $HOME/.cache/ppu-tools); toolchain at <root>/go<ver>/
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# helm v3.18 needs go >= 1.24.0; the kube-tools module needs 1.22, shfmt v3.12.0 1.23. The pin
# is what we fetch. Kueue (tests/cluster/kueue, only built on request) needs 1.25.0:
# build-cluster-tools.sh --kueue sets PPU_GO_MIN and PPU_GO_PIN for that.
MIN="${PPU_GO_MIN:-1.24.0}"
PIN="${PPU_GO_PIN:-1.24.6}"
CACHE="$PPU_TOOLS_CACHE/go$PIN"

# 0 when version $1 >= $2 (dotted numbers).
version_ge() { [[ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -1)" == "$2" ]]; }
go_version() { "$1" env GOVERSION 2>/dev/null | sed 's/^go//; s/[^0-9.].*$//'; }

for candidate in "${GO:-}" "$(command -v go || true)" /usr/local/go/bin/go "$CACHE/bin/go"; do
  [[ -n "$candidate" && -x "$candidate" ]] || continue
  v="$(go_version "$candidate")"
  if [[ -n "$v" ]] && version_ge "$v" "$MIN"; then
    echo "$candidate"
    exit 0
  fi
done

ppu_lock "$CACHE.lock"
if [[ ! -x "$CACHE/bin/go" ]]; then
  boot="$(command -v go || true)"
  [[ -x /usr/lib/go/bin/go ]] && boot=/usr/lib/go/bin/go
  if [[ -z "$boot" ]]; then
    echo "go-toolchain: no Go on this machine; installing Debian's golang-go to bootstrap" >&2
    ppu_apt_install go-toolchain golang-go
    boot=/usr/lib/go/bin/go
  fi
  case "$(uname -m)" in x86_64) arch=amd64 ;; aarch64) arch=arm64 ;; *) arch="$(uname -m)" ;; esac
  module="golang.org/toolchain@v0.0.1-go$PIN.linux-$arch"
  echo "go-toolchain: fetching go$PIN ($module) with $("$boot" version)" >&2
  scratch="$(mktemp -d)"
  trap 'chmod -R u+w "$scratch" 2>/dev/null; rm -rf "$scratch"' EXIT
  # A private module cache: the files are copied out, and the bootstrap's cache stays clean.
  dir="$(cd "$scratch" && GOPATH="$scratch/gopath" GOFLAGS=-mod=mod GO111MODULE=on "$boot" mod download -json "$module" \
    | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",*$/\1/p')"
  [[ -d "$dir" ]] || ppu_die go-toolchain "download of $module failed"
  rm -rf "$CACHE.tmp"
  cp -r "$dir" "$CACHE.tmp"
  chmod -R u+w "$CACHE.tmp"
  # Module zips carry no file modes; Go's own toolchain switch restores these the same way.
  chmod +x "$CACHE.tmp"/bin/* "$CACHE.tmp"/pkg/tool/*/*
  mv "$CACHE.tmp" "$CACHE"
fi
v="$(go_version "$CACHE/bin/go")"
version_ge "$v" "$MIN" || ppu_die go-toolchain "$CACHE/bin/go is $v, need >= $MIN"
echo "$CACHE/bin/go"
