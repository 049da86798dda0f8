#!/usr/bin/env bash
# Single sources of truth stay single: every copied or generated packaging file must equal what
# its generator writes now.
#   charts/ppu-operator/files/ppu.dev_ppujobs.yaml == manifests/crd/ppu.dev_ppujobs.yaml
#   charts/ppu-operator/files/samples/cpu-tiny.yaml == manifests/samples/cpu-tiny.yaml (NOTES.txt)
#   charts/ppu-operator/dashboards/*.json          == dashboards/*.json
#   dashboards/*.json                               == dashboards/generate.py
#   manifests/samples/paper-*.yaml                  == configs/paper/*.yaml via generate.py
#   manifests/{rbac,operator}/*.yaml                == helm template of the chart
set -euo pipefail
source "$(dirname "$0")/lib.sh"
"$ROOT/charts/sync-files.sh" --check || fail "chart copies out of date"
pass "chart's CRD, sample and dashboard copies equal their sources"
python3 "$ROOT/dashboards/generate.py" --check || fail "dashboards out of date"
pass "dashboards/*.json equal dashboards/generate.py's output"
python3 "$ROOT/manifests/samples/generate.py" --check || fail "samples out of date"
pass "paper samples equal configs/paper/*.yaml"
HELM="$(helm_bin)" "$ROOT/manifests/generate.sh" --check || fail "plain manifests out of date"
pass "manifests/rbac and manifests/operator equal the chart's rendering"
# Each dashboard is valid JSON with a unique uid.
python3 - "$ROOT/dashboards" <<'PY' || fail "dashboard JSON invalid or uids not unique"
import json, pathlib, sys
uids = [json.loads(f.read_text())["uid"] for f in sorted(pathlib.Path(sys.argv[1]).glob("*.json"))]
assert len(uids) == 5 and len(set(uids)) == len(uids), uids
PY
pass "five dashboards with unique uids"
echo "generated_files_test: all checks passed"
