#!/usr/bin/env bash
# Lint and formatting of every shell script and Python file in the repository, in three parts:
#   part shellcheck: ShellCheck (Debian's; settings in .shellcheckrc)        ctest lint.shell (unit)
#   part shfmt: shfmt -d (scripts/build-shfmt.sh; options in .editorconfig)  ctest format.shell (lint)
#   part ruff: ruff check and ruff format --check (scripts/install-ruff.sh; rules in ruff.toml)
#                                                                             ctest lint.python (unit)
# The shell scripts are every tracked *.sh and every tracked file without an extension whose
# first line is a bash or sh shebang (.ci/run); the Python files every tracked *.py and every
# such file with a python shebang. Left out: the paths in EXCLUDED below.
#
# Usage: scripts/check-scripts.sh [shellcheck|shfmt|ruff]... [--fix]
#   no part named: all three. --fix rewrites what the tools can (shfmt -w, ruff format, ruff's
#   safe fixes such as import order), then checks; ShellCheck's findings are fixed by hand.
#   SHFMT, RUFF   binaries to use instead of the pinned ones
# Needs a git checkout (the file list is `git ls-files`). Prints "check-scripts: PASS ..." or
# "check-scripts: FAIL ..." last. A missing tool is a FAIL naming the command that installs it:
# scripts/install-deps.sh --test installs all three.
set -euo pipefail
cd "$(dirname "$0")/.."

# Paths left out of every check (none today); ruff.toml's extend-exclude must list the same.
EXCLUDED=()

fix=0
parts=()
for a in "$@"; do
  case "$a" in
    --fix) fix=1 ;;
    shellcheck | shfmt | ruff) parts+=("$a") ;;
    -h | --help)
      sed -n '2,17p' "$0"
      exit 0
      ;;
    *)
      echo "check-scripts: unknown argument '$a' (try --help)" >&2
      exit 2
      ;;
  esac
done
((${#parts[@]})) || parts=(shellcheck shfmt ruff)

fail() {
  echo "check-scripts: FAIL: $*"
  exit 1
}

excluded() {
  local e
  for e in "${EXCLUDED[@]}"; do [[ "$1" == "$e"* ]] && return 0; done
  return 1
}

shell_files=()
python_files=()
mapfile -t tracked < <(git ls-files)
((${#tracked[@]})) || fail "no tracked files (not a git checkout?)"
for f in "${tracked[@]}"; do
  excluded "$f" && continue
  case "$f" in
    *.sh)
      shell_files+=("$f")
      continue
      ;;
    *.py)
      python_files+=("$f")
      continue
      ;;
  esac
  [[ "${f##*/}" != *.* && -f "$f" ]] || continue
  first=""
  IFS= read -r first <"$f" || true
  case "$first" in
    '#!'*python*) python_files+=("$f") ;;
    '#!'*bash* | '#!'*/sh | '#!'*' sh') shell_files+=("$f") ;;
  esac
done

summary=()
for part in "${parts[@]}"; do
  case "$part" in
    shellcheck)
      command -v shellcheck >/dev/null \
        || fail "shellcheck not found (install: apt-get install shellcheck, or bash scripts/install-deps.sh --test)"
      version="$(shellcheck --version | sed -n 's/^version: //p')"
      if ! shellcheck "${shell_files[@]}"; then
        fail "ShellCheck $version reported the findings above in ${#shell_files[@]} shell scripts (fix them; a deliberate one: '# shellcheck disable=SCxxxx # why' on its line)"
      fi
      summary+=("ShellCheck $version: ${#shell_files[@]} shell scripts clean")
      ;;
    shfmt)
      shfmt="${SHFMT:-$(scripts/build-shfmt.sh --print-path)}"
      [[ -x "$shfmt" ]] \
        || fail "shfmt not found at $shfmt (install: bash scripts/build-shfmt.sh, or bash scripts/install-deps.sh --test)"
      version="$("$shfmt" --version)"
      # No formatting flags: shfmt reads them from .editorconfig, as editors do.
      ((fix)) && "$shfmt" -w "${shell_files[@]}"
      if ! "$shfmt" -d "${shell_files[@]}"; then
        fail "shfmt $version would reformat the shell scripts above (fix: bash scripts/check-scripts.sh shfmt --fix)"
      fi
      summary+=("shfmt $version: ${#shell_files[@]} shell scripts formatted")
      ;;
    ruff)
      ruff="${RUFF:-$(scripts/install-ruff.sh --print-path)}"
      [[ -x "$ruff" ]] \
        || fail "ruff not found at $ruff (install: bash scripts/install-ruff.sh, or bash scripts/install-deps.sh --test)"
      version="$("$ruff" --version)"
      # --no-cache: nothing written into the checkout; --force-exclude: ruff.toml's exclusions
      # hold for files named on the command line too.
      if ((fix)); then
        "$ruff" check --no-cache --force-exclude --fix --quiet "${python_files[@]}" || true
        "$ruff" format --no-cache --force-exclude --quiet "${python_files[@]}"
      fi
      if ! "$ruff" check --no-cache --force-exclude --quiet "${python_files[@]}"; then
        fail "$version reported the findings above in ${#python_files[@]} Python files (fix them; a deliberate one: '# noqa: CODE  (why)' on its line)"
      fi
      if ! "$ruff" format --no-cache --force-exclude --check --diff --quiet "${python_files[@]}"; then
        fail "$version format would reformat the Python files above (fix: bash scripts/check-scripts.sh ruff --fix)"
      fi
      summary+=("$version: ${#python_files[@]} Python files clean and formatted")
      ;;
  esac
done
printf -v joined '%s; ' "${summary[@]}"
echo "check-scripts: PASS: ${joined%; }"
