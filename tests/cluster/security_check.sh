#!/usr/bin/env bash
# Security posture of a running PPUJob and of the operator, on the real cluster (scripts/cluster.sh):
# - every rank container's main process and the operator's, read from the kernel (/proc/PID/status,
#   mountinfo): uid/gid 65532 (non-root), no_new_privs set (allowPrivilegeEscalation: false), a seccomp
#   filter in force (Seccomp: 2, RuntimeDefault), no effective capabilities, root fs mounted ro;
# - the namespace enforces the `restricted` Pod Security Standard (so the API server admitted
#   the rank pods only because they comply);
# - the operator's ServiceAccount may do what its RBAC grants and is refused the rest (secrets,
#   workloads, node changes, RBAC objects, exec, logs, ServiceAccounts, impersonation, wildcards; it
#   may read Nodes, for the lost-node force deletion): by
#   `kubectl auth can-i --as`, and by real requests authenticated with its own token.
# Usage: security_check.sh JOB_NAMESPACE JOB OPERATOR_NAMESPACE OPERATOR_SERVICEACCOUNT
# Needs KUBECONFIG and PPU_CLUSTER_DIR (set by tests/cluster/e2e, which runs it).
set -euo pipefail
NS="$1"
JOB="$2"
OPNS="$3"
SA="$4"
# shellcheck source=/dev/null # written by cluster.sh up: TOOLS
source "$PPU_CLUSTER_DIR/env"
kubectl() { "$TOOLS/kubectl" "$@"; }
fail() {
  echo "FAIL: security: $*" >&2
  exit 1
}
ok() { echo "ok: security: $*"; }

[[ "$(kubectl get ns "$NS" -o jsonpath='{.metadata.labels.pod-security\.kubernetes\.io/enforce}')" == restricted ]] \
  || fail "namespace $NS does not enforce the restricted Pod Security Standard"
ok "namespace $NS enforces pod-security restricted; the rank pods were admitted under it"

