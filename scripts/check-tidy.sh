#!/usr/bin/env bash
# clang-tidy with the committed .clang-tidy, in two scopes that together cover every C++ source
# the build compiles:
#   scripts/check-tidy.sh BUILD_DIR          ctest lint.clang_tidy (label unit): every tracked
#     source of the targets that do not include LibTorch (runtime/core, runtime/common,
#     runtime/data, the mains of runtime/cmd that need no LibTorch, operator/src), plus the
#     LibTorch-based ones changed since BASE (default HEAD~1, the commit being landed;
#     PPU_TIDY_BASE overrides, "" = none). Each LibTorch source parses LibTorch's headers (~33 s
#     apiece here), so the unit lane leaves the unchanged ones to the second scope.
#   scripts/check-tidy.sh BUILD_DIR --rest   every other source compile_commands.json names (the
#     LibTorch-based sources, bench/ and every test), changed or not: 19 min on 2 cores. ctest
#     lint.clang_tidy_rest (label tidy, held out of the default run: scripts/test.sh -L tidy).
# (PPU_TIDY_ALL=1 lints both scopes in one run.) Needs clang-tidy (scripts/install-deps.sh --test)
# and a configured build with compile_commands.json.
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:?usage: check-tidy.sh BUILD_DIR [--rest]}"
rest=0
[[ "${2:-}" == --rest ]] && rest=1
[[ -f "$build/compile_commands.json" ]] || {
  echo "check-tidy: FAIL: no $build/compile_commands.json"
  exit 1
}
tidy="$(command -v clang-tidy || true)"
[[ -n "$tidy" ]] || {
  echo "check-tidy: FAIL: clang-tidy not found (install-deps.sh --test)"
  exit 1
}
compiled() { # the tracked sources that compile_commands.json names, of those on stdin
  local f
  while read -r f; do grep -q "\"file\": \".*/$f\"" "$build/compile_commands.json" && echo "$f"; done
  return 0
}
mapfile -t product < <(git ls-files -- 'runtime/core/*.cpp' 'runtime/common/*.cpp' 'runtime/data/*.cpp' \
  'runtime/cmd/ppu_launch_main.cpp' 'runtime/cmd/store_watch.cpp' 'runtime/cmd/ppu_plan_main.cpp' \
  'runtime/cmd/ppu_data_main.cpp' 'runtime/cmd/ppu_schema_main.cpp' 'operator/src/*.cpp')
((${#product[@]})) || {
  echo "check-tidy: FAIL: no sources found"
  exit 1
}
if ((rest)); then
  mapfile -t files < <(git ls-files -- '*.cpp' | grep -vxF -f <(printf '%s\n' "${product[@]}") | compiled)
  scope="every source outside the unit lane's set: LibTorch-based, bench and tests"
elif [[ "${PPU_TIDY_ALL:-0}" == 1 ]]; then
  mapfile -t files < <(git ls-files -- '*.cpp' | compiled)
  scope="every compiled source"
else
  files=("${product[@]}")
  # The LibTorch-based sources: everything the build compiles outside the product set, tests
  # without LibTorch excluded (they change with the code they test, which the unit lane lints).
  base="${PPU_TIDY_BASE-HEAD~1}"
  changed=()
  if [[ -n "$base" ]] && git rev-parse -q --verify "$base^{commit}" >/dev/null; then
    mapfile -t changed < <(git diff --name-only --diff-filter=AM "$base" -- 'runtime/engine/*.cpp' 'runtime/export/*.cpp' \
      'runtime/cmd/*.cpp' 'bench/*.cpp' 'tests/engine/*.cpp' | grep -vxF -f <(printf '%s\n' "${product[@]}") | compiled)
  fi
  files+=("${changed[@]}")
  scope="LibTorch-based sources changed since ${base:-nothing}: ${#changed[@]}"
fi
((${#files[@]})) || {
  echo "check-tidy: FAIL: no sources in scope ($scope)"
  exit 1
}
log="$(mktemp)"
db="$(mktemp -d)"
trap 'rm -rf "$log" "$db"' EXIT
# clang-tidy reads a copy of the compile database without the precompiled LibTorch header
# (cmake/torch_pch.cmake): clang cannot load GCC's, and every source includes what it uses.
python3 - "$build/compile_commands.json" "$db/compile_commands.json" <<'PY'
import json
import re
import sys

with open(sys.argv[1]) as f:
    entries = json.load(f)
for e in entries:
    e["command"] = re.sub(r" -Winvalid-pch| -include \S*cmake_pch\.hxx", "", e["command"])
with open(sys.argv[2], "w") as f:
    json.dump(entries, f)
PY
# Two files at a time (the machine's cores); clang-tidy exits non-zero on any warning (WarningsAsErrors).
# LibTorch sources compile with GCC's -fopenmp (cmake/torch_openmp.cmake); clang has no omp.h of
# its own here, so the lint parses them with OpenMP off (ATen's parallel_for: its serial branch).
status=0
printf '%s\n' "${files[@]}" | xargs -P "${PPU_TIDY_JOBS:-2}" -n 4 "$tidy" -p "$db" --quiet --extra-arg=-fno-openmp \
  >"$log" 2>&1 || status=$?
if ((status != 0)); then
  grep -E 'warning:|error:|Error while processing' "$log" | sort -u | head -100
  echo "check-tidy: FAIL: clang-tidy reported the findings above in ${#files[@]} files ($scope)"
  exit 1
fi
echo "check-tidy: PASS: ${#files[@]} files clean under .clang-tidy ($scope; $("$tidy" --version | grep -o 'version [0-9.]*'))"
