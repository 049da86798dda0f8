# shellcheck shell=bash
# band.sh: the fault-free perplexity band a cluster e2e job's final perplexity must fall inside
# (sourced by scripts/cluster-e2e.sh and scripts/cluster-nodes-e2e.sh). Runs on this machine,
# not on the cluster: the same training section, seeds 0, 1 and 2, each a 4-rank ppu-launch run
# (all three at once), from ${PPU_BUILD:-build}/bin/ppu-launch.

# fault_free_band DIR: reads a PPUJob manifest (with the PVC documents before it) on stdin, runs
# seeds 0, 1 and 2 of its spec.training and prints "LO HI P0": the band a faulted run of seed 0
# (the default train.seed, the cluster job's) must end inside. P0 is seed 0's own fault-free
# final perplexity and the band is P0 -/+ the seeds' range (max - min): the fault may move the
# run by no more than changing the seed does. (The plain [min, max] of the seeds would judge a
# fault by where seed 0 happens to fall among three draws: with seed 0 at the top, a fault
# costing 0.6 % failed it while the seeds spread by 40 %.) DIR holds the runs' configs, logs and
# summaries (emptied first). Exits 1 with the runs' last log lines when one fails.
fault_free_band() {
  local dir="$1" launch="${PPU_BUILD:-$ROOT/build}/bin/ppu-launch" s pids=()
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
  for s in 0 1 2; do
    "$launch" --nproc 4 --config "$dir/training.yaml" --set train.seed=$s --set checkpoint.dir="$dir/ckpt-$s" \
      --summary-dir "$dir/seed-$s" >"$dir/seed-$s.log" 2>&1 &
    pids+=($!)
  done
  for s in "${pids[@]}"; do
    wait "$s" || {
      echo "band: a fault-free seed failed: $(tail -3 "$dir"/seed-*.log)" >&2
      return 1
    }
  done
  python3 -c 'import json, sys
p = [json.load(open("%s/seed-%d/rank-0.json" % (sys.argv[1], s)))["eval_perplexity"] for s in (0, 1, 2)]
spread = max(p) - min(p)
print("%.3f %.3f %.3f" % (p[0] - spread, p[0] + spread, p[0]))
print("band: seeds 0, 1, 2 end at perplexity %s" % ", ".join("%.3f" % x for x in p), file=sys.stderr)' "$dir"
}

# in_band LO HI X: true when LO <= X <= HI (X a number; anything else is outside).
in_band() {
  python3 -c 'import sys; lo, hi, x = map(float, sys.argv[1:]); sys.exit(not lo <= x <= hi)' "$1" "$2" "${3:-nan}" 2>/dev/null
}
