#!/usr/bin/env bash
# Chart test: helm lint; helm template with default and non-default values (asserting the
# rendered RBAC, flags, security posture and the operator's own NetworkPolicy); values.schema.json
# rejecting wrong values; the rendered manifests accepted by a real kube-apiserver (server-side dry
# run, plus a real install whose ServiceAccount is then checked for least privilege with
# `kubectl auth can-i`); and the install notes (NOTES.txt), whose sample the API server accepts.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
HELM="$(helm_bin)"
CHART="$ROOT/charts/ppu-operator"
W="$(mktemp -d)"

# --- lint ---------------------------------------------------------------------------------
"$HELM" lint --strict "$CHART" >"$W/lint.txt" 2>&1 || {
  cat "$W/lint.txt"
  fail "helm lint --strict"
}
"$HELM" lint --strict "$CHART" --set scope=namespace --set replicas=3 --set serviceMonitor.enabled=true \
  --set podMonitor.enabled=true >"$W/lint2.txt" 2>&1 || {
  cat "$W/lint2.txt"
  fail "helm lint (non-default)"
}
pass "helm lint --strict, default and non-default values"

# --- default render -----------------------------------------------------------------------
"$HELM" template ppu "$CHART" -n ppu-system >"$W/default.yaml"
D="$W/default.yaml"
for k in CustomResourceDefinition ServiceAccount ClusterRole ClusterRoleBinding Role RoleBinding Deployment Service ConfigMap NetworkPolicy; do
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
expect_no_grep "secrets|\"\\*\"|- '\\*'" "$D" "RBAC names no secrets or wildcards"
# Nodes are only read, through their own ClusterRole (operator.forceDeleteOnLostNode, on by default).
python3 - "$D" <<'PY' || fail "nodes RBAC"
import re, sys
docs = open(sys.argv[1]).read().split("\n---\n")
with_nodes = [d for d in docs if "nodes" in d and re.search(r"^kind: (Cluster)?Role$", d, re.M)]
assert len(with_nodes) == 1, with_nodes
assert re.search(r"^  name: ppu-ppu-operator-nodes$", with_nodes[0], re.M), with_nodes[0]
assert "resources: [nodes]\n    verbs: [get, list, watch]" in with_nodes[0], with_nodes[0]
PY
pass "nodes: get/list/watch only, in the ClusterRole ppu-ppu-operator-nodes"
expect_grep "- --force-delete-on-lost-node=true$" "$D" "force deletion on lost nodes by default"
# Security defaults (docs/SECURITY.md): /metrics authenticated, a NetworkPolicy per job.
expect_grep "- --metrics-auth=token$" "$D" "/metrics requires a token by default"
expect_grep "- --network-policy=true$" "$D" "NetworkPolicy per PPUJob by default"
expect_grep "- --metrics-namespaces=ppu-system,monitoring$" "$D" "rank metrics scrapeable from the release and monitoring namespaces"
expect_grep "resources: \[networkpolicies\]" "$D" "RBAC for the per-job NetworkPolicy"
expect_grep "resources: \[tokenreviews\]" "$D" "RBAC to create TokenReviews"
expect_grep "resources: \[subjectaccessreviews\]" "$D" "RBAC to create SubjectAccessReviews"
expect_grep "nonResourceURLs: \[/metrics\]" "$D" "a metrics-reader ClusterRole"
expect_grep "^  name: ppu-ppu-operator-metrics-reader$" "$D" "metrics-reader named after the release"
expect_grep "image: ghcr.io/ppu-dev/ppu:0.1.0$" "$D" "image tag defaults to the appVersion"
# The operator pods' own NetworkPolicy: selects exactly the Deployment's pods, ingress only (egress
# open), only the metrics and health ports, each from the monitoring namespace by default.
npcheck() { # npcheck FILE METRICS_PORT HEALTH_PORT FROM_JSON (expected peers of both rules, or "custom")
  python3 - "$@" <<'PY'
import json, sys, yaml
path, mport, hport, want = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
docs = [d for d in yaml.safe_load_all(open(path)) if d]
nps = [d for d in docs if d["kind"] == "NetworkPolicy"]
assert len(nps) == 1, f"expected one NetworkPolicy, got {len(nps)}"
np, dep = nps[0], next(d for d in docs if d["kind"] == "Deployment")
assert np["metadata"]["namespace"] == "ppu-system", np["metadata"]
sel = np["spec"]["podSelector"]["matchLabels"]
assert sel == dep["spec"]["selector"]["matchLabels"], (sel, dep["spec"]["selector"])
pod_labels = dep["spec"]["template"]["metadata"]["labels"]
assert all(pod_labels.get(k) == v for k, v in sel.items()), "the policy does not select the operator pods"
assert np["spec"]["policyTypes"] == ["Ingress"] and "egress" not in np["spec"], np["spec"]
rules = np["spec"]["ingress"]
ports = sorted((p["protocol"], p["port"]) for r in rules for p in r["ports"])
assert ports == sorted([("TCP", mport), ("TCP", hport)]), ports
cports = {p["name"]: p["containerPort"] for p in dep["spec"]["template"]["spec"]["containers"][0]["ports"]}
assert cports == {"metrics": mport, "health": hport}, cports
assert all(r["from"] for r in rules), rules  # an empty `from` would admit every source
if want != "custom":
    assert all(r["from"] == json.loads(want) for r in rules), rules
PY
}
MON='[{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}]'
npcheck "$D" 8080 8081 "$MON" || fail "operator NetworkPolicy (default render)"
pass "operator NetworkPolicy: its pods only, ingress to 8080 and 8081 from namespace monitoring, egress open"
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
# SubjectAccessReview are cluster-scoped), the metrics-reader role, and reading nodes (they are
# cluster-scoped) unless operator.forceDeleteOnLostNode is false.
nscheck() { # nscheck FILE EXPECTED_NAMES_JSON
  python3 - "$@" <<'PY'
import json, re, sys
docs = open(sys.argv[1]).read().split("\n---\n")
names = sorted(re.search(r"^  name: (\S+)$", d, re.M).group(1) for d in docs if re.search(r"^kind: Cluster(Role|RoleBinding)$", d, re.M))
assert names == json.loads(sys.argv[2]), names
PY
}
nscheck "$N" '["ppu-ppu-operator-metrics-auth", "ppu-ppu-operator-metrics-auth", "ppu-ppu-operator-metrics-reader", "ppu-ppu-operator-nodes", "ppu-ppu-operator-nodes"]' \
  || fail "namespaced install has cluster-scoped RBAC beyond /metrics authentication and reading nodes"
