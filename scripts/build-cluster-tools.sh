#!/usr/bin/env bash
# Builds what scripts/cluster.sh runs that Debian does not ship, once, into a cache dir:
#   kubelet, kube-scheduler, kube-controller-manager  from k8s.io/kubernetes at the version pinned
#       in tests/cluster/tools/go.mod (the same as tests/operator/kube-tools/go.mod, whose
#       kube-apiserver and kubectl scripts/build-kube-tools.sh builds; both are linked here);
#   coredns  from github.com/coredns/coredns pinned in tests/cluster/coredns/go.mod (main.go
#       there keeps only the plugins the cluster uses);
#   pause    the sandbox container's process, tests/cluster/pause.c compiled statically;
#   prometheus  with --prometheus only (scripts/cluster-e2e.sh): github.com/prometheus/prometheus
#       pinned in tests/cluster/prometheus/go.mod, because Debian's lacks Kubernetes discovery.
# etcd is Debian's (etcd-server). Needs only the Go module proxy (the client's configured one).
#
# Usage: scripts/build-cluster-tools.sh [--print-dir] [--force] [--prometheus]
#   PPU_CLUSTER_TOOLS_DIR  where binaries go (default: $HOME/.cache/ppu-cluster-tools/<k8s>-<coredns>)
#   GO                     go binary to prefer (scripts/go-toolchain.sh installs one if needed)
# Prints the directory on its last line.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
K8SMOD="$ROOT/tests/cluster/tools"
DNSMOD="$ROOT/tests/cluster/coredns"
PROMMOD="$ROOT/tests/cluster/prometheus"
modver() { awk -v m="$2" '($1=="require" && $2==m) {print $3} ($1==m) {print $2}' "$1/go.mod" | head -1; }
VERSION="$(modver "$K8SMOD" k8s.io/kubernetes)"
APIVERSION="$(modver "$ROOT/tests/operator/kube-tools" k8s.io/kubernetes)"
DNSVERSION="$(modver "$DNSMOD" github.com/coredns/coredns)"
[[ -n "$VERSION" && -n "$DNSVERSION" ]] || { echo "build-cluster-tools: cannot read versions from $K8SMOD/go.mod or $DNSMOD/go.mod" >&2; exit 1; }
if [[ "$VERSION" != "$APIVERSION" ]]; then
  echo "build-cluster-tools: tests/cluster/tools/go.mod pins k8s.io/kubernetes $VERSION but tests/operator/kube-tools/go.mod pins $APIVERSION; they must agree" >&2
  exit 1
fi
OUT="${PPU_CLUSTER_TOOLS_DIR:-${HOME:-/root}/.cache/ppu-cluster-tools/$VERSION-coredns$DNSVERSION}"

PRINT_ONLY=0; FORCE=0; PROM=0
for a in "$@"; do
  case "$a" in
    --print-dir) PRINT_ONLY=1 ;;
    --force) FORCE=1 ;;
    --prometheus) PROM=1 ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    *) echo "build-cluster-tools: unknown flag '$a' (try --help)" >&2; exit 2 ;;
  esac
done
if [[ $PRINT_ONLY == 1 ]]; then echo "$OUT"; exit 0; fi

KUBE_TOOLS="$("$ROOT/scripts/build-kube-tools.sh" | tail -1)"
GO="$("$ROOT/scripts/go-toolchain.sh" | tail -1)"
[[ -x "$GO" ]] || { echo "build-cluster-tools: no Go toolchain (set GO=/path/to/go)" >&2; exit 1; }

mkdir -p "$OUT"
exec 9>"$OUT/.lock"
flock 9

major="${VERSION#v}"; major="${major%%.*}"
minor="${VERSION#v*.}"; minor="${minor%%.*}"
LDFLAGS="-s -w -X k8s.io/component-base/version.gitVersion=$VERSION \
 -X k8s.io/component-base/version.gitMajor=$major -X k8s.io/component-base/version.gitMinor=$minor \
 -X k8s.io/client-go/pkg/version.gitVersion=$VERSION \
 -X k8s.io/client-go/pkg/version.gitMajor=$major -X k8s.io/client-go/pkg/version.gitMinor=$minor"
export GOFLAGS=-mod=mod GOTOOLCHAIN=local CGO_ENABLED=0

build() {  # build NAME DIR PKG LDFLAGS
  local name="$1" dir="$2" pkg="$3" ldflags="$4" start
  if [[ $FORCE == 0 && -x "$OUT/$name" ]]; then return 0; fi
  start=$(date +%s)
  echo "build-cluster-tools: building $name into $OUT (first time takes many minutes)" >&2
  (cd "$dir" && nice "$GO" build -trimpath -ldflags "$ldflags" -o "$OUT/$name.tmp" "$pkg")
  mv "$OUT/$name.tmp" "$OUT/$name"
  echo "build-cluster-tools: $name built in $(( $(date +%s) - start )) s" >&2
}
for tool in kubelet kube-scheduler kube-controller-manager; do
  build "$tool" "$K8SMOD" "k8s.io/kubernetes/cmd/$tool" "$LDFLAGS"
done
build coredns "$DNSMOD" . "-s -w -X github.com/coredns/coredns/coremain.GitCommit=$DNSVERSION"
if [[ $PROM == 1 ]]; then
  PROMVERSION="$(modver "$PROMMOD" github.com/prometheus/prometheus)"   # v0.X.Y = Prometheus 2.X.Y
  build prometheus "$PROMMOD" github.com/prometheus/prometheus/cmd/prometheus \
    "-s -w -X github.com/prometheus/common/version.Version=2.${PROMVERSION#v0.}"
fi

if [[ $FORCE == 1 || ! -x "$OUT/pause" || "$ROOT/tests/cluster/pause.c" -nt "$OUT/pause" ]]; then
  cc -Os -static -Wall -Werror -o "$OUT/pause.tmp" "$ROOT/tests/cluster/pause.c"
  strip "$OUT/pause.tmp"
  mv "$OUT/pause.tmp" "$OUT/pause"
fi
for tool in kube-apiserver kubectl etcd; do ln -sfn "$KUBE_TOOLS/$tool" "$OUT/$tool"; done
echo "$OUT"
