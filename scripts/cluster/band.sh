# shellcheck shell=bash
# band.sh: the fault-free perplexity band a cluster e2e job's final perplexity must fall inside
# (sourced by the bash that tests/cluster/e2e/band.py starts, which sets IMAGE; that module also
# computes the band from the runs' summaries and judges a perplexity against it). Runs on
# this machine, not on the cluster: the same training section, seeds 0, 1 and 2, each a 4-rank
# ppu-launch run of the image under test (all three at once, in the background; in_image below).
#
# The band is seed 0's own fault-free final perplexity P0 -/+ the seeds' range (max - min): the
# faulted cluster job is seed 0 (the default train.seed), and a fault may move it by no more than
# changing the seed does. (The plain [min, max] of the seeds would judge a fault by where seed 0
# happens to fall among three draws: with seed 0 at the top, a fault costing 0.6 % failed it
# while the seeds spread by 40 %.)
#
# A rank the others fence anyway (starved of CPU past its heartbeat window while the cluster is
# busy: seen once, and without restarts its seed then ran 1000 rounds short of a rank) is
# restarted in place, up to 3 times (band.py says so when it happens).
#
# The runs start when the e2e starts and take only CPU the cluster leaves idle: their cgroup
# weighs 128 against the cluster cgroup's 1024, so rank pods and the control plane keep their
# share and their heartbeat timing, and the band's minutes overlap image loads, pod starts and
# pods capped below a core instead of adding to the label's time.
#   band_start DIR < MANIFEST   start the seeds (call it in the script's own shell: stdin
#                               redirected, not piped, so that band_wait can wait for them)
#   band_wait                   wait for them; 1, with their last log lines, when one failed
#   band_stop                   end runs still going, remove the cgroup (for the script's exit trap)
#   in_image DIR CMD...         CMD in the image (below); the one-node e2e's step 6 runs its
#                               local run so
# DIR holds the runs' configs, logs and summaries (emptied first).
#
# Why the image and not a host build: these runs are the pods' own binaries, libraries and
# environment (no OPENBLAS_CORETYPE, ATEN_CPU_CAPABILITY or PPU_ONEDNN pin leaks in from the
# caller's), so they take the pods' kernel path and step 6 can compare bits; and the cluster label
# needs no build of the tree besides the image's (scripts/test.sh -L cluster only configures it).
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh" # ppu_rlimit, ppu_cgroup_roots
BAND_PIDS=()
BAND_NAMES=()
# The cpu cgroup (v1, as the cluster's: scripts/cluster/common.sh) the containers run under.
BAND_CGROUP=/ppu-band
BAND_SHARES=128

# in_image DIR CMD...: CMD in $IMAGE as podman runs it: the image's user and environment, no
# network (ranks meet on the container's loopback), DIR bind-mounted at its own path and handed to
# the image's user, in the band's cgroup. PPU_BAND_NAME names the container (band_stop removes it).
in_image() {
  local dir="$1" nofile cpu
  shift
  cpu="$(ppu_cgroup_roots cpu | head -1)"
  [[ -n "$cpu" ]] || {
    echo "band: no cgroup v1 cpu hierarchy mounted (the local cluster needs one too)" >&2
    return 1
  }
  mkdir -p "$cpu$BAND_CGROUP"
  echo "$BAND_SHARES" >"$cpu$BAND_CGROUP/cpu.shares"
  nofile="$(ppu_rlimit -n 16384)"
  chown -R "$(podman image inspect --format '{{.Config.User}}' "$IMAGE")" "$dir"
  podman run --rm --pull=never --network=none --cgroup-parent="$BAND_CGROUP" ${PPU_BAND_NAME:+--name "$PPU_BAND_NAME"} \
    --ulimit "nofile=$nofile:$nofile" --ulimit nproc=4096:4096 -v "$dir:$dir" "$IMAGE" "$@"
}

band_start() {
  local dir="$1" s
  podman image exists "$IMAGE" || {
    echo "band: image $IMAGE not built" >&2
    return 1
  }
  rm -rf "$dir"
  mkdir -p "$dir"
  python3 -c 'import sys, yaml
docs = [d for d in yaml.safe_load_all(sys.stdin) if d and d["kind"] == "PPUJob"]
t = docs[0]["spec"]["training"]; t["ranks"] = docs[0]["spec"]["replicas"]
yaml.safe_dump(t, open(sys.argv[1], "w"))' "$dir/training.yaml"
  BAND_DIR="$dir"
  for s in 0 1 2; do
    BAND_NAMES+=("ppu-band-$$-$s")
    PPU_BAND_NAME="ppu-band-$$-$s" in_image "$dir" ppu-launch --nproc 4 --max-restarts 3 --config "$dir/training.yaml" \
      --set train.seed=$s --set checkpoint.dir="$dir/ckpt-$s" --summary-dir "$dir/seed-$s" >"$dir/seed-$s.log" 2>&1 &
    BAND_PIDS+=($!)
  done
}

band_wait() {
  local p rc=0
  for p in "${BAND_PIDS[@]}"; do wait "$p" || rc=1; done
  BAND_PIDS=()
  BAND_NAMES=()
  ((rc == 0)) || echo "band: a fault-free seed failed; the last lines of each seed's log: $(tail -n 5 "$BAND_DIR"/seed-*.log)" >&2
  return $rc
}

band_stop() {
  local p
  for p in "${BAND_NAMES[@]}"; do podman rm -f -t 0 "$p" >/dev/null 2>&1 || true; done
  for p in "${BAND_PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  BAND_PIDS=()
  BAND_NAMES=()
  # The band's cgroup in every hierarchy (podman made it there, conmon's child below it), once empty.
  while read -r p; do
    rmdir "$p$BAND_CGROUP/conmon" "$p$BAND_CGROUP" 2>/dev/null || true
  done < <(ppu_cgroup_roots)
}