"$HELM" template ppu "$CHART" -n ppu-system --set scope=namespace --set watchNamespace=team-a \
  --set operator.forceDeleteOnLostNode=false >"$W/ns-nonodes.yaml"
nscheck "$W/ns-nonodes.yaml" '["ppu-ppu-operator-metrics-auth", "ppu-ppu-operator-metrics-auth", "ppu-ppu-operator-metrics-reader"]' \
  || fail "operator.forceDeleteOnLostNode=false still reads nodes"
expect_grep "- --force-delete-on-lost-node=false$" "$W/ns-nonodes.yaml" "operator.forceDeleteOnLostNode=false ⇒ the flag false"
expect_no_grep "nodes" "$W/ns-nonodes.yaml" "operator.forceDeleteOnLostNode=false: no nodes RBAC"
pass "namespaced install: cluster-scoped RBAC only for /metrics authentication and reading nodes (off with the option)"
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

# --- Kueue: off by default (no flag value true, no kueue.x-k8s.io RBAC); on: the flag, Workloads
# and their status in the job role, priority classes read through a ClusterRole in either scope.
expect_grep "- --kueue=false$" "$D" "kueue.enabled false by default ⇒ --kueue=false"
expect_no_grep "kueue.x-k8s.io" "$D" "no Kueue RBAC by default"
"$HELM" template ppu "$CHART" -n ppu-system --set kueue.enabled=true --set scope=namespace \
  --set watchNamespace=team-a >"$W/kueue.yaml"
