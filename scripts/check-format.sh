#!/usr/bin/env bash
# Formatting check (ctest format.tree, label unit): every tracked C/C++ file matches .clang-format.
#   scripts/check-format.sh          check; prints each file that differs and the fix
#   scripts/check-format.sh --fix    reformat those files in place
# Needs clang-format (scripts/install-deps.sh --test) and a git checkout (the file list is
# `git ls-files`, so build trees and generated files are never looked at).
set -euo pipefail
cd "$(dirname "$0")/.."
fix=0
case "${1:-}" in
  "") ;;
  --fix) fix=1 ;;
  *)
    echo "check-format: unknown flag '$1' (use --fix)" >&2
    exit 2
    ;;
esac
command -v clang-format >/dev/null || {
  echo "check-format: FAIL: clang-format not found (install-deps.sh --test)"
  exit 1
}
mapfile -t files < <(git ls-files -- '*.c' '*.cc' '*.cpp' '*.cxx' '*.h' '*.hpp')
((${#files[@]})) || {
  echo "check-format: FAIL: no C/C++ files found (not a git checkout?)"
  exit 1
}
if ((fix)); then
  clang-format -i "${files[@]}"
  echo "check-format: formatted ${#files[@]} files"
  exit 0
fi
bad=()
for f in "${files[@]}"; do
  clang-format --dry-run --Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done
if ((${#bad[@]})); then
  printf 'check-format: differs from .clang-format: %s\n' "${bad[@]}"
  echo "check-format: FAIL: ${#bad[@]} of ${#files[@]} files (fix: bash scripts/check-format.sh --fix)"
  exit 1
fi
echo "check-format: PASS: all ${#files[@]} C/C++ files match .clang-format ($(clang-format --version | grep -o '[0-9][0-9.]*' | head -1))"
