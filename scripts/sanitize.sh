#!/usr/bin/env bash
# Sanitizer lanes (ctest sanitize.asan / sanitize.tsan, labels asan / tsan; docs/TESTING.md).
#   scripts/sanitize.sh asan|tsan [BUILD_DIR] [extra cmake arguments]
# Configures and builds an instrumented sub-build in BUILD_DIR (default build/sanitize-LANE) and
# runs its unit tests there:
#   asan: ASan + UBSan (-fno-sanitize-recover=all, leak checking on): the core, data and
#         operator unit tests, the ppu-plan / ppu-data CLI checks and ppu-schema's, ppu-crd's and
#         ppu-contract's drift checks (none needs LibTorch)
#   tsan: ThreadSanitizer: the operator's unit tests (work queue, informers, leader elector,
#         controller loop against FakeKube) and ppu-crd's and ppu-contract's drift checks
#         (operator.crd_file, operator.contract_file)
# Every report aborts its process (halt_on_error); ASan/LSan/TSan reports are also written to
# BUILD_DIR/reports/ and every test's output is kept in BUILD_DIR/ctest-output.log: a report in
# either fails the lane, so one cannot hide behind a test that expects a non-zero exit. Before the tests, a canary with one deliberate bug per sanitizer must be reported.
# Fails too when ctest executes fewer tests than the sub-build registers.
set -euo pipefail
cd "$(dirname "$0")/.."
lane=${1:-}
case "$lane" in
  asan) sanitize=address ;;
  tsan) sanitize=thread ;;
  *)
    echo "usage: $0 asan|tsan [BUILD_DIR] [cmake args...]" >&2
    exit 2
    ;;
esac
dir=${2:-build/sanitize-$lane}
shift 2 || shift $#
jobs=${PPU_BUILD_JOBS:-$(nproc)}
fail() {
  echo "sanitize.sh: FAIL $lane: $*"
  exit 1
}

t0=$SECONDS
if [[ $lane == asan ]]; then
  targets=(ppu_sanitizer_canary core_tests ppu-plan ppu-schema ppu-crd ppu-contract ppu_data_tests ppu-data operator_unit_tests
    objectstore_unit_tests)
  data=ON
  select=(-L unit)
else
  targets=(ppu_sanitizer_canary operator_unit_tests ppu-crd ppu-contract)
  data=OFF
  select=(-L unit -R '^operator\.')
fi
# Debug: assertions stay on; the sanitizer flags add -O1 -g1 (line tables: reports name file and line).
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DPPU_SANITIZE=$sanitize \
  -DPPU_BUILD_RUNTIME=OFF -DPPU_BUILD_DATA=$data -DPPU_BUILD_OPERATOR=ON -DPPU_BUILD_TESTS=ON "$@" >/dev/null
cmake --build "$dir" -j "$jobs" --target "${targets[@]}"
build_s=$((SECONDS - t0))

reports="$(cd "$dir" && pwd)/reports"
rm -rf "$reports"
mkdir -p "$reports"
# Reports go to stderr and, via log_path, to reports/<tool>.<pid>.
export ASAN_OPTIONS="halt_on_error=1:detect_leaks=1:abort_on_error=0:log_path=$reports/asan"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:log_path=$reports/ubsan"
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:log_path=$reports/tsan"
t1=$SECONDS

# What a report looks like on stderr (UBSan inside an ASan build ignores log_path: stderr only).
pattern='ERROR: (Address|Leak)Sanitizer|WARNING: ThreadSanitizer|: runtime error: '
# The canary: each deliberate bug must end its process with a failure and be reported.
if [[ $lane == asan ]]; then cases=(use-after-free signed-overflow leak); else cases=(data-race); fi
for c in "${cases[@]}"; do
  rc=0
  "$dir/tests/sanitizers/ppu_sanitizer_canary" "$c" 2>"$reports/canary.stderr" || rc=$?
  found="$(cat "$reports"/* | grep -m1 -oE "($pattern).{0,60}" || true)"
  [[ $rc -ne 0 && -n "$found" ]] || fail "canary '$c' was not reported (exit $rc)"
  echo "sanitize.sh: canary '$c' reported (exit $rc): $found"
  rm -f "$reports"/*
done

registered="$(cd "$dir" && ctest -N "${select[@]}" | awk '/^Total Tests:/ {print $3}')"
log="$dir/ctest-output.log"
status=0
# -V keeps every test's output in the log, also of tests that expect a failing exit status (a
# report there would otherwise pass unseen); the console gets the summary.
(cd "$dir" && ctest -V --timeout 900 -j "${PPU_TEST_JOBS:-2}" "${select[@]}") >"$log" 2>&1 || status=$?
run_s=$((SECONDS - t1))
sed -n '/tests passed, /,$p' "$log"
executed="$(sed -n 's/.*tests passed, [0-9]* tests\{0,1\} failed out of \([0-9]*\).*/\1/p' "$log" | tail -1)"

if grep -qE "$pattern" "$log"; then
  grep -nE -B2 -A12 "$pattern" "$log" | head -200
  fail "sanitizer report(s) in the test output (above; all output in $log)"
fi
if compgen -G "$reports/*" >/dev/null; then
  report_files=("$reports"/*)
  for f in "${report_files[@]}"; do
    echo "==== $f"
    cat "$f"
  done
  fail "${#report_files[@]} sanitizer report(s) (above; kept in $reports)"
fi
[[ -n "$registered" && "$registered" -gt 0 ]] || fail "the sub-build registers no tests"
[[ "${executed:-0}" -eq "$registered" ]] || fail "ctest executed ${executed:-0} tests of $registered registered"
[[ $status -eq 0 ]] || {
  grep -E 'Failed|\*\*\*' "$log" | head -50
  fail "ctest failed (exit $status; output in $log)"
}
echo "sanitize.sh: PASS $lane: $executed tests, 0 reports; configure+build ${build_s} s, canary+tests ${run_s} s ($dir)"
