#!/usr/bin/env bash
# clang-tidy (ctest lint.clang_tidy, label unit) with the committed .clang-tidy over every
# tracked source of the targets that do not include LibTorch: runtime/core, runtime/common,
# runtime/data, runtime/launch and operator/ (their headers are checked through them). The
# LibTorch-based runtime/engine and runtime/export are not linted: every one of their
# translation units parses LibTorch's headers, ~30 s each on this 2-core machine.
#   scripts/check-tidy.sh BUILD_DIR      (a configured build with compile_commands.json)
# Needs clang-tidy (scripts/install-deps.sh --test).
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:?usage: check-tidy.sh BUILD_DIR}"
[[ -f "$build/compile_commands.json" ]] || { echo "check-tidy: FAIL: no $build/compile_commands.json"; exit 1; }
tidy="$(command -v clang-tidy || true)"
[[ -n "$tidy" ]] || { echo "check-tidy: FAIL: clang-tidy not found (install-deps.sh --test)"; exit 1; }
mapfile -t files < <(git ls-files -- 'runtime/core/*.cpp' 'runtime/common/*.cpp' 'runtime/data/*.cpp' \
                                     'runtime/launch/*.cpp' 'operator/src/*.cpp')
((${#files[@]})) || { echo "check-tidy: FAIL: no sources found"; exit 1; }
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
# Two files at a time (the machine's cores); clang-tidy exits non-zero on any warning (WarningsAsErrors).
status=0
printf '%s\n' "${files[@]}" | xargs -P "${PPU_TIDY_JOBS:-2}" -n 4 "$tidy" -p "$build" --quiet >"$log" 2>&1 || status=$?
if ((status != 0)); then
  grep -E 'warning:|error:' "$log" | sort -u | head -100
  echo "check-tidy: FAIL: clang-tidy reported the findings above in ${#files[@]} files"
  exit 1
fi
echo "check-tidy: PASS: ${#files[@]} files clean under .clang-tidy ($("$tidy" --version | grep -o 'version [0-9.]*'))"
