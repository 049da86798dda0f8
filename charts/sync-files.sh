#!/usr/bin/env bash
# Copies the chart's single-source files into charts/ppu-operator/files and dashboards/: a Helm
# chart can only read files inside its own folder, and symlinks do not survive `helm package`.
# Sources of truth: manifests/crd/ppu.dev_ppujobs.yaml, manifests/samples/cpu-tiny.yaml (printed by
# NOTES.txt, so the install notes run a sample without a clone) and dashboards/*.json.
#
# Usage: charts/sync-files.sh          copy
#        charts/sync-files.sh --check  exit 1 (listing the files) when a copy differs or is stale
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CHART="$ROOT/charts/ppu-operator"

pairs=("$ROOT/manifests/crd/ppu.dev_ppujobs.yaml:$CHART/files/ppu.dev_ppujobs.yaml"
  "$ROOT/manifests/samples/cpu-tiny.yaml:$CHART/files/samples/cpu-tiny.yaml")
for f in "$ROOT"/dashboards/*.json; do pairs+=("$f:$CHART/dashboards/$(basename "$f")"); done

check=0
[[ "${1:-}" == "--check" ]] && check=1
bad=0
for p in "${pairs[@]}"; do
  src="${p%%:*}"
  dst="${p#*:}"
  if [[ $check == 1 ]]; then
    cmp -s "$src" "$dst" || {
      echo "out of date: ${dst#"$ROOT"/} (source ${src#"$ROOT"/})" >&2
      bad=1
    }
  else
    mkdir -p "$(dirname "$dst")"
    cp "$src" "$dst"
  fi
done
# A dashboard removed from dashboards/ must not linger in the chart.
for f in "$CHART"/dashboards/*.json; do
  [[ -e "$f" ]] || continue
  if [[ ! -e "$ROOT/dashboards/$(basename "$f")" ]]; then
    if [[ $check == 1 ]]; then
      echo "stale: ${f#"$ROOT"/}" >&2
      bad=1
    else rm -f "$f"; fi
  fi
done
if [[ $check == 1 && $bad == 1 ]]; then
  echo "run charts/sync-files.sh" >&2
  exit 1
fi
exit 0
