#!/usr/bin/env bash
# study_gpu_script_on_cpu: bench/gpu/study.py, which otherwise runs only in the rare GPU
# sessions, on the CPU with a tiny shape and the small corpus (tinyshakespeare, vocab 1024): both
# runs finish, study.md has a row with a loss for each and the difference, study.json has each
# curve ending at the last step; stopped by SIGTERM part-way, it writes a report saying so and
# leaves no rank running.
# Usage: gpu_study_test.sh BUILD_DIR SOURCE_DIR SHARED_DIR. Prints "PASS gpu-study" or "FAIL: ...".
# shellcheck source=tests/study/lib.sh
source "$(dirname "$0")/lib.sh" "$1" "$2" "$3" gpu-study
bash "$SRC/bench/study/corpus.sh" --small "$OUT/corpus" >"$OUT/corpus.log" 2>&1 \
  || fail "corpus.sh --small failed: $(tail -3 "$OUT/corpus.log")"
tiny=(--device cpu --layers 2 --d-model 64 --seq-len 64 --batch 2 --ranks 2 --threads 1 --eval-every 20)

python3 "$SRC/bench/gpu/study.py" "$BUILD" "$OUT/corpus/data" --out "$OUT/full" "${tiny[@]}" --steps 60 >"$OUT/full.log" 2>&1 \
  || fail "study.py exited non-zero: $(tail -5 "$OUT/full.log")"
grep -q "^| Streaming DiLoCo | [0-9.]* |  | " "$OUT/full/study.md" || fail "study.md has no Streaming DiLoCo row with a loss"
grep -q "^| PPU 1/2 MLPs | [0-9.]* | [+-][0-9.]* | " "$OUT/full/study.md" || fail "study.md has no PPU row with a loss and a difference"
grep -q "vocabulary 1024" "$OUT/full/study.md" || fail "study.md does not name the corpus's vocabulary"
python3 "$SRC/tests/study/check_outputs.py" gpu-study "$OUT/full/study.json" \
  || fail "study.json lacks a run, its curve or its final evaluation"

# Stopped part-way: SIGTERM while the first run trains (it would take minutes).
python3 "$SRC/bench/gpu/study.py" "$BUILD" "$OUT/corpus/data" --out "$OUT/stopped" "${tiny[@]}" --steps 100000 >"$OUT/stopped.log" 2>&1 &
pid=$!
for _ in $(seq 1 600); do
  grep -q "step 20/" "$OUT/stopped/streaming-diloco/run.log" 2>/dev/null && break
  sleep 0.1
done
kill -TERM "$pid"
wait "$pid"
rc=$?
[[ $rc -eq 1 ]] || fail "study.py stopped by SIGTERM exited $rc, not 1"
grep -q "^| Streaming DiLoCo | not run (stopped by signal 15) |" "$OUT/stopped/study.md" || fail "the stopped report does not say the run was stopped"
sleep 1
if pgrep -f "$OUT/stopped/" >/dev/null; then fail "ranks still running after study.py was stopped: $(pgrep -fa "$OUT/stopped/")"; fi
echo "PASS gpu-study"
