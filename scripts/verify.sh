#!/usr/bin/env bash
# One command for every generated or copied file: each generator checks that the tree holds what
# it would write now, and the script fails (listing the generators that found drift) if any
# differs. --fix rewrites them all instead, in dependency order (the CRD before its chart copy,
# the dashboards before theirs, the chart before the plain manifests rendered from it).
#   docs/CONFIG.md, docs/RUN_SUMMARY.md              ppu-schema (from the config and summary definitions)
#   manifests/crd/ppu.dev_ppujobs.yaml               ppu-crd (from the operator's spec and status types)
#   python/ppu/contract.json                         ppu-contract (exit codes, file names, summary and status fields)
#   dashboards/*.json                                dashboards/generate.py
#   manifests/samples/paper-*.yaml                   manifests/samples/generate.py (from configs/paper)
#   charts/ppu-operator/files, charts/.../dashboards charts/sync-files.sh (copies)
#   manifests/rbac, manifests/operator               manifests/generate.sh (helm template of the chart)
# Then the layering, word and contract-string lints (scripts/check-rooms.py, check-words.py,
# check-contract-strings.py). The ctest checks
# core.schema_files, operator.crd_file, operator.contract_file, packaging_generated_files, lint.rooms and lint.words run
# the same one by one; this is the command to run before a commit.
#
# Usage: scripts/verify.sh [--fix] [BUILD_DIR]   (BUILD_DIR default build/: its ppu-schema and ppu-crd)
#   HELM  helm binary (default: built/cached by scripts/build-helm.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
fix=0
if [[ "${1:-}" == --fix ]]; then
  fix=1
  shift
fi
build="${1:-build}"
for bin in ppu-schema ppu-crd ppu-contract; do
  [[ -x "$build/bin/$bin" ]] || {
    echo "verify: $build/bin/$bin is missing (build it: ninja -C $build $bin)" >&2
    exit 2
  }
done

drift=()
# run NAME CMD... : the generator in check mode, or in write mode with --fix.
run() {
  local name="$1"
  shift
  if ((fix)); then
    "$@" || {
      echo "verify: FAIL: $name could not write its files" >&2
      exit 1
    }
  elif ! "$@" >/dev/null 2>&1; then
    drift+=("$name")
  fi
}
mode() { if ((fix)); then echo "$1"; else echo "$2"; fi; }

run ppu-schema "$build/bin/ppu-schema" "$(mode --write --check)" .
run ppu-crd "$build/bin/ppu-crd" "$(mode --write --check)" .
run ppu-contract "$build/bin/ppu-contract" "$(mode --write --check)" .
if ((fix)); then
  run dashboards python3 dashboards/generate.py
  run samples python3 manifests/samples/generate.py
  run chart-copies charts/sync-files.sh
  run plain-manifests manifests/generate.sh
else
  run dashboards python3 dashboards/generate.py --check
  run samples python3 manifests/samples/generate.py --check
  run chart-copies charts/sync-files.sh --check
  run plain-manifests manifests/generate.sh --check
fi

# The layering, word and contract-string lints (lint.rooms, lint.words, lint.contract_strings):
# nothing to regenerate, only to check.
run rooms python3 scripts/check-rooms.py .
run words python3 scripts/check-words.py .
run contract-strings python3 scripts/check-contract-strings.py .

if ((fix)); then
  echo "verify: every generated file rewritten; rooms, words and contract strings checked"
elif ((${#drift[@]})); then
  echo "verify: FAIL: out of date: ${drift[*]} (fix: bash scripts/verify.sh --fix)"
  exit 1
else
  echo "verify: PASS: every generated file equals what its generator writes; rooms, words and contract strings clean"
fi
