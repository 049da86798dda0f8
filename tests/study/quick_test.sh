#!/usr/bin/env bash
# study_quick_pipeline: bench/study/run.sh --quick writes the corpus manifest, one summary per
# rank for every quick grid row, table.md with a row per run (results; kernel path and
# optimiser settings), paired.md (one seed: no interval),
# summary.json (runs, unigram entropy, paired) and five PNG plots;
# a second invocation skips every finished run; a bad flag is a one-line error naming it.
# Usage: quick_test.sh BUILD_DIR SOURCE_DIR SHARED_DIR. Prints "PASS study-quick" or "FAIL: ...".
# shellcheck source=tests/study/lib.sh
source "$(dirname "$0")/lib.sh" "$1" "$2" "$3" study-quick

bash "$SRC/bench/study/run.sh" --quick --out "$OUT" >"$OUT/first.log" 2>&1 || {
  tail -20 "$OUT/first.log"
  fail "run.sh --quick exited non-zero"
}
grep -q "^tokens train [0-9]* val [0-9]* vocab 1024$" "$OUT/corpus/MANIFEST" || fail "corpus MANIFEST lacks the token counts"
grep -q "sha256 [0-9a-f]\{64\}" "$OUT/corpus/MANIFEST" || fail "corpus MANIFEST lacks the input's sha256"
names=$(awk -F'\t' '$4 ~ /(^|,)quick(,|$)/ {print $1}' "$SRC/bench/study/grid.tsv")
[[ $(wc -w <<<"$names") -ge 3 ]] || fail "grid.tsv marks fewer than 3 rows quick"
for n in $names; do
  d=$OUT/runs/$n-s0
  [[ -f $d/done ]] || fail "run $n has no done marker"
  python3 "$SRC/tests/study/check_outputs.py" rank-summaries "$d" 4 \
    || fail "run $n: a rank's summary is missing or not the contract's, or its eval perplexity or tokens are not positive"
  grep -q "^| $n | 0 | [0-9.]* |" "$OUT/table.md" || fail "table.md has no row for $n"
  grep -q "eval step 10 loss" "$d/run.log" || fail "run $n logged no eval curve"
done
# two tables, each a header and a row per run: the results, then the kernel path and optimiser settings
[[ $(grep -c "^| " "$OUT/table.md") -eq $((2 * ($(wc -w <<<"$names") + 1))) ]] || fail "table.md has extra or missing rows"
grep -q "^| streaming-diloco | 0 | [0-9,]* | .* | OpenBLAS .*, ATen .*, oneDNN o[nf]* | " "$OUT/table.md" \
  || fail "table.md lists no kernel path for streaming-diloco"
python3 "$SRC/tests/study/check_outputs.py" report-runs "$OUT/summary.json" "$names" \
  || fail "summary.json lacks a run, peak RSS or bytes sent"
# A sanity bound, derived: the uniform model over the 1024 tokens scores log 1024 = 6.93 nats; the
# add-one-smoothed unigram of the train split does better on text drawn like it, and 7.5 leaves
# 0.57 nats for a val split that differs from train. Pure Python on the token files: no CPU enters.
python3 -c 'import json,sys; u=json.load(open(sys.argv[1]))["unigram"]; assert 0 < u["nats_per_token"] < 7.5 and u["vocab"] == 1024' "$OUT/summary.json" \
  || fail "summary.json lacks the unigram entropy of the val split"
paired=$(awk -F'\t' '$4 ~ /(^|,)quick(,|$)/ && $4 ~ /(^|,)paired(,|$)/ && $1 != "streaming-diloco" {print $1}' "$SRC/bench/study/grid.tsv")
[[ -n $paired ]] || fail "grid.tsv marks no quick row paired"
for n in $paired; do # one seed under --quick: a difference, but no interval or verdict
  grep -q "^| $n | streaming-diloco | 0 | [-+][0-9.]* | [-+][0-9.]* | n/a (one seed) |" "$OUT/paired.md" || fail "paired.md has no one-seed row for $n"
  python3 -c 'import json,sys; p=json.load(open(sys.argv[1]))["paired"][sys.argv[2]]; assert p["n"] == 1 and p["verdict"] == "n/a (one seed)"' "$OUT/summary.json" "$n" \
    || fail "summary.json has no one-seed paired entry for $n"
done
for p in loss_vs_tokens loss_vs_flops memory ppl_vs_n paired; do
  [[ $(head -c 8 "$OUT/$p.png" | od -An -tx1 | tr -d ' \n') == 89504e470d0a1a0a ]] || fail "$p.png is not a PNG"
  [[ $(stat -c %s "$OUT/$p.png") -gt 3000 ]] || fail "$p.png is too small to hold a plot"
done

bash "$SRC/bench/study/run.sh" --quick --out "$OUT" >"$OUT/second.log" 2>&1 || fail "second run.sh --quick exited non-zero"
[[ $(grep -c "done, skipped" "$OUT/second.log") -eq $(wc -w <<<"$names") ]] || fail "resumed run did not skip every finished run"
grep -q "running" "$OUT/second.log" && fail "resumed run re-ran a finished run"

err=$(bash "$SRC/bench/study/run.sh" --bogus 2>&1) && fail "run.sh --bogus exited zero"
[[ $err == *"--bogus"* ]] || fail "run.sh --bogus error does not name the flag: $err"
echo "PASS study-quick"
