#!/usr/bin/env bash
# Builds the image with no registry (scripts/build-image.sh: debootstrap base + podman/buildah
# 1.28, --pull=never) and runs it the way the cluster runs rank pods: as uid 65532, read-only
# root filesystem, no capabilities, no new privileges, no network, /tmp a tmpfs. Checks:
# - the image runs as 65532:65532 by default;
# - every binary starts (all shared libraries resolve) and `ppu-plan` reads the shipped configs;
# - a 2-rank `ppu-launch` run trains, writes a summary, and LibTorch uses OpenBLAS's OpenMP build;
# - the runtime stage is slim: the Debian packages that own the libraries are not installed
#   (only the base system's), and the image is under PPU_IMAGE_MAX_MB (default 900 MB; the
#   previous apt-installed runtime stage was ~1.4 GB).
# Prints the build time and size (docs/DEPLOY.md records them). Needs root and podman.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
source "$ROOT/scripts/lib.sh"
IMAGE="${PPU_IMAGE:-localhost/ppu:dev}"
MAX_MB="${PPU_IMAGE_MAX_MB:-900}"
fail() {
  echo "FAIL: $*" >&2
  exit 1
}
ok() { echo "ok: $*"; }

bash "$ROOT/scripts/cluster.sh" deps
bash "$ROOT/scripts/build-image.sh" --tag "$IMAGE" 2>&1 | grep -E '^build-(image|base-image):|error|Error' || true
podman image exists "$IMAGE" || fail "scripts/build-image.sh did not produce $IMAGE"

user="$(podman image inspect --format '{{.Config.User}}' "$IMAGE")"
[[ "$user" == 65532:65532 ]] || fail "image user is '$user', want 65532:65532"
ok "image runs as $user by default"

NOFILE="$(ppu_rlimit -n 16384)"
run() {
  podman run --rm --pull=never --network=none --read-only --tmpfs /tmp:rw,size=512m \
    --cap-drop=ALL --security-opt no-new-privileges --ulimit "nofile=$NOFILE:$NOFILE" --ulimit nproc=4096:4096 \
    "$IMAGE" "$@"
}
for b in ppu-train ppu-launch ppu-plan ppu-data ppu-export ppu-operator; do
  run "$b" --help >/dev/null || fail "$b --help failed inside the image"
done
ok "all six binaries start inside the image (read-only root, uid 65532, no capabilities)"
run ppu-plan --config /etc/ppu/configs/tiny.yaml | grep -q 'model      tiny' || fail "ppu-plan cannot read /etc/ppu/configs/tiny.yaml"
ok "ppu-plan reads the shipped configs"

summary="$ROOT/tests/cluster/image_summary.py"
out="$(run sh -c 'cd /tmp && ppu-launch --nproc 2 --config /etc/ppu/configs/tiny.yaml --set train.steps=6 \
        --set outer.sync_every=3 --set train.eval_every=0 --set checkpoint.dir= --set metrics.port=0 \
        --set data.synthetic_train_tokens=20000 --set data.synthetic_val_tokens=2000 --summary-dir "$1" >/tmp/log 2>&1 \
        || { cat /tmp/log; exit 1; }; cat "$2"' sh /tmp/s "$(python3 "$summary" path /tmp/s)")" \
  || fail "2-rank training inside the image failed: $out"
python3 "$summary" check "$out" || fail "training summary from inside the image is wrong"

pkgs="$(podman run --rm --pull=never --network=none --ulimit "nofile=$NOFILE:$NOFILE" --ulimit nproc=4096:4096 \
  "$IMAGE" dpkg-query -W -f '${Package}\n')"
for p in libtorch1.13 libopenblas0-openmp libgloo0 libopencv-core406; do
  grep -qx "$p" <<<"$pkgs" && fail "runtime image installs Debian package $p (should carry only the libraries)"
done
ok "runtime image holds the libraries, not their Debian packages ($(wc -l <<<"$pkgs") base packages)"
size=$(($(podman image inspect --format '{{.Size}}' "$IMAGE") / 1000000))
echo "image $IMAGE: $size MB"
((size < MAX_MB)) || fail "image is $size MB, over $MAX_MB MB"
ok "image size $size MB < $MAX_MB MB"
echo "image_test: all checks passed"