tasks="$(ctr -a "$PPU_CLUSTER_DIR/run/containerd.sock" -n k8s.io tasks ls)"
cids() { # cids NAMESPACE SELECTOR: the first container of each matching pod
  kubectl -n "$1" get pod -l "$2" -o jsonpath='{range .items[*]}{.status.containerStatuses[0].containerID}{"\n"}{end}'
}
rank_cids="$(cids "$NS" "ppu.dev/job=$JOB")"
op_cids="$(cids "$OPNS" app.kubernetes.io/name=ppu-operator)"
[[ -n "$rank_cids" ]] || fail "job $JOB has no rank pods"
[[ -n "$op_cids" ]] || fail "no operator pod in $OPNS"
n=0
pods=0
for cid in $rank_cids $op_cids; do
  pods=$((pods + 1))
  cid="${cid#containerd://}"
  pid="$(awk -v c="$cid" '$1==c && $3=="RUNNING" {print $2}' <<<"$tasks")"
  for ((i = 0; i < 20 && ${#pid} == 0; i++)); do # a task listed a moment before it runs
    sleep 1
    tasks="$(ctr -a "$PPU_CLUSTER_DIR/run/containerd.sock" -n k8s.io tasks ls)"
    pid="$(awk -v c="$cid" '$1==c && $3=="RUNNING" {print $2}' <<<"$tasks")"
  done
  [[ -n "$pid" ]] || fail "container $cid is not running in containerd (the job must be training during this check): $(grep -F "$cid" <<<"$tasks")"
  st="/proc/$pid/status"
  uids="$(awk '/^Uid:/ {print $2, $3, $4, $5}' "$st")"
  gids="$(awk '/^Gid:/ {print $2, $3, $4, $5}' "$st")"
  [[ "$uids" == "65532 65532 65532 65532" ]] || fail "container $cid runs with uids '$uids'"
  [[ "$gids" == "65532 65532 65532 65532" ]] || fail "container $cid runs with gids '$gids'"
  [[ "$(awk '/^NoNewPrivs:/ {print $2}' "$st")" == 1 ]] || fail "container $cid may gain privileges (NoNewPrivs 0)"
  [[ "$(awk '/^Seccomp:/ {print $2}' "$st")" == 2 ]] || fail "container $cid has no seccomp filter"
  [[ "$(awk '/^CapEff:/ {print $2}' "$st")" == 0000000000000000 ]] || fail "container $cid has effective capabilities"
  rootopts="$(awk '$5=="/" {print $6}' "/proc/$pid/mountinfo" | tail -1)"
  [[ ",$rootopts," == *,ro,* ]] || fail "container $cid's root filesystem is mounted '$rootopts', not ro"
  n=$((n + 1))
done
((n >= 2 && n == pods)) || fail "checked $n running containers, expected $pods (the job's ranks and the operator)"
ok "$((n - $(wc -w <<<"$op_cids"))) rank containers of $JOB and the operator's: uid/gid 65532, NoNewPrivs 1, Seccomp 2 (filter), CapEff 0, root fs ro"

who="system:serviceaccount:$OPNS:$SA"
can() { kubectl auth can-i --as="$who" "$@" 2>/dev/null || true; }
for allowed in "create pods -n $NS" "delete pods -n $NS" "watch ppujobs.ppu.dev -n $NS" \
  "update ppujobs.ppu.dev/status -n $NS" "create services -n $NS" "create events -n $NS"; do
  # shellcheck disable=SC2086
  [[ "$(can $allowed)" == yes ]] || fail "the operator's ServiceAccount may not '$allowed', which it needs"
done
for denied in "get secrets -n $NS" "list secrets -A" "create deployments.apps -n $NS" "delete nodes" \
  "create clusterrolebindings.rbac.authorization.k8s.io" "create pods -n $NS --subresource=exec" \
  "get pods -n $NS --subresource=log" "create serviceaccounts -n $NS" "impersonate users"; do
  # shellcheck disable=SC2086
  [[ "$(can $denied)" == no ]] || fail "the operator's ServiceAccount may '$denied', which its RBAC should not grant"
done
[[ "$(can '*' '*' --all-namespaces)" == no ]] || fail "the operator's ServiceAccount has wildcard rights"
ok "auth can-i --as=$who: needed verbs allowed, secrets/workloads/nodes/RBAC/exec/wildcards refused"

# Real requests with the ServiceAccount's own token (no client certificate anywhere).
token="$(kubectl -n "$OPNS" create token "$SA" --duration=10m)"
server="$(kubectl config view --minify -o jsonpath='{.clusters[0].cluster.server}')"
as_sa() { kubectl --kubeconfig=/dev/null --server="$server" --certificate-authority="$PPU_CLUSTER_DIR/pki/ca.crt" \
  --token="$token" "$@"; }
as_sa -n "$NS" get pods >/dev/null || fail "the operator's token cannot list pods in $NS"
out="$(as_sa -n "$NS" get secrets 2>&1 || true)"
[[ "$out" == *Forbidden* || "$out" == *forbidden* ]] || fail "listing secrets with the operator's token was not refused: $out"
# Nodes it may read (--force-delete-on-lost-node, the chart's default), never change.
as_sa get nodes >/dev/null || fail "the operator's token cannot list nodes (it watches them for lost-node force deletion)"
out="$(as_sa label node --all ppu.dev/e2e=1 2>&1 || true)"
[[ "$out" == *orbidden* ]] || fail "labelling a node with the operator's token was not refused: $out"
out="$(as_sa get persistentvolumes 2>&1 || true)"
[[ "$out" == *orbidden* ]] || fail "listing persistentvolumes with the operator's token was not refused: $out"
ok "requests with the operator's token: pods and nodes listed; secrets, node changes and persistentvolumes refused (403 Forbidden)"
