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

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REQS="$HERE/hf-requirements.txt"
ROOT_CACHE="${PPU_TOOLS_DIR:-${HOME:-/root}/.cache/ppu-tools}"
OUT="$ROOT_CACHE/hf-$(sha256sum "$REQS" | cut -c1-12)"
PY="$OUT/bin/python"

PRINT_ONLY=0; FORCE=0
for a in "$@"; do
  case "$a" in
    --print-path) PRINT_ONLY=1 ;;
    --force) FORCE=1 ;;
    -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
    *) echo "install-hf-venv: unknown flag '$a' (try --help)" >&2; exit 2 ;;
  esac
done
if [[ $PRINT_ONLY == 1 ]]; then echo "$PY"; exit 0; fi

mkdir -p "$ROOT_CACHE"
exec 9>"$OUT.lock"
flock 9
if [[ $FORCE == 1 || ! -f "$OUT/.installed" ]]; then
  start=$(date +%s)
  echo "install-hf-venv: installing $REQS into $OUT" >&2
  rm -rf "$OUT"
  /usr/bin/python3 -m venv --system-site-packages "$OUT" \
    || { echo "install-hf-venv: venv failed (Debian: apt-get install python3-venv)" >&2; exit 1; }
  PIP_DISABLE_PIP_VERSION_CHECK=1 "$OUT/bin/pip" install --quiet --no-cache-dir -r "$REQS"
  touch "$OUT/.installed"
  echo "install-hf-venv: installed in $(( $(date +%s) - start )) s" >&2
fi
"$PY" -c 'import torch, transformers, tokenizers, sentencepiece' \
  || { echo "install-hf-venv: $OUT cannot import torch/transformers (is python3-torch installed? rerun with --force)" >&2; exit 1; }
echo "$PY"
