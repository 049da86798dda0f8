#!/usr/bin/env bash
# Installs checkov (the policy scanner tests/packaging/checkov_test.sh runs over the rendered Helm
# chart) from PyPI at a pinned version, once, into its own virtual environment in a cache dir.
# Its dependencies are pinned too (scripts/checkov-constraints.txt, what `pip freeze` listed
# after installing this version), so a fresh machine gets the same scanner as the last one.
# checkov is a test tool, never product code; scripts/install-deps.sh --test runs this script.
#
# Usage: scripts/install-checkov.sh [--print-path] [--force]
#   PPU_CHECKOV_VERSION  checkov version (default below; the constraints apply to that one only)
#   PPU_TOOLS_DIR        cache root (default: $HOME/.cache/ppu-tools); the venv is
#                        <root>/checkov-<version>, the binary <root>/checkov-<version>/bin/checkov
#   PYTHON               interpreter that creates the venv (default python3; Debian needs
#                        python3-venv, which install-deps.sh --test installs)
# Prints the path of the checkov binary on its last line. Needs the network only to install.
set -euo pipefail

PINNED=3.3.30
VERSION="${PPU_CHECKOV_VERSION:-$PINNED}"
ROOT_CACHE="${PPU_TOOLS_DIR:-${HOME:-/root}/.cache/ppu-tools}"
OUT="$ROOT_CACHE/checkov-$VERSION"
BIN="$OUT/bin/checkov"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

PRINT_ONLY=0; FORCE=0
for a in "$@"; do
  case "$a" in
    --print-path) PRINT_ONLY=1 ;;
    --force) FORCE=1 ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    *) echo "install-checkov: unknown flag '$a' (try --help)" >&2; exit 2 ;;
  esac
done
if [[ $PRINT_ONLY == 1 ]]; then echo "$BIN"; exit 0; fi

mkdir -p "$ROOT_CACHE"
# Serialise concurrent callers; a venv cannot be moved once made, so it is built in place and
# marked complete (.installed) only after pip succeeded.
exec 9>"$ROOT_CACHE/.checkov-$VERSION.lock"
flock 9

if [[ $FORCE == 1 || ! -f "$OUT/.installed" || ! -x "$BIN" ]]; then
  start=$(date +%s)
  echo "install-checkov: installing checkov $VERSION into $OUT" >&2
  rm -rf "$OUT"
  "${PYTHON:-python3}" -m venv "$OUT" \
    || { echo "install-checkov: '${PYTHON:-python3} -m venv' failed (Debian: apt-get install python3-venv)" >&2; exit 1; }
  constraints=()
  [[ "$VERSION" == "$PINNED" ]] && constraints=(-c "$HERE/checkov-constraints.txt")
  PIP_DISABLE_PIP_VERSION_CHECK=1 "$OUT/bin/pip" install --quiet --no-cache-dir \
    "${constraints[@]}" "checkov==$VERSION"
  touch "$OUT/.installed"
  echo "install-checkov: installed in $(( $(date +%s) - start )) s" >&2
fi
got="$(CKV_SKIP_PACKAGE_UPDATE_CHECK=true "$BIN" --version 2>/dev/null | tail -1)"
[[ "$got" == "$VERSION" ]] || { echo "install-checkov: $BIN reports '$got', expected $VERSION (rerun with --force)" >&2; exit 1; }
echo "$BIN"
