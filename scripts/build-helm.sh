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

VERSION="${PPU_HELM_VERSION:-v3.18.6}"
ROOT_CACHE="${PPU_TOOLS_DIR:-${HOME:-/root}/.cache/ppu-tools}"
OUT="$ROOT_CACHE/helm-$VERSION"
BIN="$OUT/helm"

PRINT_ONLY=0; FORCE=0
for a in "$@"; do
  case "$a" in
    --print-path) PRINT_ONLY=1 ;;
    --force) FORCE=1 ;;
    -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
    *) echo "build-helm: unknown flag '$a' (try --help)" >&2; exit 2 ;;
  esac
done
if [[ $PRINT_ONLY == 1 ]]; then echo "$BIN"; exit 0; fi

GO="$("$(dirname "${BASH_SOURCE[0]}")/go-toolchain.sh" | tail -1)"
[[ -x "$GO" ]] || { echo "build-helm: no Go toolchain (set GO=/path/to/go)" >&2; exit 1; }

mkdir -p "$OUT"
# Serialise concurrent callers (parallel ctest fixtures) so the module builds once.
exec 9>"$OUT/.lock"
flock 9

if [[ $FORCE == 1 || ! -x "$BIN" ]]; then
  start=$(date +%s)
  echo "build-helm: building helm $VERSION into $OUT (first time takes minutes)" >&2
  # helm's default Kubernetes version for `helm template` / `lint` (Capabilities.KubeVersion) is
  # set by its Makefile from the client-go it builds with; do the same, or it reports v1.20.
  gomod="$(GOFLAGS=-mod=mod GOTOOLCHAIN=local "$GO" mod download -json "helm.sh/helm/v3@$VERSION" \
           | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",*$/\1/p')"
  kminor="$(awk '$1=="k8s.io/client-go" {split($2, v, "."); print v[2]}' "$gomod")"
  [[ -n "$kminor" ]] || { echo "build-helm: cannot read k8s.io/client-go from $gomod" >&2; exit 1; }
  KFLAGS=""
  for pkg in helm.sh/helm/v3/pkg/chartutil helm.sh/helm/v3/pkg/lint/rules; do
    KFLAGS+=" -X $pkg.k8sVersionMajor=1 -X $pkg.k8sVersionMinor=$kminor"
  done
  tmp="$(mktemp -d "$OUT/gobin.XXXXXX")"
  # GOFLAGS=-mod=mod: ignore a go.work/vendor of the caller; CGO off: a static test binary.
  GOBIN="$tmp" GOFLAGS=-mod=mod GOTOOLCHAIN=local CGO_ENABLED=0 \
    nice "$GO" install -trimpath -ldflags "-s -w -X helm.sh/helm/v3/internal/version.version=$VERSION$KFLAGS" \
      "helm.sh/helm/v3/cmd/helm@$VERSION"
  mv "$tmp/helm" "$BIN"
  rm -rf "$tmp"
  echo "build-helm: built in $(( $(date +%s) - start )) s" >&2
fi
"$BIN" version --short >/dev/null
echo "$BIN"
