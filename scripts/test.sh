#!/usr/bin/env bash
# The README's second command: installs what the tests need (Debian packages; a Go toolchain if
# the machine has none new enough; kube-apiserver, kubectl and helm built once from their pinned
# Go modules), configures build/ with EVERY part on (whatever an earlier configure, such as the
# demo's runtime-only one, cached), builds, and runs the whole ctest suite.
# Extra arguments go to ctest (e.g. -L unit). Fails when ctest executes fewer tests than the
# build registers for the same selection, so a half-configured tree cannot pass as green.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh --test
bash scripts/build-kube-tools.sh
bash scripts/build-helm.sh
bash scripts/build.sh build -DPPU_BUILD_RUNTIME=ON -DPPU_BUILD_OPERATOR=ON -DPPU_BUILD_TESTS=ON
cd build

registered="$(ctest -N "$@" | awk '/^Total Tests:/ {print $3}')"
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
status=0
ctest --output-on-failure --timeout 900 -j "${PPU_TEST_JOBS:-2}" "$@" 2>&1 | tee "$log" || status=$?
executed="$(sed -n 's/.*tests passed, [0-9]* tests\{0,1\} failed out of \([0-9]*\).*/\1/p' "$log" | tail -1)"
if [[ -z "$registered" || "$registered" -eq 0 ]]; then
  echo "test.sh: ctest registers no tests in build/ — the configure step did not enable the suites" >&2
  exit 1
fi
if [[ "${executed:-0}" -ne "$registered" ]]; then
  echo "test.sh: ctest executed ${executed:-0} tests but the build registers $registered" >&2
  exit 1
fi
echo "test.sh: $executed of $registered registered tests executed"
exit "$status"
