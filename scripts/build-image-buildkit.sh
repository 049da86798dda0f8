#!/usr/bin/env bash
# Builds the PPU image from the same Dockerfile with Docker BuildKit, without any registry, and
# checks it. Debian's docker.io (Engine 20.10, BuildKit built in) runs as a private dockerd for
# the length of the build only: its own socket, data root and exec root in one state folder, no
# docker0 bridge and no iptables rules. The debootstrap base (scripts/build-base-image.sh's
# cached rootfs tarball) is `docker import`ed into it, `DOCKER_BUILDKIT=1 docker build` builds
# the Dockerfile FROM it (--network=host: the build stage's apt reaches the Debian archive), and
# the image is run the way a rank pod runs (uid 65532, read-only root, no network, no
# capabilities). On exit dockerd is stopped and its state removed: no process, mount or image
# stays behind.
#
# Usage: scripts/build-image-buildkit.sh [--variant cpu|cuda] [--no-cache]
#   PPU_BUILDKIT_STATE  state folder (default: a new /var/tmp/ppu-buildkit.XXXXXX, removed on exit)
# Prints the build time and the image size, and "PASS buildkit-image" last. Needs root.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$ROOT/scripts/lib.sh"
VARIANT=cpu
EXTRA=()
while (($#)); do
  case "$1" in
    --variant)
      VARIANT="${2:?--variant needs cpu or cuda}"
      shift 2
      ;;
    --no-cache)
      EXTRA+=(--no-cache)
      shift
      ;;
    -h | --help)
      sed -n '2,15p' "$0"
      exit 0
      ;;
    *)
      echo "build-image-buildkit: unknown flag '$1' (try --help)" >&2
      exit 2
      ;;
  esac
done
case "$VARIANT" in cpu | cuda) ;; *)
  echo "build-image-buildkit: --variant must be cpu or cuda, got '$VARIANT'" >&2
  exit 2
  ;;
esac
log() { echo "build-image-buildkit: $*" >&2; }
fail() {
  echo "FAIL: $*" >&2
  exit 1
}
[[ $(id -u) -eq 0 ]] || fail "needs root (it starts a private dockerd)"

# Debian's engine and its own client: a newer CLI (e.g. Docker 23+) sends `docker build` to the
# buildx plugin, which Debian does not ship; the 20.10 client drives BuildKit itself.
if [[ ! -x /usr/sbin/dockerd || ! -x /usr/bin/docker ]]; then
  log "installing docker.io (Debian)"
  DEBIAN_FRONTEND=noninteractive apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends docker.io >&2
fi
DOCKER=/usr/bin/docker

BASE_TAR="${PPU_BASE_CACHE:-${HOME:-/root}/.cache/ppu-base-image/bookworm.tar}"
[[ -s "$BASE_TAR" ]] || PPU_BASE_CACHE="$BASE_TAR" bash "$ROOT/scripts/build-base-image.sh" --force >/dev/null
[[ -s "$BASE_TAR" ]] || fail "no base rootfs at $BASE_TAR (scripts/build-base-image.sh)"

STATE="${PPU_BUILDKIT_STATE:-$(mktemp -d /var/tmp/ppu-buildkit.XXXXXX)}"
mkdir -p "$STATE"/{data,exec,run}
SOCK="unix://$STATE/run/docker.sock"
DPID=""
cleanup() {
  if [[ -n "$DPID" ]] && kill -0 "$DPID" 2>/dev/null; then
    kill -TERM "$DPID"
    for _ in $(seq 60); do
      kill -0 "$DPID" 2>/dev/null || break
      sleep 0.5
    done
    kill -KILL "$DPID" 2>/dev/null || true
  fi
  # dockerd unmounts its overlays on a clean stop; anything left (a killed daemon) goes here.
  awk -v s="$STATE" 'index($2, s) == 1 {print $2}' /proc/mounts | sort -r | while read -r m; do umount -l "$m"; done
  rm -rf --one-file-system "$STATE"
}
trap cleanup EXIT

NOFILE="$(ppu_rlimit -n 16384)"
NPROC="$(ppu_rlimit -u 16384)"
log "dockerd $(/usr/sbin/dockerd --version | awk '{print $3}' | tr -d ,) in $STATE (no bridge, no iptables)"
/usr/sbin/dockerd --host "$SOCK" --data-root "$STATE/data" --exec-root "$STATE/exec" \
  --pidfile "$STATE/run/docker.pid" --bridge=none --iptables=false --ip6tables=false --ip-forward=false \
  --ip-masq=false --exec-opt native.cgroupdriver=cgroupfs --oom-score-adjust=0 \
  --default-ulimit "nofile=$NOFILE:$NOFILE" --default-ulimit "nproc=$NPROC:$NPROC" \
  >"$STATE/run/dockerd.log" 2>&1 &
DPID=$!
export DOCKER_HOST="$SOCK"
for _ in $(seq 120); do
  "$DOCKER" version >/dev/null 2>&1 && break
  kill -0 "$DPID" 2>/dev/null || break
  sleep 0.5
done
"$DOCKER" version >/dev/null 2>&1 || {
  tail -20 "$STATE/run/dockerd.log" >&2
  fail "dockerd did not start"
}

BASE=localhost/ppu-debian:bookworm
"$DOCKER" import --change 'CMD ["/bin/bash"]' \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' "$BASE_TAR" "$BASE" >/dev/null
log "base image $BASE imported from $BASE_TAR"

TAG=ppu:buildkit
start=$(date +%s)
DOCKER_BUILDKIT=1 nice "$DOCKER" build --progress=plain --network=host \
  --build-arg "DEBIAN=$BASE" --build-arg "VARIANT=$VARIANT" "${EXTRA[@]}" \
  -t "$TAG" -f "$ROOT/Dockerfile" "$ROOT" >"$STATE/run/build.log" 2>&1 \
  || {
    tail -40 "$STATE/run/build.log" >&2
    fail "DOCKER_BUILDKIT=1 docker build failed"
  }
secs=$(($(date +%s) - start))
grep -q '^#[0-9]' "$STATE/run/build.log" || fail "the build log has no BuildKit steps (the legacy builder ran?)"
size=$(($("$DOCKER" image inspect --format '{{.Size}}' "$TAG") / 1000000))
log "$TAG built with BuildKit in $secs s; size $size MB"

user="$("$DOCKER" image inspect --format '{{.Config.User}}' "$TAG")"
[[ "$user" == 65532:65532 ]] || fail "image user is '$user', want 65532:65532"
run() {
  "$DOCKER" run --rm --network=none --read-only --tmpfs /tmp:rw,size=512m --cap-drop=ALL \
    --security-opt no-new-privileges "$TAG" "$@"
}
for b in ppu-train ppu-launch ppu-plan ppu-data ppu-export ppu-operator; do
  run "$b" --help >/dev/null || fail "$b --help failed inside the BuildKit image"
done
run ppu-plan --config /etc/ppu/configs/tiny.yaml | grep -q 'model      tiny' || fail "ppu-plan cannot read the shipped configs"
log "all six binaries start as $user with a read-only root; ppu-plan reads /etc/ppu/configs"
echo "PASS buildkit-image ($secs s, $size MB)"
