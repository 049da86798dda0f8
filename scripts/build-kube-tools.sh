#!/usr/bin/env bash
# Builds the Kubernetes test tools (kube-apiserver, kubectl) from the official k8s.io/kubernetes
# Go module at the version pinned in tests/operator/kube-tools/go.mod, once, into a cache dir.
# etcd comes from Debian's etcd-server (/usr/bin/etcd). Needs only the Go module proxy.
#
# Usage: scripts/build-kube-tools.sh [--print-dir] [--force]
#   PPU_TOOLS_DIR   where binaries go (default: $HOME/.cache/ppu-kube-tools/<version>)
#   GO              go binary to prefer (scripts/go-toolchain.sh installs one if none is new enough)
# Prints the directory that holds kube-apiserver, kubectl and etcd on its last line.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

MODDIR="$PPU_REPO/tests/operator/kube-tools"
VERSION="$(ppu_modver "$MODDIR" k8s.io/kubernetes)"
[[ -n "$VERSION" ]] || ppu_die build-kube-tools "cannot read the k8s.io/kubernetes version from $MODDIR/go.mod"
OUT="${PPU_TOOLS_DIR:-${HOME:-/root}/.cache/ppu-kube-tools/$VERSION}"

ppu_tool_flags build-kube-tools 2,9 --print-dir -- "$@"
if [[ $PRINT_ONLY == 1 ]]; then
  echo "$OUT"
  exit 0
fi

ppu_go build-kube-tools
ppu_lock "$OUT/.lock"

LDFLAGS="$(ppu_kube_ldflags "$VERSION")"
export GOFLAGS=-mod=mod GOTOOLCHAIN=local CGO_ENABLED=0
cd "$MODDIR"
for tool in kube-apiserver kubectl; do
  if [[ $FORCE == 0 && -x "$OUT/$tool" ]]; then continue; fi
  start=$(date +%s)
  echo "build-kube-tools: building $tool $VERSION into $OUT (first time takes many minutes)" >&2
  nice "$GO" build -trimpath -ldflags "$LDFLAGS" -o "$OUT/$tool.tmp" "k8s.io/kubernetes/cmd/$tool"
  mv "$OUT/$tool.tmp" "$OUT/$tool"
  echo "build-kube-tools: $tool built in $(($(date +%s) - start)) s" >&2
done

ETCD="${PPU_ETCD:-$(command -v etcd || echo /usr/bin/etcd)}"
[[ -x "$ETCD" ]] || ppu_die build-kube-tools "etcd not found; install Debian's etcd-server (apt-get install etcd-server)"
ln -sf "$ETCD" "$OUT/etcd"
echo "$OUT"
