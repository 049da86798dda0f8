#!/usr/bin/env bash
# Builds what scripts/cluster.sh runs that Debian does not ship, once, into a cache dir:
#   kubelet, kube-scheduler, kube-controller-manager  from k8s.io/kubernetes at the version pinned
#       in tests/cluster/tools/go.mod (the same as tests/operator/kube-tools/go.mod, whose
#       kube-apiserver and kubectl scripts/build-kube-tools.sh builds; both are linked here);
#   coredns  from github.com/coredns/coredns pinned in tests/cluster/coredns/go.mod (main.go
#       there keeps only the plugins the cluster uses);
#   kube-network-policies  NetworkPolicy enforcement: the controller of Kubernetes SIG Network's
#       reference implementation, sigs.k8s.io/kube-network-policies pinned in
#       tests/cluster/netpol/go.mod, with main.go there (a kubeconfig instead of in-cluster config);
#   pause    the sandbox container's process, tests/cluster/pause.c compiled statically;
#   prometheus  with --prometheus only (tests/cluster/e2e): github.com/prometheus/prometheus
#       pinned in tests/cluster/prometheus/go.mod, because Debian's lacks Kubernetes discovery;
#   kueue       with --kueue only (scripts/cluster.sh kueue-up): the manager of sigs.k8s.io/kueue
#       pinned in tests/cluster/kueue/go.mod, and that module's CRDs (scripts/kueue-crds.sh)
#       linked as kueue-crds/ next to it. Kueue's go.mod needs Go >= 1.25.0, newer than
#       scripts/go-toolchain.sh's default minimum, so --kueue asks it for that.
# etcd is Debian's (etcd-server). Needs only the Go module proxy (the client's configured one).
#
# Usage: scripts/build-cluster-tools.sh [--print-dir] [--force] [--prometheus] [--kueue]
#   PPU_CLUSTER_TOOLS_DIR  where binaries go (default: $HOME/.cache/ppu-cluster-tools/<k8s>-<coredns>)
#   GO                     go binary to prefer (scripts/go-toolchain.sh installs one if needed)
# Prints the directory on its last line.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

K8SMOD="$PPU_REPO/tests/cluster/tools"
DNSMOD="$PPU_REPO/tests/cluster/coredns"
NETPOLMOD="$PPU_REPO/tests/cluster/netpol"
PROMMOD="$PPU_REPO/tests/cluster/prometheus"
KUEUEMOD="$PPU_REPO/tests/cluster/kueue"
VERSION="$(ppu_modver "$K8SMOD" k8s.io/kubernetes)"
APIVERSION="$(ppu_modver "$PPU_REPO/tests/operator/kube-tools" k8s.io/kubernetes)"
DNSVERSION="$(ppu_modver "$DNSMOD" github.com/coredns/coredns)"
[[ -n "$VERSION" && -n "$DNSVERSION" ]] \
  || ppu_die build-cluster-tools "cannot read versions from $K8SMOD/go.mod or $DNSMOD/go.mod"
if [[ "$VERSION" != "$APIVERSION" ]]; then
  ppu_die build-cluster-tools "tests/cluster/tools/go.mod pins k8s.io/kubernetes $VERSION but" \
    "tests/operator/kube-tools/go.mod pins $APIVERSION; they must agree"
fi
OUT="${PPU_CLUSTER_TOOLS_DIR:-${HOME:-/root}/.cache/ppu-cluster-tools/$VERSION-coredns$DNSVERSION}"

PROM=0
KUEUE=0
ppu_tool_flags build-cluster-tools 2,20 --print-dir --prometheus=PROM --kueue=KUEUE -- "$@"
if [[ $PRINT_ONLY == 1 ]]; then
  echo "$OUT"
  exit 0
fi

KUBE_TOOLS="$("$PPU_REPO/scripts/build-kube-tools.sh" | tail -1)"
if [[ $KUEUE == 1 ]]; then
  # Kueue's go line; the release fetched when the machine has no Go that new.
  export PPU_GO_MIN="${PPU_GO_MIN:-1.25.0}" PPU_GO_PIN="${PPU_GO_PIN:-1.25.0}"
fi
ppu_go build-cluster-tools
ppu_lock "$OUT/.lock"

LDFLAGS="$(ppu_kube_ldflags "$VERSION")"
export GOFLAGS=-mod=mod GOTOOLCHAIN=local CGO_ENABLED=0

build() { # build NAME DIR PKG LDFLAGS
  local name="$1" dir="$2" pkg="$3" ldflags="$4" start
  if [[ $FORCE == 0 && -x "$OUT/$name" ]]; then return 0; fi
  start=$(date +%s)
  echo "build-cluster-tools: building $name into $OUT (first time takes many minutes)" >&2
  (cd "$dir" && nice "$GO" build -trimpath -ldflags "$ldflags" -o "$OUT/$name.tmp" "$pkg")
  mv "$OUT/$name.tmp" "$OUT/$name"
  echo "build-cluster-tools: $name built in $(($(date +%s) - start)) s" >&2
}
for tool in kubelet kube-scheduler kube-controller-manager; do
  build "$tool" "$K8SMOD" "k8s.io/kubernetes/cmd/$tool" "$LDFLAGS"
done
build coredns "$DNSMOD" . "-s -w -X github.com/coredns/coredns/coremain.GitCommit=$DNSVERSION"
# Rebuilt when its pin or its main.go changes (the binary is named for neither).
NETPOLSTAMP="$(cat "$NETPOLMOD/go.mod" "$NETPOLMOD/main.go" | md5sum | cut -c1-12)"
if [[ "$(cat "$OUT/kube-network-policies.stamp" 2>/dev/null)" != "$NETPOLSTAMP" ]]; then rm -f "$OUT/kube-network-policies"; fi
build kube-network-policies "$NETPOLMOD" . "-s -w"
echo "$NETPOLSTAMP" >"$OUT/kube-network-policies.stamp"
if [[ $PROM == 1 ]]; then
  PROMVERSION="$(ppu_modver "$PROMMOD" github.com/prometheus/prometheus)" # v0.X.Y = Prometheus 2.X.Y
  build prometheus "$PROMMOD" github.com/prometheus/prometheus/cmd/prometheus \
    "-s -w -X github.com/prometheus/common/version.Version=2.${PROMVERSION#v0.}"
fi
if [[ $KUEUE == 1 ]]; then
  KUEUEVERSION="$(ppu_modver "$KUEUEMOD" sigs.k8s.io/kueue)"
  build kueue "$KUEUEMOD" sigs.k8s.io/kueue/cmd/kueue \
    "-s -w -X sigs.k8s.io/kueue/pkg/version.GitVersion=$KUEUEVERSION"
  # Its CRDs beside it (scripts/kueue-crds.sh, the same pinned version).
  [[ -L "$OUT/kueue-crds" ]] || rm -rf "$OUT/kueue-crds" # a copy made by an older version of this script
  ln -sfn "$(bash "$PPU_REPO/scripts/kueue-crds.sh" | tail -1)" "$OUT/kueue-crds"
fi

if [[ $FORCE == 1 || ! -x "$OUT/pause" || "$PPU_REPO/tests/cluster/pause.c" -nt "$OUT/pause" ]]; then
  cc -Os -static -Wall -Werror -o "$OUT/pause.tmp" "$PPU_REPO/tests/cluster/pause.c"
  strip "$OUT/pause.tmp"
  mv "$OUT/pause.tmp" "$OUT/pause"
fi
for tool in kube-apiserver kubectl etcd; do ln -sfn "$KUBE_TOOLS/$tool" "$OUT/$tool"; done
echo "$OUT"
