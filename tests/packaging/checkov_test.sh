#!/usr/bin/env bash
# Peer policy suite over the chart: checkov (pinned, installed by scripts/install-deps.sh --test
# through scripts/install-checkov.sh) runs its Kubernetes checks over `helm template` of the chart
# and the test fails on any finding that tests/packaging/checkov-skips.yaml does not accept with a
# reason. Two renders:
#   default   the chart's defaults: failed checks must be exactly the skip list (a new finding
#             fails; so does a listed one that no longer fails, i.e. a stale skip);
#   hardened  the optional objects on (namespace scope, 2 replicas, ServiceMonitor, PodMonitor)
#             plus every `fixed_by` value of the skip list: the checks those values fix must
#             pass, and nothing outside the skip list may fail.
# checkov reads only the rendered files: no Prisma Cloud/Bridgecrew API key (unset), no download
# (--skip-download), no update check (CKV_SKIP_PACKAGE_UPDATE_CHECK), and where the kernel lets
# us, it runs in a network namespace of its own with no interface up (unshare -n), so any
# attempt to reach the network would fail the run.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
HELM="$(helm_bin)"
CHART="$ROOT/charts/ppu-operator"
SKIPS="$ROOT/tests/packaging/checkov-skips.yaml"
CHECKOV="$("$ROOT/scripts/install-checkov.sh" --print-path)"
[[ -x "$CHECKOV" ]] || fail "checkov not installed at $CHECKOV: run scripts/install-deps.sh --test (or scripts/install-checkov.sh) as the user that runs the tests"
PY="$(dirname "$CHECKOV")/python" # the venv's interpreter: it has PyYAML (a checkov dependency)
W="$(mktemp -d)"
trap 'rm -rf "$W"' EXIT

NONET=()
if unshare -n true 2>/dev/null; then
  NONET=(unshare -n)
elif unshare -rn true 2>/dev/null; then
  NONET=(unshare -rn)
