#!/usr/bin/env bash
# Every row of bench/study/grid.tsv is a config that ppu-train accepts for the study's K = 8
# (ppu-train --check as rank 0 and rank 7 of 8, synthetic data in place of the corpus), so the
# 2-hour grid cannot stop at row 12 on a renamed or invalid key. Rows marked pending (seeds "-")
# must name their reason.
#   grid_check_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
BUILD=$1
SRC=$2
TRAIN=$BUILD/bin/ppu-train
GRID=$SRC/bench/study/grid.tsv
rows=0
while IFS=$'\t' read -r name seeds sets _tag; do
  [[ -z $name || $name == \#* ]] && continue
  if [[ $seeds == - ]]; then
    [[ $sets == pending:* ]] || {
      echo "FAIL: $name has no seeds and no 'pending:' reason"
      exit 1
    }
    continue
  fi
  keys=()
  for kv in $sets; do keys+=(--set "$kv"); done
  for rank in 0 7; do
    if ! out=$(WORLD_SIZE=8 RANK=$rank MASTER_ADDR=127.0.0.1 MASTER_PORT=1 "$TRAIN" --check \
      --config "$SRC/bench/study/study.yaml" --set ranks=8 --set data.source=synthetic "${keys[@]}" 2>&1); then
      echo "FAIL: grid row $name (rank $rank of 8) is refused: $out"
      exit 1
    fi
  done
  rows=$((rows + 1))
done <"$GRID"
[[ $rows -ge 10 ]] || {
  echo "FAIL: only $rows runnable rows in $GRID"
  exit 1
}
echo "PASS study-grid: $rows rows accepted by ppu-train --check for K = 8"
