#!/usr/bin/env bash
# Chart test: helm lint; helm template with default and non-default values (asserting the
# rendered RBAC, flags and security posture); values.schema.json rejecting wrong values; and the
# rendered manifests accepted by a real kube-apiserver (server-side dry run, plus a real install
# whose ServiceAccount is then checked for least privilege with `kubectl auth can-i`).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
HELM="$(helm_bin)"
CHART="$ROOT/charts/ppu-operator"
W="$(mktemp -d)"

# --- lint ---------------------------------------------------------------------------------
"$HELM" lint --strict "$CHART" >"$W/lint.txt" 2>&1 || { cat "$W/lint.txt"; fail "helm lint --strict"; }
"$HELM" lint --strict "$CHART" --set scope=namespace --set replicas=3 --set serviceMonitor.enabled=true \
  --set podMonitor.enabled=true >"$W/lint2.txt" 2>&1 || { cat "$W/lint2.txt"; fail "helm lint (non-default)"; }
pass "helm lint --strict, default and non-default values"

# --- default render -----------------------------------------------------------------------
"$HELM" template ppu "$CHART" -n ppu-system >"$W/default.yaml"
D="$W/default.yaml"
for k in CustomResourceDefinition ServiceAccount ClusterRole ClusterRoleBinding Role RoleBinding Deployment Service ConfigMap; do
  expect_grep "^kind: $k$" "$D" "default render has a $k"