expect_grep "- --kueue=true$" "$W/kueue.yaml" "kueue.enabled=true ⇒ --kueue=true"
python3 - "$W/kueue.yaml" <<'PY' || fail "Kueue RBAC"
import re, sys
docs = open(sys.argv[1]).read().split("\n---\n")
def doc(kind, name):
    return next(d for d in docs if re.search(rf"^kind: {kind}$", d, re.M) and re.search(rf"^  name: {name}$", d, re.M))
role = doc("Role", "ppu-ppu-operator")
assert "resources: [workloads]\n    verbs: [get, list, watch, create, delete]" in role, role
assert "resources: [workloads/status]\n    verbs: [get, patch]" in role, role
prio = doc("ClusterRole", "ppu-ppu-operator-kueue-priorities")
assert "resources: [workloadpriorityclasses]\n    verbs: [get, list, watch]" in prio, prio
assert doc("ClusterRoleBinding", "ppu-ppu-operator-kueue-priorities")
PY
pass "kueue.enabled=true: Workloads (+status) in the job role, priority classes read cluster-wide"

# --- security features off: no NetworkPolicy RBAC, /metrics open, ServiceMonitor without a token ----
"$HELM" template ppu "$CHART" -n ppu-system --set networkPolicy.enabled=false --set metricsAuth.enabled=false \
  --set serviceMonitor.enabled=true >"$W/off.yaml"
O="$W/off.yaml"
expect_grep "- --network-policy=false$" "$O" "networkPolicy.enabled=false ⇒ --network-policy=false"
expect_grep "- --metrics-auth=none$" "$O" "metricsAuth.enabled=false ⇒ --metrics-auth=none"
expect_no_grep "networkpolicies|tokenreviews|subjectaccessreviews|nonResourceURLs|bearerTokenFile" "$O" "no RBAC or token for disabled features"
expect_no_grep "^kind: NetworkPolicy$" "$O" "networkPolicy.enabled=false: no NetworkPolicy for the operator either"
# The operator's own policy can be turned off alone (per-job policies stay), follows the ports,
# and takes any NetworkPolicyPeers.
"$HELM" template ppu "$CHART" -n ppu-system --set networkPolicy.operator.enabled=false >"$W/npoff.yaml"
expect_no_grep "^kind: NetworkPolicy$" "$W/npoff.yaml" "networkPolicy.operator.enabled=false: no operator NetworkPolicy"
expect_grep "- --network-policy=true$" "$W/npoff.yaml" "...while the per-job NetworkPolicies stay on"
cat >"$W/np-values.yaml" <<'EOF'
operator: {metricsPort: 9090, healthPort: 9091}
networkPolicy:
  operator:
    metricsFrom:
      - namespaceSelector: {matchLabels: {team: observability}}
        podSelector: {matchLabels: {app.kubernetes.io/name: prometheus}}
      - ipBlock: {cidr: 10.0.0.0/8}
    healthFrom:
      - podSelector: {matchExpressions: [{key: role, operator: In, values: [blackbox]}]}
EOF
"$HELM" template ppu "$CHART" -n ppu-system -f "$W/np-values.yaml" >"$W/np.yaml"
npcheck "$W/np.yaml" 9090 9091 custom || fail "operator NetworkPolicy with custom ports and peers"
python3 - "$W/np.yaml" <<'PY' || fail "custom metricsFrom/healthFrom not rendered as given"
import sys, yaml
np = next(d for d in yaml.safe_load_all(open(sys.argv[1])) if d and d["kind"] == "NetworkPolicy")
m, h = np["spec"]["ingress"]
assert m["ports"] == [{"protocol": "TCP", "port": 9090}] and len(m["from"]) == 2, m
assert m["from"][0] == {"namespaceSelector": {"matchLabels": {"team": "observability"}},
                        "podSelector": {"matchLabels": {"app.kubernetes.io/name": "prometheus"}}}, m
