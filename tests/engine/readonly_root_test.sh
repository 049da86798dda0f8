#!/usr/bin/env bash
# ppu-train runs the way the operator's default pod security context runs it: a read-only root
# filesystem, uid/gid 65532 with no capabilities, writable only where the pod mounts emptyDirs
# (/tmp) and the checkpoint volume. Two ranks train in a private mount namespace in which every
# mount except /proc, /sys and /dev is remounted read-only, /tmp is a fresh tmpfs and only the
# checkpoint directory is bind-mounted writable. Checks that the namespace really is read-only,
# that both ranks exit 0 and that checkpoints were written.
#
# Usage: readonly_root_test.sh PPU_TRAIN SOURCE_DIR
set -euo pipefail
TRAIN="$(readlink -f "$1")"
SRC="$(readlink -f "$2")"
fail() {
  echo "FAIL: $*" >&2
  exit 1
}
pass() { echo "ok: $*"; }
[[ -x "$TRAIN" ]] || fail "ppu-train '$1' is not executable"
command -v unshare >/dev/null || fail "unshare (util-linux) is required"
command -v setpriv >/dev/null || fail "setpriv (util-linux) is required"
[[ "$(id -u)" == 0 ]] || fail "must run as root (it creates a mount namespace and drops to uid 65532)"
# A checkpoint round directory's name starts with this (python/ppu/files.py, from the contract).
round_prefix="$(python3 -c 'import sys; sys.path.insert(0, sys.argv[1]); from ppu import files; print(files.ROUND_PREFIX)' "$SRC/python")" \
  || fail "cannot read the checkpoint names from $SRC/python/ppu"

# Not under /tmp: the namespace mounts a fresh tmpfs there. A checkout under /tmp would be
# hidden by it too, so the binary and the config are copied into the work dir, which is next
# to the binary, or in /var/tmp when that is under /tmp.
parent="$(dirname "$TRAIN")"
[[ "$parent" == /tmp || "$parent" == /tmp/* ]] && parent=/var/tmp
W="$(mktemp -d "$parent/readonly-root.XXXXXX")"
trap 'rm -rf "$W"' EXIT
mkdir -p "$W/ckpt" "$W/bin" "$W/configs"
cp "$TRAIN" "$W/bin/ppu-train"
cp "$SRC/configs/tiny.yaml" "$W/configs/"
TRAIN="$W/bin/ppu-train"
SRC="$W"
chown 65532:65532 "$W/ckpt" # what fsGroup does for the checkpoint volume
chmod 755 "$W"
PORT=$((20000 + RANDOM % 30000))

cat >"$W/inside.sh" <<'INSIDE'
set -euo pipefail
W="$1"; TRAIN="$2"; SRC="$3"; PORT="$4"
mount --make-rprivate /
mount --bind "$W/ckpt" "$W/ckpt"
# Every other mount read-only, deepest first is not needed: remount flags are per mount.
awk '{print $5}' /proc/self/mountinfo | sort -u | while read -r mp; do
  mp="$(printf '%b' "$mp")"   # mountinfo escapes spaces as \040
  case "$mp" in /proc|/proc/*|/sys|/sys/*|/dev|/dev/*|"$W/ckpt") continue ;; esac
  mount -o remount,bind,ro "$mp" 2>/dev/null || true
done
mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs /tmp
drop() { setpriv --reuid 65532 --regid 65532 --clear-groups --inh-caps=-all --bounding-set=-all --no-new-privs -- "$@"; }
# The namespace must really be read-only where it matters, or this test proves nothing.
for p in / /usr "$SRC" "$(dirname "$TRAIN")" "$W"; do
  if touch "$p/.ppu-rw-probe" 2>/dev/null; then rm -f "$p/.ppu-rw-probe"; echo "FAIL: $p is writable by root" >&2; exit 1; fi
done
drop touch /tmp/probe "$W/ckpt/probe" || { echo "FAIL: /tmp or the checkpoint dir is not writable by 65532" >&2; exit 1; }
rm -f "$W/ckpt/probe"
echo "ok: root filesystem read-only; /tmp and the checkpoint dir writable by 65532"
pids=()
for r in 0 1; do
  RANK=$r WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$PORT PPU_CHECKPOINT_DIR="$W/ckpt" PPU_RUN_ID=readonly \
    HOME=/nonexistent drop "$TRAIN" --config "$SRC/configs/tiny.yaml" \
      --set train.steps=20 --set outer.sync_every=10 --set train.eval_every=0 --set slicing.slices=2 \
      --set checkpoint.every_rounds=1 --set network.timeout_s=60 >"/tmp/rank$r.log" 2>&1 &
  pids+=($!)
done
rc=0
for i in 0 1; do
  if ! wait "${pids[$i]}"; then echo "FAIL: rank $i exited non-zero; its log:" >&2; cat "/tmp/rank$i.log" >&2; rc=1; fi
done
echo "info: written to /tmp besides the rank logs: $(cd /tmp && find . -mindepth 1 ! -name 'rank*.log' ! -name probe | tr '\n' ' ')"
exit $rc
INSIDE

unshare --mount --propagation private bash "$W/inside.sh" "$W" "$TRAIN" "$SRC" "$PORT" || fail "ranks did not train with a read-only root"
pass "two ranks trained as uid 65532 with a read-only root filesystem"
n=$(find "$W/ckpt" -mindepth 1 -maxdepth 3 -name "${round_prefix}*" | grep -vc '\.tmp' || true)
((n >= 1)) || {
  ls -lR "$W/ckpt" >&2
  fail "no checkpoint round written to the checkpoint volume"
}
owner=$(find "$W/ckpt" -mindepth 1 -name "${round_prefix}*" -printf '%u\n' | sort -u)
[[ "$owner" == 65532 ]] || fail "checkpoints owned by '$owner', expected 65532"
pass "$n checkpoint round(s) written by uid 65532"
echo "PASS readonly-root"
