#!/usr/bin/env bash
# The study's one command (docs/REPRODUCTION.md): builds the corpus, runs every row of grid.tsv
# for each of its seeds with K ranks via ppu-launch at equal tokens, then writes the table and
# the plots (report.py). Resumable: a run whose OUT/runs/NAME-sSEED/done exists is skipped.
#   run.sh [--quick] [--out DIR] [--corpus DIR]
# --corpus: where the corpus is built (default OUT/corpus), so OUT can be a committed directory
#          (docs/study/grid-v2) that a later sitting, or a clean clone, resumes.
# One kernel path for every run (kernel_pin.sh: OpenBLAS Haswell, ATen avx2, oneDNN off), so a run
# is bit-reproducible on any x86-64 machine with AVX2; run.sh stops when a run took another.
# After the grid, the owners-per-slice check (owners.sh, same pin, corpus and inner lr), then the
# report.
# --quick: the tinyshakespeare corpus, a tiny model, 4 ranks, 40 steps, the rows marked quick;
#          it checks that the pipeline produces its outputs, not the scientific result.
# Prints "[i/n] NAME seed S ... ETA" before every run. Env: PPU_BUILD (default ./build): a copy of
# bin/{ppu-launch,ppu-train,ppu-rendezvous,ppu-data} with a COMMIT file beside bin/ lets the tree
# be rebuilt while the study runs; each run records the commit its binaries came from.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BUILD=${PPU_BUILD:-$ROOT/build}
QUICK=0
OUT=""
CORPUS=""
while [[ $# -gt 0 ]]; do
  case $1 in
    --quick)
      QUICK=1
      shift
      ;;
    --out)
      [[ $# -ge 2 ]] || {
        echo "run.sh: --out needs a directory" >&2
        exit 2
      }
      OUT=$2
      shift 2
      ;;
    --corpus)
      [[ $# -ge 2 ]] || {
        echo "run.sh: --corpus needs a directory" >&2
        exit 2
      }
      CORPUS=$2
      shift 2
      ;;
    *)
      echo "run.sh: unknown flag '$1' (use --quick, --out DIR, --corpus DIR)" >&2
      exit 2
      ;;
  esac
done
LAUNCH=$BUILD/bin/ppu-launch
[[ -x $LAUNCH ]] || {
  echo "run.sh: $LAUNCH not built (set PPU_BUILD)" >&2
  exit 2
}
source "$HERE/kernel_pin.sh"
study_pin_kernels run.sh
if ((QUICK)); then
  OUT=${OUT:-$ROOT/out/study-quick}
  CORPUS=${CORPUS:-$OUT/corpus}
  K=4
  bash "$HERE/corpus.sh" --small "$CORPUS"
  EXTRA=(--set model.layers=2 --set model.d_model=64 --set model.vocab=1024 --set model.seq_len=64
    --set train.steps=40 --set train.eval_every=10 --set train.eval_batches=2 --set train.log_every=10
    --set inner.warmup_steps=5 --set inner.batch_size=4 --set outer.sync_every=10)
else
  OUT=${OUT:-$ROOT/out/study}
  CORPUS=${CORPUS:-$OUT/corpus}
  K=8
  bash "$HERE/corpus.sh" --full "$CORPUS"
  EXTRA=()
fi
mkdir -p "$OUT/runs"
# The corpus every run of OUT trained on: a resumed OUT must get the same one back.
if [[ -f $OUT/MANIFEST ]]; then
  # The same packages, text and tokens; ppu-data's "wrote DIR ..." lines name the corpus's path.
  cmp -s <(grep -v '^wrote ' "$CORPUS/MANIFEST") <(grep -v '^wrote ' "$OUT/MANIFEST") || {
    echo "run.sh: $CORPUS/MANIFEST differs from $OUT/MANIFEST (other package versions or text):" >&2
    diff "$OUT/MANIFEST" "$CORPUS/MANIFEST" >&2 || true
    echo "run.sh: the runs in $OUT trained on another corpus; use a new --out" >&2
    exit 1
  }
else
  cp "$CORPUS/MANIFEST" "$OUT/MANIFEST"
fi

# The inner learning rate, chosen once for every method (docs/REPRODUCTION.md): DDP, the
# synchronous baseline, trains 20 % of the study's steps (its own cosine schedule over them) at
# each candidate; the lowest final eval loss wins and every row of the grid uses it. The choice is
# kept in OUT/inner_lr (delete it to choose again); the sweep's runs stay in OUT/lr-sweep.
if ((QUICK)); then
  LR_CANDIDATES=()
  INNER_LR=""
else
  LR_CANDIDATES=(1e-3 3e-3 1e-2)
  INNER_LR=""
