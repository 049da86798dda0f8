#!/usr/bin/env bash
# Installs the Hugging Face stack the export tests use (transformers, tokenizers, sentencepiece:
# scripts/hf-requirements.txt, every version pinned) from PyPI, once, into a virtual environment
# over Debian's /usr/bin/python3, whose python3-torch (scripts/install-deps.sh --test) it sees
# through --system-site-packages. A test tool, never product code. The venv is keyed by the
# requirements' hash, so changing a pin installs a fresh one.
#
# Usage: scripts/install-hf-venv.sh [--print-path] [--force]
#   PPU_TOOLS_DIR  cache root (default: $HOME/.cache/ppu-tools); the venv is <root>/hf-<hash>
# Prints the venv's python on its last line. Needs the network only to install.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

REQS="$PPU_REPO/scripts/hf-requirements.txt"
OUT="$PPU_TOOLS_CACHE/hf-$(sha256sum "$REQS" | cut -c1-12)"
PY="$OUT/bin/python"

ppu_tool_flags install-hf-venv 2,10 --print-path -- "$@"
if [[ $PRINT_ONLY == 1 ]]; then
  echo "$PY"
  exit 0
fi

ppu_lock "$OUT.lock"
if [[ $FORCE == 1 || ! -f "$OUT/.installed" ]]; then
  ppu_venv_install install-hf-venv "$OUT" /usr/bin/python3 --system-site-packages -- -r "$REQS"
fi
"$PY" -c 'import torch, transformers, tokenizers, sentencepiece' \
  || ppu_die install-hf-venv "$OUT cannot import torch/transformers (is python3-torch installed? rerun with --force)"
echo "$PY"
