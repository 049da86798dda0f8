#!/usr/bin/env bash
# The README's first command: installs what it needs, builds the runtime, and runs a short
# local PPU training job (configs/demo.yaml: 4 ranks on the built-in synthetic corpus), then
# prints loss, perplexity (next to the corpus's exact floor), memory and FLOPs savings
# (scripts/demo_report.py).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh build -DPPU_BUILD_OPERATOR=OFF -DPPU_BUILD_TESTS=OFF
out=$(mktemp -d)
./build/bin/ppu-launch --config configs/demo.yaml --summary-dir "$out" "$@"
python3 scripts/demo_report.py "$out"