done
expect_no_grep "^kind: (ServiceMonitor|PodMonitor)$" "$D" "no Prometheus Operator objects by default"
expect_no_grep "--leader-elect" "$D" "one replica: no --leader-elect"
expect_no_grep "- --namespace=" "$D" "cluster scope: no --namespace"
expect_grep "^  replicas: 1$" "$D" "one operator replica"
expect_grep "command: \[ppu-operator\]" "$D" "runs ppu-operator"
expect_grep "--metrics-addr=:8080" "$D" "--metrics-addr"
expect_grep "--health-addr=:8081" "$D" "--health-addr"
expect_grep "runAsNonRoot: true" "$D" "runAsNonRoot"
expect_grep "readOnlyRootFilesystem: true" "$D" "readOnlyRootFilesystem"
expect_grep "allowPrivilegeEscalation: false" "$D" "allowPrivilegeEscalation false"
expect_grep "^ +- ALL$" "$D" "drops ALL capabilities"
expect_grep "type: RuntimeDefault" "$D" "seccomp RuntimeDefault"
expect_grep "path: /healthz" "$D" "liveness /healthz"
expect_grep "path: /readyz" "$D" "readiness /readyz"
expect_grep "memory: 64Mi" "$D" "resource requests"
expect_grep "grafana_dashboard: \"1\"" "$D" "dashboards ConfigMap labelled for the Grafana sidecar"
for f in "$ROOT"/dashboards/*.json; do expect_grep "^  $(basename "$f"): \|-$" "$D" "dashboard $(basename "$f") in the ConfigMap"; done
expect_grep "helm.sh/resource-policy: keep" "$D" "CRD kept on uninstall"
expect_no_grep "secrets|nodes|\"\\*\"|- '\\*'" "$D" "RBAC names no secrets, nodes or wildcards"
# Security defaults (docs/SECURITY.md): /metrics authenticated, a NetworkPolicy per job.
expect_grep "- --metrics-auth=token$" "$D" "/metrics requires a token by default"
expect_grep "- --network-policy=true$" "$D" "NetworkPolicy per PPUJob by default"
expect_grep "- --metrics-namespaces=ppu-system,monitoring$" "$D" "rank metrics scrapeable from the release and monitoring namespaces"
expect_grep "resources: \[networkpolicies\]" "$D" "RBAC for the per-job NetworkPolicy"
expect_grep "resources: \[tokenreviews\]" "$D" "RBAC to create TokenReviews"
expect_grep "resources: \[subjectaccessreviews\]" "$D" "RBAC to create SubjectAccessReviews"
expect_grep "nonResourceURLs: \[/metrics\]" "$D" "a metrics-reader ClusterRole"
expect_grep "^  name: ppu-ppu-operator-metrics-reader$" "$D" "metrics-reader named after the release"
# The dashboard JSON must survive the ConfigMap rendering byte for byte.
python3 - "$D" "$ROOT/dashboards" <<'PY' || fail "dashboards in the ConfigMap differ from dashboards/*.json"
import json, pathlib, re, sys
text = pathlib.Path(sys.argv[1]).read_text()
doc = next(d for d in text.split("\n---\n") if "grafana_dashboard" in d)
for f in sorted(pathlib.Path(sys.argv[2]).glob("*.json")):
    m = re.search(r"^  " + re.escape(f.name) + r": \|-\n((?:    .*\n|\n)+)", doc + "\n", re.M)
    assert m, f.name
    body = "\n".join(l[4:] for l in m.group(1).rstrip("\n").split("\n"))
    assert json.loads(body) == json.loads(f.read_text()), f.name
PY
pass "dashboards in the ConfigMap equal dashboards/*.json"

# --- non-default render: namespaced Role, 2 replicas, monitors, custom dashboard label --------
"$HELM" template ppu "$CHART" -n ppu-system --set scope=namespace --set watchNamespace=team-a \
  --set replicas=2 --set serviceMonitor.enabled=true --set podMonitor.enabled=true \
  --set dashboards.label=my_dashboards --set crds.install=false >"$W/ns.yaml"
N="$W/ns.yaml"
# Namespaced: the only cluster-scoped RBAC is what /metrics authentication needs (TokenReview and
# SubjectAccessReview are cluster-scoped) and the metrics-reader role.
python3 - "$N" <<'PY' || fail "namespaced install has cluster-scoped RBAC beyond /metrics authentication"
import re, sys
docs = open(sys.argv[1]).read().split("\n---\n")
names = sorted(re.search(r"^  name: (\S+)$", d, re.M).group(1) for d in docs if re.search(r"^kind: Cluster(Role|RoleBinding)$", d, re.M))
assert names == ["ppu-ppu-operator-metrics-auth", "ppu-ppu-operator-metrics-auth", "ppu-ppu-operator-metrics-reader"], names
PY
pass "namespaced install: cluster-scoped RBAC only for /metrics authentication"
expect_grep "bearerTokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token" "$N" "ServiceMonitor sends Prometheus's token"
expect_no_grep "^kind: CustomResourceDefinition$" "$N" "crds.install=false leaves the CRD out"
expect_grep "^kind: ServiceMonitor$" "$N" "ServiceMonitor rendered"
expect_grep "^kind: PodMonitor$" "$N" "PodMonitor rendered"
expect_grep "honorLabels: true" "$N" "ServiceMonitor keeps the per-job job/namespace labels"
expect_grep "^  namespace: team-a$" "$N" "Role in the watched namespace"
expect_grep "- --namespace=team-a" "$N" "--namespace=team-a"
expect_grep "- --leader-elect$" "$N" "replicas 2 ⇒ --leader-elect"
expect_grep "- --leader-elect-namespace=ppu-system" "$N" "Lease in the release namespace"
expect_grep "^  replicas: 2$" "$N" "two operator replicas"
expect_grep "my_dashboards: \"1\"" "$N" "dashboard label configurable"

# --- security features off: no NetworkPolicy RBAC, /metrics open, ServiceMonitor without a token ----
"$HELM" template ppu "$CHART" -n ppu-system --set networkPolicy.enabled=false --set metricsAuth.enabled=false \
  --set serviceMonitor.enabled=true >"$W/off.yaml"
O="$W/off.yaml"
expect_grep "- --network-policy=false$" "$O" "networkPolicy.enabled=false ⇒ --network-policy=false"
expect_grep "- --metrics-auth=none$" "$O" "metricsAuth.enabled=false ⇒ --metrics-auth=none"
expect_no_grep "networkpolicies|tokenreviews|subjectaccessreviews|nonResourceURLs|bearerTokenFile" "$O" "no RBAC or token for disabled features"
"$HELM" template ppu "$CHART" -n ppu-system --set "metricsAuth.readers[0].name=prometheus-k8s" \
  --set "metricsAuth.readers[0].namespace=monitoring" >"$W/readers.yaml"
python3 - "$W/readers.yaml" <<'PY' || fail "metricsAuth.readers not bound to the metrics-reader ClusterRole"
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
b = next(d for d in docs if d["kind"] == "ClusterRoleBinding" and d["metadata"]["name"] == "ppu-ppu-operator-metrics-reader")
assert b["roleRef"]["name"] == "ppu-ppu-operator-metrics-reader", b
assert b["subjects"] == [{"kind": "ServiceAccount", "name": "prometheus-k8s", "namespace": "monitoring"}], b
PY
pass "metricsAuth.readers bound to the metrics-reader ClusterRole"

# --- values.schema.json rejects wrong values --------------------------------------------------
reject() {  # what, helm --set args...
  local what="$1"; shift
  if "$HELM" template ppu "$CHART" "$@" >"$W/bad.yaml" 2>"$W/bad.err"; then
    fail "schema accepted $what ($*)"
  fi
  grep -q "values don't meet the specifications of the schema\|at '/" "$W/bad.err" \
    || { cat "$W/bad.err"; fail "rejection of $what is not a schema error"; }
  pass "schema rejects $what: $(grep -m1 -E "at '/|additional" "$W/bad.err" | sed 's/^ *- *//')"
}
reject "a string replica count" --set replicas=two
reject "zero replicas" --set replicas=0
reject "an unknown scope" --set scope=everywhere
reject "an unknown top-level key" --set replica=2
reject "privilege escalation" --set securityContext.allowPrivilegeEscalation=true
reject "running as root" --set podSecurityContext.runAsNonRoot=false
reject "a bad pull policy" --set image.pullPolicy=Sometimes
reject "a bad duration" --set operator.scrapeInterval=soon
reject "a port out of range" --set operator.metricsPort=70000
reject "a non-boolean metricsAuth.enabled" --set metricsAuth.enabled=maybe
reject "a bad metrics namespace" --set "networkPolicy.metricsNamespaces[0]=Bad_NS"
reject "a reader without a namespace" --set "metricsAuth.readers[0].name=prom"