fi
if ((${#NONET[@]})); then
  pass "checkov runs without network (${NONET[*]})"
else echo "note: no network namespace available; relying on --skip-download and no API key"; fi

# checkov's import checks PyPI for a newer version unless CKV_SKIP_PACKAGE_UPDATE_CHECK is set.
ckv() { env -u BC_API_KEY -u PRISMA_API_URL CKV_SKIP_PACKAGE_UPDATE_CHECK=true "${NONET[@]}" "$CHECKOV" "$@"; }

scan() { # scan NAME helm-args...: renders into $W/NAME/chart.yaml, checkov JSON to $W/NAME.json
  local name="$1"
  shift
  mkdir -p "$W/$name"
  "$HELM" template ppu "$CHART" -n ppu-system "$@" >"$W/$name/chart.yaml" || fail "helm template ($name)"
  # --soft-fail: exit 0 with findings, so a non-zero status means checkov itself failed.
  (cd "$W/$name" && ckv --framework kubernetes -f chart.yaml --skip-download --soft-fail \
    --output json >"$W/$name.json" 2>"$W/$name.err") \
    || {
      cat "$W/$name.err" >&2
      fail "checkov did not run ($name)"
    }
}

# The fixed_by values of the skip list, as helm --set arguments.
mapfile -t FIXES < <(
  "$PY" - "$SKIPS" <<'PY'
import sys, yaml
for s in yaml.safe_load(open(sys.argv[1]))["skips"]:
    for k, v in (s.get("fixed_by") or {}).items():
        print("--set"); print(f"{k}={v}")
PY
)
scan default
scan hardened --set scope=namespace --set watchNamespace=team-a --set replicas=2 \
  --set serviceMonitor.enabled=true --set podMonitor.enabled=true "${FIXES[@]}"
want="${CHECKOV%/bin/checkov}"
want="${want##*/checkov-}"
got="$(ckv --version | tail -1)"
[[ "$got" == "$want" ]] || fail "checkov at $CHECKOV reports version '$got', expected $want (rerun scripts/install-checkov.sh --force)"
pass "checkov $got (the version scripts/install-checkov.sh pins)"

"$PY" - "$SKIPS" "$W/default.json" "$W/hardened.json" <<'PY'
import json, re, sys, yaml

skips_file, default_json, hardened_json = sys.argv[1:]
errors = []

spec = yaml.safe_load(open(skips_file))
skips = {}
for s in spec["skips"]:
    cid = s.get("id", "")
    if not re.fullmatch(r"CKV2?_K8S_\d+", cid):
        errors.append(f"skip list: bad check id {cid!r}")
    if cid in skips:
        errors.append(f"skip list: {cid} listed twice")
    if len(str(s.get("reason", "")).split()) < 8:
        errors.append(f"skip list: {cid} has no reason (a sentence saying why it is accepted)")
    skips[cid] = s
fixed = {cid for cid, s in skips.items() if s.get("fixed_by")}

def load(path, name):
    d = json.load(open(path))
    if isinstance(d, list):  # one report per framework; we ran only kubernetes
        d = next((x for x in d if x.get("check_type") == "kubernetes"), {})
    r = d.get("results") or {}
    s = d.get("summary") or {}
    if s.get("parsing_errors") or r.get("parsing_errors"):
        errors.append(f"{name}: checkov could not parse the render: {r.get('parsing_errors')}")
    passed, failed = r.get("passed_checks", []), r.get("failed_checks", [])
    # Sanity: the render was really scanned (Deployment, RBAC, Service, NetworkPolicy, ...).
    if s.get("resource_count", 0) < 10 or len(passed) < 50:
        errors.append(f"{name}: checkov scanned too little ({s.get('resource_count')} resources, "
                      f"{len(passed)} passed checks): is the render empty?")
    if not any(c["resource"].startswith("Deployment.") for c in passed):
        errors.append(f"{name}: no check ran on the operator Deployment")
    # Inline suppressions (checkov.io/skip annotations) would bypass this file.
    for c in r.get("skipped_checks", []):
        errors.append(f"{name}: {c['check_id']} on {c['resource']} skipped inline (checkov.io/skip "
                      "annotation); accept findings only in tests/packaging/checkov-skips.yaml")
    print(f"{name}: {s.get('resource_count')} resources, {len(passed)} checks passed, "
          f"{len(failed)} failed")
    return passed, failed

def describe(c):
    lines = c.get("file_line_range") or ["?", "?"]
    return f"{c['check_id']} \"{c['check_name']}\" on {c['resource']} (chart.yaml lines {lines[0]}-{lines[1]})"

passed, failed = load(default_json, "default")
failed_ids = {c["check_id"] for c in failed}
for c in failed:
    if c["check_id"] not in skips:
        errors.append("default: new finding " + describe(c) + "; fix the chart, or accept it with a "
                      "reason in tests/packaging/checkov-skips.yaml")
for cid in sorted(set(skips) - failed_ids):
    errors.append(f"default: {cid} is in the skip list but no longer fails; remove the entry")
for cid in sorted(set(skips) & failed_ids):
    print(f"accepted: {cid} ({skips[cid].get('check', '')}): {' '.join(str(skips[cid]['reason']).split())}")

hpassed, hfailed = load(hardened_json, "hardened")
for c in hfailed:
    if c["check_id"] not in skips:
        errors.append("hardened: new finding " + describe(c))
    elif c["check_id"] in fixed:
        errors.append(f"hardened: {c['check_id']} still fails with its fixed_by values "
                      f"{skips[c['check_id']]['fixed_by']}: " + describe(c))
hpassed_ids = {c["check_id"] for c in hpassed}
for cid in sorted(fixed):
    if cid not in hpassed_ids:
        errors.append(f"hardened: {cid} did not run or did not pass with {skips[cid]['fixed_by']}")
    else:
        print(f"fixed by values: {cid} passes with {skips[cid]['fixed_by']}")

for e in errors:
    print("FAIL: " + e, file=sys.stderr)
sys.exit(1 if errors else 0)
PY
pass "checkov: no finding beyond the documented skips; fixed_by values fix theirs"
echo "checkov_test: all checks passed"
