#!/usr/bin/env bash
# Run on a Debian bookworm machine WITH network, before a GPU session: downloads (does not
# install) the .deb files that scripts/gpu-run.sh unpacks on a bare CUDA machine that has
# PyTorch 2.x, nvcc, CMake and ninja but no network and none of our other dependencies.
# Usage: scripts/fetch-gpu-debs.sh [DIR]   (default: .gpu-debs, ignored by git via
# .git/info/exclude; name it in the device tool's `carry`).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-.gpu-debs}
mkdir -p "$dir"
# -dev packages for headers and CMake/pkg-config files, their shared libraries for linking
# and running, and what their CMake configs look for (prometheus-cpp finds CURL, ZLIB,
# civetweb; cpp-httplib's .pc names brotli, ssl, zlib). pkgconf: find_package(PkgConfig).
# protobuf: ppu-export reads the SentencePiece model proto with it (export/hf_tokenizer.h).
# jemalloc: every LibTorch binary links it (runtime/engine/cpu/allocator_config.cpp).
# libgloo-dev: c10d's ProcessGroupGloo.hpp includes gloo headers, which the PyTorch wheel lacks.
# libssl3: cpp-httplib needs libssl.so.3; gpu-run.sh uses it only if the machine has none.
pkgs=(
  libyaml-cpp-dev libyaml-cpp0.7
  libspdlog-dev libspdlog1.10 libfmt-dev libfmt9
  prometheus-cpp-dev libprometheus-cpp-core1.0 libprometheus-cpp-pull1.0 libprometheus-cpp-push1.0
  civetweb libcivetweb-dev libcivetweb1 libcurl4-openssl-dev libcurl4 zlib1g-dev libbrotli-dev libbrotli1 libssl-dev
  libsentencepiece-dev libsentencepiece0
  libprotobuf-dev libprotobuf32 libprotobuf-lite32
  nlohmann-json3-dev libcli11-dev
  libcpp-httplib-dev libcpp-httplib0.11
  libgtest-dev libgmock-dev googletest
  libjemalloc-dev libjemalloc2
  libgloo-dev
  libssl3
  pkgconf pkgconf-bin libpkgconf3
)
missing=()
for p in "${pkgs[@]}"; do
  if ! apt-cache show "$p" >/dev/null 2>&1; then missing+=("$p"); fi
done
if ((${#missing[@]})); then
  echo "fetch-gpu-debs: not in this machine's apt sources: ${missing[*]} (run apt-get update?)" >&2
  exit 1
fi
(cd "$dir" && apt-get download "${pkgs[@]}")
debs=("$dir"/*.deb)
echo "fetch-gpu-debs: .deb files in $dir: ${#debs[@]}"
du -sh "$dir"