# --- real kube-apiserver --------------------------------------------------------------------
start_kube "$W/kube"
K() { "$KUBECTL" --kubeconfig "$KUBECONFIG" "$@"; }
K apply -f "$ROOT/tests/packaging/fixtures/monitoring-crds.yaml" >/dev/null
K wait --for=condition=Established --timeout=60s crd/servicemonitors.monitoring.coreos.com crd/podmonitors.monitoring.coreos.com >/dev/null
K create namespace ppu-system >/dev/null
K create namespace team-a >/dev/null
K apply --dry-run=server -f "$D" >"$W/dry1.txt" 2>&1 || { cat "$W/dry1.txt"; fail "default render rejected by kube-apiserver"; }
pass "default render accepted (server-side dry run, $(grep -c . "$W/dry1.txt") objects)"
K apply --dry-run=server -f "$N" >"$W/dry2.txt" 2>&1 || { cat "$W/dry2.txt"; fail "non-default render rejected by kube-apiserver"; }
pass "non-default render accepted (server-side dry run)"

# Install for real and check what the operator's identity may and may not do.
K apply -f "$D" >/dev/null
SA=system:serviceaccount:ppu-system:ppu-ppu-operator
can() { K auth can-i --as="$SA" "$@" 2>/dev/null; }
for v in "list ppujobs.ppu.dev -A" "watch ppujobs.ppu.dev -A" "update ppujobs.ppu.dev/status -n x" \
         "create pods -n x" "delete pods -n x" "create services -n x" "patch configmaps -n x" \
         "create events -n x" "update leases.coordination.k8s.io -n ppu-system" "delete ppujobs.ppu.dev -n x" \
         "create networkpolicies.networking.k8s.io -n x" "patch networkpolicies.networking.k8s.io -n x" \
         "watch networkpolicies.networking.k8s.io -A" "create tokenreviews.authentication.k8s.io" \
         "create subjectaccessreviews.authorization.k8s.io"; do
  # shellcheck disable=SC2086
  [[ "$(can $v)" == yes ]] || fail "operator ServiceAccount cannot $v"
done
pass "operator ServiceAccount has the verbs it needs"
for v in "get secrets -n x" "create deployments.apps -n x" "update pods -n x" "create ppujobs.ppu.dev -n x" \
         "create leases.coordination.k8s.io -n x" "list nodes" "create clusterroles.rbac.authorization.k8s.io" \
         "get /metrics" "create localsubjectaccessreviews.authorization.k8s.io -n x"; do
  # shellcheck disable=SC2086
  [[ "$(can $v)" == no ]] || fail "operator ServiceAccount may $v (not least privilege)"
done
pass "operator ServiceAccount is denied what it does not use"

# Plain manifests: generated from the chart, applied to the same server.
K apply --dry-run=server -f "$ROOT/manifests/operator/namespace.yaml" >/dev/null || fail "manifests/operator/namespace.yaml rejected"
for f in "$ROOT"/manifests/rbac/*.yaml "$ROOT"/manifests/operator/*.yaml; do
  K apply --dry-run=server -f "$f" >"$W/m.txt" 2>&1 || { cat "$W/m.txt"; fail "${f#$ROOT/} rejected"; }
  pass "${f#$ROOT/} accepted (server-side dry run)"
done

# Samples: every PPUJob accepted with strict field validation (unknown training keys fail).
n=0
for f in "$ROOT"/manifests/samples/*.yaml; do
  K apply --dry-run=server --validate=strict -f "$f" >"$W/s.txt" 2>&1 || { cat "$W/s.txt"; fail "sample ${f#$ROOT/} rejected"; }
  pass "sample ${f#$ROOT/} accepted (server-side dry run)"; n=$((n + 1))
done
(( n >= 9 )) || fail "expected at least 9 samples, found $n"
# ...and the dry run really validates: the same sample with 33 ranks for 2 slices must fail.
sed 's/^  replicas: 32$/  replicas: 33/' "$ROOT/manifests/samples/paper-mlp-2.yaml" >"$W/broken.yaml"
if K apply --dry-run=server -f "$W/broken.yaml" >"$W/b.txt" 2>&1; then fail "a PPUJob with 33 ranks and 2 slices was accepted"; fi
expect_grep "replicas" "$W/b.txt" "a broken sample is rejected naming spec.replicas"
echo "chart_test: all checks passed"
