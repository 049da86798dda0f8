#!/usr/bin/env bash
# Installs the Debian packages the build, the demo and the test suite need (DESIGN.md, "Dependencies").
# Idempotent: packages already present are left alone; needs root (or sudo) on Debian bookworm.
set -euo pipefail
PKGS=(
  build-essential cmake ninja-build pkg-config git curl ca-certificates
  libtorch-dev libopenblas0-openmp libopenblas-dev
  prometheus-cpp-dev libyaml-cpp-dev libspdlog-dev libfmt-dev
  libsentencepiece-dev sentencepiece nlohmann-json3-dev libcurl4-openssl-dev libssl-dev
  libgtest-dev libgmock-dev libcli11-dev libgloo-dev libcpp-httplib-dev libcivetweb-dev libjemalloc-dev
)
if [[ "${1:-}" == "--test" ]]; then PKGS+=(etcd-server prometheus openssl python3); fi
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  SUDO=""; [[ $(id -u) -ne 0 ]] && SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
