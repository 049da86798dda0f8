#!/usr/bin/env bash
# The README's second command: installs what the tests need (Debian packages; kube-apiserver,
# kubectl and helm built once from their pinned Go modules), builds everything and runs the
# whole ctest suite. Extra arguments go to ctest (e.g. -L unit).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh --test
for tool in scripts/build-kube-tools.sh scripts/build-helm.sh; do
  if [[ -x $tool || -f $tool ]]; then bash "$tool"; fi
done
bash scripts/build.sh build
cd build
ctest --output-on-failure --timeout 900 -j "${PPU_TEST_JOBS:-2}" "$@"
