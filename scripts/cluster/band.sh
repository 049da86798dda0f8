# shellcheck shell=bash
# band.sh: the fault-free perplexity band a cluster e2e job's final perplexity must fall inside
# (sourced by scripts/cluster-e2e.sh and scripts/cluster-nodes-e2e.sh). Runs on this machine,
# not on the cluster: the same training section, seeds 0, 1 and 2, each a 4-rank ppu-launch run
# (all three at once, in the background at nice 19), from ${PPU_BUILD:-build}/bin/ppu-launch.
#
# The band is seed 0's own fault-free final perplexity P0 -/+ the seeds' range (max - min): the
# faulted cluster job is seed 0 (the default train.seed), and a fault may move it by no more than
# changing the seed does. (The plain [min, max] of the seeds would judge a fault by where seed 0
# happens to fall among three draws: with seed 0 at the top, a fault costing 0.6 % failed it
# while the seeds spread by 40 %.)
#
# The runs start when the e2e starts and take only CPU the cluster leaves idle: nice 19 in the
# root cgroup weighs 15 against the cluster cgroup's 1024, so rank pods and the control plane
# keep their share and their heartbeat timing, and the band's minutes overlap image loads, pod
# starts and pods capped below a core instead of adding to the label's time.
#   band_start DIR < MANIFEST   start the seeds (call it in the script's own shell: stdin
#                               redirected, not piped, so that band_wait can wait for them)
#   band_wait                   wait for them; 1, with their last log lines, when one failed
#   band_of DIR                 print "LO HI P0" from the finished runs' summaries
#   band_stop                   end runs still going (for the script's exit trap)
# DIR holds the runs' configs, logs and summaries (emptied first).
#
# The runs take the rank pods' kernel path: the pods set no OPENBLAS_CORETYPE, ATEN_CPU_CAPABILITY
# or PPU_ONEDNN, so the runtime picks the widest kernels the CPU has; a pin in the caller's
# environment (a machine's, a study's) would run other kernels here than in the cluster.
PODS_KERNEL_PATH=(env -u OPENBLAS_CORETYPE -u ATEN_CPU_CAPABILITY -u PPU_ONEDNN)
BAND_PIDS=()

band_start() {
  local dir="$1" launch="${PPU_BUILD:-$ROOT/build}/bin/ppu-launch" s
  [[ -x "$launch" ]] || {
    echo "band: $launch not built (scripts/build.sh build, or set PPU_BUILD)" >&2
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
    nice -n 19 "${PODS_KERNEL_PATH[@]}" "$launch" --nproc 4 --config "$dir/training.yaml" --set train.seed=$s \
      --set checkpoint.dir="$dir/ckpt-$s" --summary-dir "$dir/seed-$s" >"$dir/seed-$s.log" 2>&1 &
    BAND_PIDS+=($!)
  done
}

band_wait() {
  local p rc=0
  for p in "${BAND_PIDS[@]}"; do wait "$p" || rc=1; done
  BAND_PIDS=()
  ((rc == 0)) || echo "band: a fault-free seed failed: $(tail -3 "$BAND_DIR"/seed-*.log)" >&2
  return $rc
}

band_stop() {
  local p
  for p in "${BAND_PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${BAND_PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  BAND_PIDS=()
}

band_of() {
  python3 -c 'import json, sys
p = [json.load(open("%s/seed-%d/rank-0.json" % (sys.argv[1], s)))["eval_perplexity"] for s in (0, 1, 2)]
spread = max(p) - min(p)
print("%.3f %.3f %.3f" % (p[0] - spread, p[0] + spread, p[0]))
print("band: seeds 0, 1, 2 end at perplexity %s" % ", ".join("%.3f" % x for x in p), file=sys.stderr)' "$1"
}

# in_band LO HI X: true when LO <= X <= HI (X a number; anything else is outside).
in_band() {
  python3 -c 'import sys; lo, hi, x = map(float, sys.argv[1:]); sys.exit(not lo <= x <= hi)' "$1" "$2" "${3:-nan}" 2>/dev/null
}