assert m["from"][1] == {"ipBlock": {"cidr": "10.0.0.0/8"}}, m
assert h["ports"] == [{"protocol": "TCP", "port": 9091}], h
assert h["from"] == [{"podSelector": {"matchExpressions": [{"key": "role", "operator": "In", "values": ["blackbox"]}]}}], h
PY
pass "operator NetworkPolicy follows operator.metricsPort/healthPort and takes custom peers"
"$HELM" template ppu "$CHART" -n ppu-system --set-json 'networkPolicy.operator.metricsFrom=[]' \
  --set-json 'networkPolicy.operator.healthFrom=[]' >"$W/npnone.yaml"
python3 - "$W/npnone.yaml" <<'PY' || fail "empty metricsFrom and healthFrom must deny all ingress"
import sys, yaml
np = next(d for d in yaml.safe_load_all(open(sys.argv[1])) if d and d["kind"] == "NetworkPolicy")
assert np["spec"]["ingress"] == [] and np["spec"]["policyTypes"] == ["Ingress"], np["spec"]
PY
pass "empty metricsFrom and healthFrom: the policy admits no pod at all"
D256="sha256:$(printf '%064d' 7)"
"$HELM" template ppu "$CHART" -n ppu-system --set image.digest="$D256" >"$W/digest.yaml"
expect_grep "image: ghcr.io/ppu-dev/ppu@$D256$" "$W/digest.yaml" "image.digest pins the image by digest"
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
reject() { # what, helm --set args...
  local what="$1"
  shift
  if "$HELM" template ppu "$CHART" "$@" >"$W/bad.yaml" 2>"$W/bad.err"; then
    fail "schema accepted $what ($*)"
  fi
  grep -q "values don't meet the specifications of the schema\|at '/" "$W/bad.err" \
    || {
      cat "$W/bad.err"
      fail "rejection of $what is not a schema error"
    }
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
reject "an unknown NetworkPolicyPeer field" --set "networkPolicy.operator.metricsFrom[0].namespace=monitoring"
reject "an empty NetworkPolicyPeer" --set-json 'networkPolicy.operator.healthFrom=[{}]'
reject "a bad selector operator" --set-json 'networkPolicy.operator.metricsFrom=[{"podSelector":{"matchExpressions":[{"key":"a","operator":"Equals"}]}}]'
reject "a non-boolean networkPolicy.operator.enabled" --set networkPolicy.operator.enabled=yes-please
reject "a digest that is not sha256:<64 hex>" --set image.digest=latest

# --- real kube-apiserver --------------------------------------------------------------------
start_kube "$W/kube"
K() { "$KUBECTL" --kubeconfig "$KUBECONFIG" "$@"; }
K apply -f "$ROOT/tests/packaging/fixtures/monitoring-crds.yaml" >/dev/null
K wait --for=condition=Established --timeout=60s crd/servicemonitors.monitoring.coreos.com crd/podmonitors.monitoring.coreos.com >/dev/null
K create namespace ppu-system >/dev/null
K create namespace team-a >/dev/null
# Install notes. NOTES.txt is rendered only by `helm install` (helm 3.18 contacts the API server
# even for --dry-run=client, hence here, before anything of the chart exists on the server). Its
# commands must work: no link to a page that does not exist, image load commands naming the
# chart's image, and the sample printed as a heredoc is manifests/samples/cpu-tiny.yaml with the
# chart's image (and, once the CRD is installed below, accepted by the API server).
notes() { # notes OUT helm-args...: the NOTES section of a dry-run install
  local out="$1"
  shift
  # crds.install=false: the test environment has the CRD already (helm would refuse to adopt it).
  "$HELM" install ppu "$CHART" -n ppu-system --dry-run=client --set crds.install=false "$@" >"$W/install.txt" 2>&1 \
    || {
      cat "$W/install.txt"
      fail "helm install --dry-run=client $*"
    }
  sed -n '/^NOTES:$/,$p' "$W/install.txt" | tail -n +2 >"$out"
  [[ -s "$out" ]] || fail "helm install --dry-run=client printed no NOTES ($*)"
}
sample_check() { # sample_check NOTES IMAGE PULLPOLICY NSFLAG: the heredoc is cpu-tiny with IMAGE
  python3 - "$@" "$ROOT/manifests/samples/cpu-tiny.yaml" "$W/notes-sample.yaml" <<'PY'
import re, sys, yaml
notes, image, policy, nsflag, sample, out = sys.argv[1:]
text = open(notes).read()
m = re.search(r"^kubectl apply" + re.escape(nsflag) + r" -f - <<'EOF'\n(.*?)^EOF$", text, re.M | re.S)
assert m, "no `kubectl apply" + nsflag + " -f - <<'EOF'` heredoc ending in EOF in the NOTES"
got = yaml.safe_load(m.group(1))
want = yaml.safe_load(open(sample))
want["spec"]["image"] = image
want["spec"]["imagePullPolicy"] = policy
assert got == want, (got, want)
open(out, "w").write(m.group(1))
PY
}
N1="$W/notes.txt"
notes "$N1"
expect_no_grep "https?://" "$N1" "NOTES link to no web page"
expect_grep "podman save --format docker-archive -o ppu.tar ghcr.io/ppu-dev/ppu:0.1.0$" "$N1" "NOTES: save the chart's image without a registry"
expect_grep "ctr -n k8s.io images import ppu.tar" "$N1" "NOTES: import it into each node's containerd"
expect_grep "scripts/cluster.sh load-image localhost/ppu:dev --as ghcr.io/ppu-dev/ppu:0.1.0" "$N1" "NOTES: the repository's own cluster loader"
expect_grep "kubectl -n ppu-system rollout status deployment/ppu-ppu-operator$" "$N1" "NOTES: wait for the operator"
expect_grep "kubectl apply -f manifests/samples/cpu-tiny.yaml" "$N1" "NOTES: the sample's path in a clone"
expect_grep "NetworkPolicy ppu-ppu-operator admits" "$N1" "NOTES mention the operator NetworkPolicy"
sample_check "$N1" ghcr.io/ppu-dev/ppu:0.1.0 IfNotPresent "" || fail "NOTES sample differs from manifests/samples/cpu-tiny.yaml"
pass "NOTES print manifests/samples/cpu-tiny.yaml with the chart's image"
cp "$W/notes-sample.yaml" "$W/notes-sample-default.yaml"
N2="$W/notes2.txt"
notes "$N2" --set scope=namespace --set watchNamespace=team-a --set image.repository=localhost/ppu \
  --set image.tag=dev --set image.pullPolicy=Never --set networkPolicy.enabled=false
sample_check "$N2" localhost/ppu:dev Never " -n team-a" || fail "NOTES sample (scope=namespace, local image)"
expect_grep "kubectl get ppj -n team-a -w" "$N2" "NOTES: scope=namespace watches the job in the watched namespace"
expect_grep "podman save --format docker-archive -o ppu.tar localhost/ppu:dev$" "$N2" "NOTES follow image.repository/tag"
expect_no_grep "NetworkPolicy ppu-ppu-operator" "$N2" "NOTES omit the policy when it is off"
pass "NOTES for scope=namespace and a local image: sample in team-a with localhost/ppu:dev, pullPolicy Never"
N3="$W/notes3.txt"
notes "$N3" --set image.pullPolicy=Always
expect_grep "image.pullPolicy is Always" "$N3" "NOTES warn that Always ignores a loaded image"

K apply --dry-run=server -f "$D" >"$W/dry1.txt" 2>&1 || {
  cat "$W/dry1.txt"
  fail "default render rejected by kube-apiserver"
}
pass "default render accepted (server-side dry run, $(grep -c . "$W/dry1.txt") objects)"
K apply --dry-run=server -f "$N" >"$W/dry2.txt" 2>&1 || {
  cat "$W/dry2.txt"
  fail "non-default render rejected by kube-apiserver"
}
pass "non-default render accepted (server-side dry run)"

# Install for real and check what the operator's identity may and may not do.
K apply -f "$D" >/dev/null
SA=system:serviceaccount:ppu-system:ppu-ppu-operator
can() { K auth can-i --as="$SA" "$@" 2>/dev/null; }
for v in "list ppujobs.ppu.dev -A" "watch ppujobs.ppu.dev -A" "update ppujobs.ppu.dev/status -n x" \
  "create pods -n x" "delete pods -n x" "create services -n x" "patch configmaps -n x" \
  "create events -n x" "update leases.coordination.k8s.io -n ppu-system" "delete ppujobs.ppu.dev -n x" \
  "create networkpolicies.networking.k8s.io -n x" "patch networkpolicies.networking.k8s.io -n x" \
  "watch networkpolicies.networking.k8s.io -A" "create jobs.batch -n x" "watch jobs.batch -A" \
  "delete jobs.batch -n x" "create tokenreviews.authentication.k8s.io" \
  "create subjectaccessreviews.authorization.k8s.io" "list nodes" "watch nodes" "get nodes"; do
  # shellcheck disable=SC2086
  [[ "$(can $v)" == yes ]] || fail "operator ServiceAccount cannot $v"
done
pass "operator ServiceAccount has the verbs it needs"
for v in "get secrets -n x" "create deployments.apps -n x" "update pods -n x" "create ppujobs.ppu.dev -n x" \
  "create leases.coordination.k8s.io -n x" "delete nodes" "patch nodes" \
  "create clusterroles.rbac.authorization.k8s.io" \
  "get /metrics" "create localsubjectaccessreviews.authorization.k8s.io -n x"; do
  # shellcheck disable=SC2086
  [[ "$(can $v)" == no ]] || fail "operator ServiceAccount may $v (not least privilege)"
done
pass "operator ServiceAccount is denied what it does not use"

# Plain manifests: generated from the chart, applied to the same server.
K apply --dry-run=server -f "$ROOT/manifests/operator/namespace.yaml" >/dev/null || fail "manifests/operator/namespace.yaml rejected"
for f in "$ROOT"/manifests/rbac/*.yaml "$ROOT"/manifests/operator/*.yaml; do
  K apply --dry-run=server -f "$f" >"$W/m.txt" 2>&1 || {
    cat "$W/m.txt"
    fail "${f#"$ROOT"/} rejected"
  }
  pass "${f#"$ROOT"/} accepted (server-side dry run)"
done

# Samples: every PPUJob accepted with strict field validation (unknown training keys fail); the
# Kueue queue sample against Kueue's own CRDs (scripts/kueue-crds.sh, the pinned version).
KUEUE_CRDS="$(bash "$ROOT/scripts/kueue-crds.sh" | tail -1)"
K apply --server-side -f "$KUEUE_CRDS" >/dev/null || fail "Kueue's CRDs ($KUEUE_CRDS) rejected"
K wait --for=condition=Established -f "$KUEUE_CRDS" --timeout=60s >/dev/null || fail "Kueue's CRDs not established"
n=0
for f in "$ROOT"/manifests/samples/*.yaml; do
  K apply --dry-run=server --validate=strict -f "$f" >"$W/s.txt" 2>&1 || {
    cat "$W/s.txt"
    fail "sample ${f#"$ROOT"/} rejected"
  }
  pass "sample ${f#"$ROOT"/} accepted (server-side dry run)"
  n=$((n + 1))
done
((n >= 9)) || fail "expected at least 9 samples, found $n"
# ...and the dry run really validates: the same sample with 33 ranks for 2 slices must fail.
sed 's/^  replicas: 32$/  replicas: 33/' "$ROOT/manifests/samples/paper-mlp-2.yaml" >"$W/broken.yaml"
if K apply --dry-run=server -f "$W/broken.yaml" >"$W/b.txt" 2>&1; then fail "a PPUJob with 33 ranks and 2 slices was accepted"; fi
expect_grep "replicas" "$W/b.txt" "a broken sample is rejected naming spec.replicas"
# The sample the install notes print (saved above), applied as printed.
K create namespace notes-a >/dev/null
K apply -n notes-a --dry-run=server --validate=strict -f "$W/notes-sample-default.yaml" >"$W/ns.txt" 2>&1 \
  || {
    cat "$W/ns.txt"
    fail "the sample printed by NOTES is rejected by the API server"
  }
pass "the sample printed by NOTES is accepted (server-side dry run, strict validation)"
echo "chart_test: all checks passed"
