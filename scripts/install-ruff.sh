#!/usr/bin/env bash
# Installs ruff, the Python linter and formatter scripts/check-scripts.sh runs (rules in
# ruff.toml), from PyPI at a pinned version, once, into its own virtual environment in a cache
# dir, the way install-checkov.sh installs checkov. ruff is one binary with no Python
# dependencies, so the pin below is the whole environment. A lint tool, never product code;
# scripts/install-deps.sh --test runs this script.
#
# Usage: scripts/install-ruff.sh [--print-path] [--force]
#   PPU_RUFF_VERSION  ruff version (default below)
#   PPU_TOOLS_DIR     cache root (default: $HOME/.cache/ppu-tools); the venv is
#                     <root>/ruff-<version>, the binary <root>/ruff-<version>/bin/ruff
#   PYTHON            interpreter that creates the venv (default python3; Debian needs
#                     python3-venv, which install-deps.sh --test installs)
# Prints the path of the ruff binary on its last line. Needs the network only to install.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

VERSION="${PPU_RUFF_VERSION:-0.17.6}"
OUT="$PPU_TOOLS_CACHE/ruff-$VERSION"
BIN="$OUT/bin/ruff"

ppu_tool_flags install-ruff 2,14 --print-path -- "$@"
if [[ $PRINT_ONLY == 1 ]]; then
  echo "$BIN"
  exit 0
fi

ppu_lock "$PPU_TOOLS_CACHE/.ruff-$VERSION.lock"
if [[ $FORCE == 1 || ! -f "$OUT/.installed" || ! -x "$BIN" ]]; then
  ppu_venv_install install-ruff "$OUT" "${PYTHON:-python3}" -- "ruff==$VERSION"
fi
got="$("$BIN" --version)"
[[ "$got" == "ruff $VERSION" ]] || ppu_die install-ruff "$BIN reports '$got', expected ruff $VERSION (rerun with --force)"
echo "$BIN"
