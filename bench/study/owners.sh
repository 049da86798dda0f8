#!/usr/bin/env bash
# The owners-per-slice check of the study (docs/REPRODUCTION.md, "Audit of the 1/4 MLPs gap"):
# does PPU's gap to Streaming DiLoCo depend on how many ranks own each slice (K / N) at a fixed
# fraction trained per rank (1/N)? Runs Streaming DiLoCo and PPU 1/2 MLPs at K = 4 (two owners per
# slice, as 1/4 MLPs has at the grid's K = 8) for seeds 0 and 1, with the grid's every other
# setting (study.yaml, the corpus and the inner lr of run.sh), then owners.py prints the gap next
# to the grid's own pairs at K = 8. run.sh runs it after the grid; resumable like it, and on the
# study's one kernel path (kernel_pin.sh: it stops when a run took another).
#   owners.sh [OUT [CORPUS]]   run.sh's output and corpus (default ./out/study and OUT/corpus);
#                              run.sh passes its own
# Env: PPU_BUILD (default ./build).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BUILD=${PPU_BUILD:-$ROOT/build}
if (($# > 2)) || [[ ${1:-} == -* ]]; then
  echo "owners.sh: usage: owners.sh [OUT [CORPUS]]" >&2
  exit 2
fi
OUT=${1:-$ROOT/out/study}
CORPUS=${2:-$OUT/corpus}
LAUNCH=$BUILD/bin/ppu-launch
[[ -x $LAUNCH ]] || {
  echo "owners.sh: $LAUNCH not built (set PPU_BUILD)" >&2
  exit 2
}
[[ -s $OUT/inner_lr && -d $CORPUS/data ]] || {
  echo "owners.sh: run bench/study/run.sh first ($OUT has no inner_lr, or $CORPUS no data)" >&2
  exit 2
}
source "$HERE/kernel_pin.sh"
study_pin_kernels owners.sh
K=4
for seed in 0 1; do
  for row in "streaming-diloco|method=streaming-diloco" "ppu-mlp-2|method=ppu slicing.mode=mlp slicing.slices=2"; do
    IFS='|' read -r name sets <<<"$row"
    dir=$OUT/owners/runs/$name-s$seed
    if [[ -f $dir/done ]]; then
      echo "owners: $name seed $seed at K = $K: done, skipped"
      continue
    fi
    echo "owners: $name seed $seed at K = $K: running"
    rm -rf "$dir"
    mkdir -p "$dir"
    keys=()
    for kv in $sets; do keys+=(--set "$kv"); done
    if ! python3 "$HERE/peak_rss.py" "$dir/rusage" -- "$LAUNCH" --nproc "$K" --config "$HERE/study.yaml" \
      --set ranks=$K --set data.path="$CORPUS/data" --set train.seed=$seed --set inner.lr="$(cat "$OUT/inner_lr")" \
      "${keys[@]}" --summary-dir "$dir" >"$dir/run.log" 2>&1; then
      echo "owners.sh: run $name seed $seed failed; see $dir/run.log" >&2
      tail -5 "$dir/run.log" >&2
      exit 1
    fi
    rank0=$(python3 "$HERE/summaries.py" path "$dir")
    if ! study_check_kernels "$rank0"; then
      echo "owners.sh: run $name seed $seed ran on another kernel path; see $rank0" >&2
      exit 1
    fi
    echo "$sets ranks=$K" >"$dir/sets"
    if [[ -f $BUILD/COMMIT ]]; then cp "$BUILD/COMMIT" "$dir/commit"; else git -C "$ROOT" rev-parse HEAD >"$dir/commit"; fi
    touch "$dir/done"
  done
done
/usr/bin/python3 "$HERE/owners.py" "$OUT" # the statistics need Debian's scipy (as run.sh's report)
