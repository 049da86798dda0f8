#!/usr/bin/env bash
# clang-tidy (ctest lint.clang_tidy, label unit) with the committed .clang-tidy:
#  - always, every tracked source of the targets that do not include LibTorch: runtime/core,
#    runtime/common, runtime/data, the mains of runtime/cmd that need no LibTorch and operator/;
#  - and the LibTorch-based sources (runtime/engine, runtime/export, bench, tests/engine) that
#    changed since BASE (default HEAD~1: the commit being landed; PPU_TIDY_BASE overrides, "" = none).
#    Each of those parses LibTorch's headers, ~33 s apiece here, so the whole set (~11 min on
#    2 cores) is linted only when asked: PPU_TIDY_ALL=1.
#   scripts/check-tidy.sh BUILD_DIR      (a configured build with compile_commands.json)
# Needs clang-tidy (scripts/install-deps.sh --test).
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:?usage: check-tidy.sh BUILD_DIR}"
[[ -f "$build/compile_commands.json" ]] || {
  echo "check-tidy: FAIL: no $build/compile_commands.json"
  exit 1
}
tidy="$(command -v clang-tidy || true)"
[[ -n "$tidy" ]] || {
  echo "check-tidy: FAIL: clang-tidy not found (install-deps.sh --test)"
  exit 1
}
mapfile -t files < <(git ls-files -- 'runtime/core/*.cpp' 'runtime/common/*.cpp' 'runtime/data/*.cpp' \
  'runtime/cmd/ppu_launch_main.cpp' 'runtime/cmd/ppu_plan_main.cpp' 'runtime/cmd/ppu_data_main.cpp' \
  'runtime/cmd/ppu_schema_main.cpp' 'operator/src/*.cpp')
((${#files[@]})) || {
  echo "check-tidy: FAIL: no sources found"
  exit 1
}
torch_globs=('runtime/engine/*.cpp' 'runtime/export/*.cpp' 'runtime/cmd/ppu_train_main.cpp'
  'runtime/cmd/ppu_export_main.cpp' 'bench/*.cpp' 'tests/engine/*.cpp')
if [[ "${PPU_TIDY_ALL:-0}" == 1 ]]; then
  mapfile -t -O "${#files[@]}" files < <(git ls-files -- "${torch_globs[@]}")
  scope="all LibTorch-based sources too"
else
  base="${PPU_TIDY_BASE-HEAD~1}"
  changed=()
  if [[ -n "$base" ]] && git rev-parse -q --verify "$base^{commit}" >/dev/null; then
    mapfile -t changed < <(git diff --name-only --diff-filter=AM "$base" -- "${torch_globs[@]}")
  fi
  # Only sources the build compiles (compile_commands.json names them).
  for f in "${changed[@]}"; do grep -q "\"file\": \".*/$f\"" "$build/compile_commands.json" && files+=("$f"); done
  scope="LibTorch-based sources changed since ${base:-nothing}: ${#changed[@]}"
fi
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
# Two files at a time (the machine's cores); clang-tidy exits non-zero on any warning (WarningsAsErrors).
# LibTorch sources compile with GCC's -fopenmp (cmake/torch_openmp.cmake); clang has no omp.h of
# its own here, so the lint parses them with OpenMP off (ATen's parallel_for: its serial branch).
status=0
printf '%s\n' "${files[@]}" | xargs -P "${PPU_TIDY_JOBS:-2}" -n 4 "$tidy" -p "$build" --quiet --extra-arg=-fno-openmp \
  >"$log" 2>&1 || status=$?
if ((status != 0)); then
  grep -E 'warning:|error:|Error while processing' "$log" | sort -u | head -100
  echo "check-tidy: FAIL: clang-tidy reported the findings above in ${#files[@]} files ($scope)"
  exit 1
fi
echo "check-tidy: PASS: ${#files[@]} files clean under .clang-tidy ($scope; $("$tidy" --version | grep -o 'version [0-9.]*'))"
