#!/usr/bin/env bash
# The README's second command: installs what the tests need (Debian packages; a Go toolchain if
# the machine has none new enough; SeaweedFS, kube-apiserver, kubectl and helm built once from
# their pinned Go modules, in the background while the project builds and the tests run),
# configures build/ with EVERY part on (whatever an earlier configure, such as the demo's
# runtime-only one, cached), builds, and runs the whole ctest suite.
# Extra arguments go to ctest (e.g. -L unit). Fails when ctest executes fewer tests than the
# build registers for the same selection, so a half-configured tree cannot pass as green.
#
# The `cluster` label (tests/cluster: builds the container image and a real cluster of one and
# two nodes, then runs the end-to-end tests on them (tests/cluster/e2e, pytest); 65 min of ctest
# on 2 cores with the tools built, docs/DEPLOY.md) is left out unless asked for, which is how CI
# runs this script:
#   bash scripts/test.sh -L cluster          only the cluster tests (a -L regex naming `cluster`);
#                                            exactly `-L cluster` configures build/ and builds
#                                            nothing: those tests run the image's binaries, which
#                                            the image build compiles
#   PPU_TEST_CLUSTER=1 bash scripts/test.sh  everything, cluster tests included
# The `tidy` label (lint.clang_tidy_rest: clang-tidy over every LibTorch-based source, bench and
# test, about 19 minutes on 2 cores; docs/TESTING.md) is held out the same way: -L tidy, or
# PPU_TEST_TIDY=1. A -LE given here is kept and still excludes the held labels (ctest ANDs
# repeated -LE, so the exclusion is folded into each one).
# The fast lane, `bash scripts/test.sh --unit` (= -L unit), skips building kube-apiserver,
# kubectl, helm and shfmt: no test labelled `unit` runs a Go-built tool.
set -euo pipefail
cd "$(dirname "$0")/.."
unit_lane=0
if [[ "${1:-}" == --unit ]]; then
  unit_lane=1
  shift
  set -- -L unit "$@"
fi
if ((unit_lane)); then
  bash scripts/install-deps.sh --test --no-go
else
  bash scripts/install-deps.sh --test
  # SeaweedFS, kube-apiserver, kubectl and helm (9 minutes of Go builds alone on 2 cores, more
  # with their modules' download) build in the background at idle CPU priority (SCHED_IDLE):
  # they take the cores only when the project's build and the tests leave them idle (link steps,
  # tests waiting on their processes). A fixture that needs a tool not built yet waits on its
  # lock (docs/TESTING.md).
  mkdir -p build
  idle=(nice -n 19)
  if chrt --idle 0 true 2>/dev/null; then idle=(chrt --idle 0); fi
  setsid "${idle[@]}" bash scripts/build-test-tools.sh >build/test-tools.log 2>&1 &
  tools_pid=$!
  echo "test.sh: building the Go test tools in the background (${idle[*]}; log: build/test-tools.log)"
fi
# shellcheck disable=SC2317 # called by the EXIT traps
stop_tools() { [[ -z "${tools_pid:-}" ]] || kill -- "-$tools_pid" 2>/dev/null || true; }
trap stop_tools EXIT
cmake_flags=(-DPPU_BUILD_RUNTIME=ON -DPPU_BUILD_OPERATOR=ON -DPPU_BUILD_TESTS=ON -DPPU_WERROR=ON)
if [[ "$*" == "-L cluster" ]]; then
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release "${cmake_flags[@]}"
else
  bash scripts/build.sh build "${cmake_flags[@]}"
fi
cd build

# ctest selection: the caller's arguments, plus the exclusion of each held label the caller did
# not ask for (by a -L regex that names it, or PPU_TEST_CLUSTER=1 / PPU_TEST_TIDY=1).
held=()
for label in cluster tidy; do
  var="PPU_TEST_${label^^}"
  asked="${!var:-0}"
  prev=""
  for a in "$@"; do
    if [[ ("$prev" == -L || "$prev" == --label-regex) && "$a" == *"$label"* ]]; then asked=1; fi
    prev="$a"
  done
  [[ "$asked" == 1 ]] || held+=("$label")
done
held_re="$(
  IFS='|'
  echo "${held[*]}"
)"
sel=()
prev=""
has_le=0
for a in "$@"; do
  if [[ -n "$held_re" && ("$prev" == -LE || "$prev" == --label-exclude) ]]; then
    a="($a)|$held_re"
    has_le=1
  fi
  sel+=("$a")
  prev="$a"
done
if [[ -n "$held_re" && $has_le == 0 ]]; then sel+=(-LE "$held_re"); fi

registered="$(ctest -N "${sel[@]}" | awk '/^Total Tests:/ {print $3}')"
log="$(mktemp)"
trap 'rm -f "$log"; stop_tools' EXIT
status=0
ctest --output-on-failure --timeout 900 -j "${PPU_TEST_JOBS:-2}" "${sel[@]}" 2>&1 | tee "$log" || status=$?
executed="$(sed -n 's/.*tests passed, [0-9]* tests\{0,1\} failed out of \([0-9]*\).*/\1/p' "$log" | tail -1)"
if [[ -z "$registered" || "$registered" -eq 0 ]]; then
  echo "test.sh: ctest registers no tests in build/ — the configure step did not enable the suites" >&2
  exit 1
fi
if [[ "${executed:-0}" -ne "$registered" ]]; then
  echo "test.sh: ctest executed ${executed:-0} tests but the build registers $registered" >&2
  exit 1
fi
echo "test.sh: $executed of $registered registered tests executed (ctest ${sel[*]})"
if [[ -n "${tools_pid:-}" ]]; then
  # Every fixture that needed a tool has it by now; the log says when each was built.
  sed 's/^/test.sh: /' test-tools.log
fi
exit "$status"
