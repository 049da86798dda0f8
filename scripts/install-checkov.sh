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
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

PINNED=3.3.30
VERSION="${PPU_CHECKOV_VERSION:-$PINNED}"
OUT="$PPU_TOOLS_CACHE/checkov-$VERSION"
BIN="$OUT/bin/checkov"

ppu_tool_flags install-checkov 2,14 --print-path -- "$@"
if [[ $PRINT_ONLY == 1 ]]; then
  echo "$BIN"
  exit 0
fi

ppu_lock "$PPU_TOOLS_CACHE/.checkov-$VERSION.lock"
if [[ $FORCE == 1 || ! -f "$OUT/.installed" || ! -x "$BIN" ]]; then
  constraints=()
  [[ "$VERSION" == "$PINNED" ]] && constraints=(-c "$PPU_REPO/scripts/checkov-constraints.txt")
  ppu_venv_install install-checkov "$OUT" "${PYTHON:-python3}" -- "${constraints[@]}" "checkov==$VERSION"
fi
got="$(CKV_SKIP_PACKAGE_UPDATE_CHECK=true "$BIN" --version 2>/dev/null | tail -1)"
[[ "$got" == "$VERSION" ]] || ppu_die install-checkov "$BIN reports '$got', expected $VERSION (rerun with --force)"
echo "$BIN"
