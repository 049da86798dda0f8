#!/usr/bin/env bash
# Builds helm from its official Go module (helm.sh/helm/v3, no replace directives, so a plain
# `go install` works) at a pinned version, once, into a cache dir. helm is a test/packaging
# tool, never product code; pinning keeps chart tests reproducible.
#
# Usage: scripts/build-helm.sh [--print-path] [--force]
#   PPU_HELM_VERSION  helm version (default below)
#   PPU_TOOLS_DIR     cache root (default: $HOME/.cache/ppu-tools); binary at <root>/helm-<version>/helm
#   GO                go binary to prefer (scripts/go-toolchain.sh installs one if none is new enough)
# Prints the path of the helm binary on its last line.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

VERSION="${PPU_HELM_VERSION:-v3.18.6}"
OUT="$PPU_TOOLS_CACHE/helm-$VERSION"
BIN="$OUT/helm"

ppu_tool_flags build-helm 2,11 --print-path -- "$@"
if [[ $PRINT_ONLY == 1 ]]; then
  echo "$BIN"
  exit 0
fi

ppu_go build-helm
ppu_lock "$OUT/.lock"

if [[ $FORCE == 1 || ! -x "$BIN" ]]; then
  start=$(date +%s)
  echo "build-helm: building helm $VERSION into $OUT (first time takes minutes)" >&2
  # helm's default Kubernetes version for `helm template` / `lint` (Capabilities.KubeVersion) is
  # set by its Makefile from the client-go it builds with; do the same, or it reports v1.20.
  gomod="$(GOFLAGS=-mod=mod GOTOOLCHAIN=local "$GO" mod download -json "helm.sh/helm/v3@$VERSION" \
    | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",*$/\1/p')"
  kminor="$(awk '$1=="k8s.io/client-go" {split($2, v, "."); print v[2]}' "$gomod")"
  [[ -n "$kminor" ]] || ppu_die build-helm "cannot read k8s.io/client-go from $gomod"
  KFLAGS=""
  for pkg in helm.sh/helm/v3/pkg/chartutil helm.sh/helm/v3/pkg/lint/rules; do
    KFLAGS+=" -X $pkg.k8sVersionMajor=1 -X $pkg.k8sVersionMinor=$kminor"
  done
  ppu_go_install "$BIN" "helm.sh/helm/v3/cmd/helm@$VERSION" \
    -ldflags "-s -w -X helm.sh/helm/v3/internal/version.version=$VERSION$KFLAGS"
  echo "build-helm: built in $(($(date +%s) - start)) s" >&2
fi
"$BIN" version --short >/dev/null
echo "$BIN"
