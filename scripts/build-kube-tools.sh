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

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
MODDIR="$ROOT/tests/operator/kube-tools"
VERSION="$(awk '$1=="require" && $2=="k8s.io/kubernetes" {print $3}' "$MODDIR/go.mod")"
[[ -n "$VERSION" ]] || { echo "build-kube-tools: cannot read the k8s.io/kubernetes version from $MODDIR/go.mod" >&2; exit 1; }
OUT="${PPU_TOOLS_DIR:-${HOME:-/root}/.cache/ppu-kube-tools/$VERSION}"

PRINT_ONLY=0; FORCE=0
for a in "$@"; do
  case "$a" in
    --print-dir) PRINT_ONLY=1 ;;
    --force) FORCE=1 ;;
    -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
    *) echo "build-kube-tools: unknown flag '$a' (try --help)" >&2; exit 2 ;;
  esac
done
if [[ $PRINT_ONLY == 1 ]]; then echo "$OUT"; exit 0; fi

GO="$("$(dirname "${BASH_SOURCE[0]}")/go-toolchain.sh" | tail -1)"
[[ -x "$GO" ]] || { echo "build-kube-tools: no Go toolchain (set GO=/path/to/go)" >&2; exit 1; }

mkdir -p "$OUT"
# Serialise concurrent callers (two ctest fixtures, two engineers) on one lock.
exec 9>"$OUT/.lock"
flock 9

major="${VERSION#v}"; major="${major%%.*}"
minor="${VERSION#v*.}"; minor="${minor%%.*}"
LDFLAGS="-s -w -X k8s.io/component-base/version.gitVersion=$VERSION \
 -X k8s.io/component-base/version.gitMajor=$major -X k8s.io/component-base/version.gitMinor=$minor \
 -X k8s.io/client-go/pkg/version.gitVersion=$VERSION \
 -X k8s.io/client-go/pkg/version.gitMajor=$major -X k8s.io/client-go/pkg/version.gitMinor=$minor"

export GOFLAGS=-mod=mod GOTOOLCHAIN=local CGO_ENABLED=0
cd "$MODDIR"
for tool in kube-apiserver kubectl; do
  if [[ $FORCE == 0 && -x "$OUT/$tool" ]]; then continue; fi
  start=$(date +%s)
  echo "build-kube-tools: building $tool $VERSION into $OUT (first time takes many minutes)" >&2
  nice "$GO" build -trimpath -ldflags "$LDFLAGS" -o "$OUT/$tool.tmp" "k8s.io/kubernetes/cmd/$tool"
  mv "$OUT/$tool.tmp" "$OUT/$tool"
  echo "build-kube-tools: $tool built in $(( $(date +%s) - start )) s" >&2
done

ETCD="${PPU_ETCD:-$(command -v etcd || echo /usr/bin/etcd)}"
if [[ ! -x "$ETCD" ]]; then
  echo "build-kube-tools: etcd not found; install Debian's etcd-server (apt-get install etcd-server)" >&2
  exit 1
fi
ln -sf "$ETCD" "$OUT/etcd"
echo "$OUT"
