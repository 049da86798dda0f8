#!/usr/bin/env bash
# Formatting check (ctest format.changed_lines, label unit): the C/C++ lines added or changed
# since a fixed base commit must match .clang-format. Lines older than the base are not checked,
# so the tree is not reformatted wholesale; a new file is checked entirely (all its lines are new).
#   scripts/check-format.sh [BASE]      (default: the commit that introduced this check)
# Needs clang-format (scripts/install-deps.sh --test) and the git history back to BASE.
# To fix what it reports: git clang-format BASE (formats only the changed lines).
set -euo pipefail
cd "$(dirname "$0")/.."
base=${1:-1d647c058cf79a51f242355048a03d0cc4b6e2fa}
command -v git-clang-format >/dev/null || { echo "check-format: FAIL: git-clang-format not found (install clang-format)"; exit 1; }
# A shallow clone lacks the base: deepen it from its origin first (a no-op on a full clone).
if ! git rev-parse --verify -q "$base^{commit}" >/dev/null && [[ "$(git rev-parse --is-shallow-repository)" == true ]]; then
  git fetch -q --unshallow 2>/dev/null || true
fi
git rev-parse --verify -q "$base^{commit}" >/dev/null ||
  { echo "check-format: FAIL: base commit $base is not in this clone (fetch full history)"; exit 1; }
# Compares the working tree (a clean clone: HEAD) with the base.
out="$(git clang-format --diff --extensions c,cc,cpp,cxx,h,hpp "$base" -- 2>&1)" || true
case "$out" in
  ""|"no modified files to format"*|"clang-format did not modify any files"*)
    echo "check-format: PASS: lines changed since $base are formatted"; exit 0 ;;
esac
echo "$out"
echo "check-format: FAIL: the lines above, changed since $base, differ from .clang-format (fix: git clang-format $base)"
exit 1
