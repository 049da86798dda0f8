#!/usr/bin/env bash
# Builds the PPU image from the Dockerfile with Debian's podman (buildah 1.28) and no registry:
# the base is scripts/build-base-image.sh's debootstrap import, and --pull=never guarantees that
# nothing is fetched from a container registry. Prints the build time and the image size.
#
# Usage: scripts/build-image.sh [--tag NAME] [--variant cpu|cuda] [--save FILE.tar] [--no-cache]
#   --tag      image name (default localhost/ppu:dev)
#   --save     also write the image as a docker-archive tarball (for `ctr images import`)
# Rlimits: podman's defaults (nofile 1048576) are above what root may set in some VMs
# ("error setting rlimit type 7: operation not permitted"); the build asks for values within the
# caller's hard limits instead.
# Network: RUN steps use the host's network (--network=host): podman's default bridge
# would leave a cni-podman0 interface and CNI iptables chains on the host after the build.
# Prints the image name on its last line.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$ROOT/scripts/lib.sh"
TAG=localhost/ppu:dev
VARIANT=cpu
SAVE=""
EXTRA=()
while (($#)); do
  case "$1" in
    --tag)
      TAG="${2:?--tag needs a value}"
      shift 2
      ;;
    --variant)
      VARIANT="${2:?--variant needs cpu or cuda}"
      shift 2
      ;;
    --save)
      SAVE="${2:?--save needs a file}"
      shift 2
      ;;
    --no-cache)
      EXTRA+=(--no-cache)
      shift
      ;;
    -h | --help)
      sed -n '2,14p' "$0"
      exit 0
      ;;
    *)
      echo "build-image: unknown flag '$1' (try --help)" >&2
      exit 2
      ;;
  esac
done
case "$VARIANT" in cpu | cuda) ;; *)
  echo "build-image: --variant must be cpu or cuda, got '$VARIANT'" >&2
  exit 2
  ;;
esac
command -v podman >/dev/null || {
  echo "build-image: podman not found (bash scripts/cluster.sh deps)" >&2
  exit 1
}

NOFILE="$(ppu_rlimit -n 16384)"
NPROC="$(ppu_rlimit -u 16384)"

BASE="$("$ROOT/scripts/build-base-image.sh" | tail -1)"
start=$(date +%s)
nice podman build --pull=never --layers --format docker --network=host \
  --ulimit "nofile=$NOFILE:$NOFILE" --ulimit "nproc=$NPROC:$NPROC" \
  --build-arg "DEBIAN=$BASE" --build-arg "VARIANT=$VARIANT" \
  "${EXTRA[@]}" -t "$TAG" -f "$ROOT/Dockerfile" "$ROOT" >&2
secs=$(($(date +%s) - start))
size="$(podman image inspect --format '{{.Size}}' "$TAG")"
echo "build-image: $TAG built in $secs s; size $((size / 1000000)) MB (base $(($(podman image inspect --format '{{.Size}}' "$BASE") / 1000000)) MB)" >&2
if [[ -n "$SAVE" ]]; then
  rm -f "$SAVE"
  podman save --format docker-archive -o "$SAVE" "$TAG"
fi
echo "$TAG"