fi
if [[ ${#LR_CANDIDATES[@]} -gt 0 && ! -s $OUT/inner_lr ]]; then
  best=""
  best_loss=""
  for lr in "${LR_CANDIDATES[@]}"; do
    d=$OUT/lr-sweep/lr-$lr
    mkdir -p "$d"
    if [[ ! -f $d/done ]]; then
      echo "lr sweep: DDP at inner.lr=$lr, 400 steps"
      "$LAUNCH" --nproc "$K" --config "$HERE/study.yaml" --set "ranks=$K" --set data.path="$CORPUS/data" \
        --set method=ddp --set "inner.lr=$lr" --set train.steps=400 --set inner.warmup_steps=12 --set train.eval_every=0 \
        --summary-dir "$d" >"$d/run.log" 2>&1 || {
        echo "run.sh: lr sweep at $lr failed; see $d/run.log" >&2
        exit 1
      }
      touch "$d/done"
    fi
    loss=$(python3 "$HERE/summaries.py" eval-loss "$d")
    echo "lr sweep: inner.lr=$lr eval loss $loss"
    if [[ -z $best ]] || python3 -c 'import sys; sys.exit(0 if float(sys.argv[1]) < float(sys.argv[2]) else 1)' "$loss" "$best_loss"; then
      best=$lr
      best_loss=$loss
    fi
  done
  echo "$best" >"$OUT/inner_lr"
fi
[[ -s $OUT/inner_lr ]] && INNER_LR=$(cat "$OUT/inner_lr") && echo "inner.lr = $INNER_LR for every row ($OUT/inner_lr)"
[[ -n $INNER_LR ]] && EXTRA+=(--set "inner.lr=$INNER_LR")

# Order: the rows with several seeds, seed by seed (every such row's seed 0, then seed 1, ...),
# so a study stopped part-way has whole pairs; then the one-seed rows.
paired=()
single=() # "name|seed|sets"
while IFS=$'\t' read -r name seeds sets tag; do
  [[ -z $name || $name == \#* || $seeds == - ]] && continue
  ((QUICK)) && [[ ,$tag, != *,quick,* ]] && continue
  ((QUICK)) && seeds=${seeds%%,*}
  for s in ${seeds//,/ }; do
    if [[ $seeds == *,* ]]; then paired+=("$s|$name|$sets"); else single+=("$name|$s|$sets"); fi
  done
done <"$HERE/grid.tsv"
jobs=()
while IFS='|' read -r s name sets; do
  [[ -n $name ]] && jobs+=("$name|$s|$sets")
done < <(printf '%s\n' "${paired[@]}" | sort -s -t'|' -k1,1n)
jobs+=("${single[@]}")

n=${#jobs[@]}
i=0
spent=0
measured=0
t_start=$(date +%s)
for job in "${jobs[@]}"; do
  IFS='|' read -r name seed sets <<<"$job"
  i=$((i + 1))
  dir=$OUT/runs/$name-s$seed
  if [[ -f $dir/done ]]; then
    echo "[$i/$n] $name seed $seed: done, skipped"
    continue
  fi
  left=$((n - i + 1))
  if ((measured)); then eta="ETA $((spent * left / measured))s"; else eta="ETA unknown (no run timed yet)"; fi
  echo "[$i/$n] $name seed $seed: running; $left left, $eta"
  rm -rf "$dir"
  mkdir -p "$dir"
  keys=()
  for kv in $sets; do keys+=(--set "$kv"); done
  t0=$(date +%s)
  if ! python3 "$HERE/peak_rss.py" "$dir/rusage" -- "$LAUNCH" --nproc "$K" --config "$HERE/study.yaml" \
    --set "ranks=$K" --set data.path="$CORPUS/data" --set "train.seed=$seed" "${EXTRA[@]}" "${keys[@]}" \
    --summary-dir "$dir" >"$dir/run.log" 2>&1; then
    echo "run.sh: run $name seed $seed failed; see $dir/run.log" >&2
    tail -5 "$dir/run.log" >&2
    exit 1
  fi
  rank0=$(python3 "$HERE/summaries.py" path "$dir")
  if ! study_check_kernels "$rank0"; then
    echo "run.sh: run $name seed $seed ran on another kernel path; see $rank0" >&2
    exit 1
  fi
  echo "$sets" >"$dir/sets"
  # The commit the binaries were built from: $BUILD/COMMIT when the build is a snapshot of one
  # (a long study runs from a copy, so that rebuilding the tree does not change its binaries).
  if [[ -f $BUILD/COMMIT ]]; then cp "$BUILD/COMMIT" "$dir/commit"; else git -C "$ROOT" rev-parse HEAD >"$dir/commit"; fi
  touch "$dir/done"
  spent=$((spent + $(date +%s) - t0))
  measured=$((measured + 1))
done
echo "runs finished in $(($(date +%s) - t_start))s"
((QUICK)) || bash "$HERE/owners.sh" "$OUT" "$CORPUS"
echo "writing the report"
/usr/bin/python3 "$HERE/report.py" "$OUT" --corpus "$CORPUS"
