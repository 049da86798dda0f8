#!/usr/bin/env bash
# Configures and builds everything into BUILD_DIR (default: build). Extra arguments go to cmake,
# e.g. scripts/build.sh build -DPPU_BUILD_OPERATOR=OFF. The Dockerfile runs this same script.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${1:-build}
shift || true
JOBS=${PPU_BUILD_JOBS:-$(nproc)}
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release "$@"
cmake --build "$BUILD_DIR" -j "$JOBS"
