#!/usr/bin/env bash
# Builds the Go-built tools of the default suite's fixtures, each once into its cache:
# SeaweedFS (objectstore.seaweedfs), kube-apiserver and kubectl (operator.kube_tools), helm
# (packaging.helm). The fixtures run after the tool-free process tests (tests/CMakeLists.txt).
# scripts/test.sh runs it in the background at idle CPU priority while it builds the project and
# runs the suite; each build script holds its own lock, so a fixture that needs a tool still being
# built here waits for it (and its idle slot lets this build run) instead of building it twice.
# Stops at the first tool that fails to build; the fixture then builds it again in the foreground
# and fails with the build's own error.
#
# Usage: scripts/build-test-tools.sh
set -euo pipefail
cd "$(dirname "$0")"
for tool in build-seaweedfs.sh build-kube-tools.sh build-helm.sh; do
  start=$(date +%s)
  bash "$tool" >/dev/null
  echo "build-test-tools: $tool done in $(($(date +%s) - start)) s"
done
