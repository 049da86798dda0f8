#!/usr/bin/env bash
# What the NetworkPolicies of a running PPUJob and of the operator let through, on the real
# cluster with enforcement on (scripts/cluster.sh: kube-network-policies), probed from real pods
# with TCP connects (bash's /dev/tcp, 4 s each, all in parallel):
# - the targets, read from each pod's own network namespace: every TCP port a pod of JOB listens
#   on (the c10d store, /metrics; the rendezvous pod's store when the job has one) and the ports
#   of Gloo's connections between the ranks (Gloo listens only while a group forms, then each
#   pair keeps one connection: a SYN to its port that gets through is answered with a reset,
#   "refused", one that the policy drops times out), and the operator pod's metrics and health
#   ports;
# - a pod of the job itself (rank 1) opens the store and /metrics of every other pod of the job;
# - from a pod in OUTSIDE_NS that carries the job's own labels, a rank of OTHER_JOB (another
#   PPUJob in the job's namespace) and a pod in the job's namespace: every job port and both
#   operator ports time out (the SYN is dropped; "refused" would mean it got through);
# - from a pod in METRICS_NS (a namespace the chart's networkPolicy.metricsNamespaces names):
#   GET /metrics of every rank answers with PPU metrics, every other job port times out, and the
#   operator's metrics and health ports accept (the chart's metricsFrom and healthFrom name it).
# The probes run in the pods by `kubectl exec`: PROBE_POD names pods "probe" that
# tests/cluster/e2e (phase 4b) started in OUTSIDE_NS, METRICS_NS and the job's namespace.
# Each assertion prints its own line, "PASS isolation: ..." or "FAIL: isolation: ..."; exits 1
# when any failed. Widening or removing the job's or the operator's policy makes it fail.
#
# Usage: isolation_check.sh NS JOB OTHER_JOB OPERATOR_NS METRICS_NS OUTSIDE_NS
# Needs KUBECONFIG and PPU_CLUSTER_DIR (set by tests/cluster/e2e, which runs it).
set -euo pipefail
NS="$1"
JOB="$2"
OTHER="$3"
OPNS="$4"
MNS="$5"
OUT_NS="$6"
# shellcheck source=/dev/null # written by cluster.sh up: TOOLS
source "$PPU_CLUSTER_DIR/env"
kubectl() { "$TOOLS/kubectl" "$@"; }
FAILED=0
pass() { echo "PASS isolation: $*"; }
fail() {
  echo "FAIL: isolation: $*" >&2
  FAILED=1
}
die() {
  echo "FAIL: isolation: $*" >&2
  exit 1
}

# ports_of NODE CID: "listen PORT" for each listening TCP port and "conn PORT" for the local port
# of each established connection (neither end on the store's or the metrics port: Gloo's) of the
# pod whose first container is CID, read in its network namespace; containerd is NODE's
# (cluster.sh's $PPU_CLUSTER_DIR/nodes: name address cidr dir)
ports_of() {
  local node="$1" cid="${2#containerd://}" pid ndir
  ndir="$(awk -v n="$node" '$1 == n {print $4}' "$PPU_CLUSTER_DIR/nodes")"
  [[ -n "$ndir" ]] || die "node $node is not one of the cluster's ($PPU_CLUSTER_DIR/nodes)"
  pid="$(ctr -a "$ndir/run/containerd.sock" -n k8s.io tasks ls | awk -v c="$cid" '$1==c && $3=="RUNNING" {print $2}')"
  [[ -n "$pid" ]] || die "container $cid is not running (the job must be training during this check)"
  nsenter -t "$pid" -n ss -Hltn | awk '{n = split($4, a, ":"); print "listen", a[n]}' | sort -u
  nsenter -t "$pid" -n ss -Htn state established | awk -v s="$store_port" -v m="$metrics_port" '
    {n = split($3, l, ":"); k = split($4, r, ":")
     if (l[n] != s && l[n] != m && r[k] != s && r[k] != m) print "conn", l[n]}' | sort -u
}

# probe POD_NS POD CONTAINER TARGET...: "TARGET RC" per target, RC of a 4 s connect
# (0 connected, 124 timed out, other: refused or unreachable)
probe() {
  local pns="$1" pod="$2" c="$3"
  shift 3
  # shellcheck disable=SC2016 # expanded by the pod's bash
  kubectl -n "$pns" exec "$pod" -c "$c" -- bash -c '
    for t in "$@"; do
      (timeout 4 bash -c "exec 3<>/dev/tcp/${t%:*}/${t##*:}" 2>/dev/null; echo "$t $?") &
    done
    wait' probe "$@"
}

# ---- the targets ------------------------------------------------------------------------------
declare -A PORTS # pod name -> listening ports
JOB_TARGETS=()   # IP:PORT of every job port
STORE_METRICS=() # IP:PORT of the store and /metrics ports of every pod of the job but rank 1
METRICS=()       # IP:PORT of every rank's /metrics
metrics_port="$(kubectl -n "$NS" get pod "$JOB-rank-0" -o jsonpath='{.spec.containers[0].ports[?(@.name=="metrics")].containerPort}')"
store_port="$(kubectl -n "$NS" get pod "$JOB-rank-0" -o jsonpath='{.spec.containers[0].env[?(@.name=="MASTER_PORT")].value}')"
[[ -n "$metrics_port" && -n "$store_port" ]] || die "rank 0 of $JOB names no metrics port or MASTER_PORT"
declare -A GLOO # pod name -> local ports of its Gloo connections
while read -r pod ip node cid; do
  [[ -n "$pod" ]] || continue
  found="$(ports_of "$node" "$cid")"
  PORTS[$pod]="$(awk '$1 == "listen" {printf "%s ", $2}' <<<"$found")"
  GLOO[$pod]="$(awk '$1 == "conn" {printf "%s ", $2}' <<<"$found")"
  for p in ${PORTS[$pod]} ${GLOO[$pod]}; do JOB_TARGETS+=("$ip:$p"); done
  if [[ "$pod" == *-rank-* ]]; then
    [[ " ${PORTS[$pod]} " == *" $metrics_port "* ]] || die "$pod does not listen on its metrics port $metrics_port (${PORTS[$pod]})"
    METRICS+=("$ip:$metrics_port")
    [[ "$pod" == "$JOB-rank-1" ]] || STORE_METRICS+=("$ip:$metrics_port")
  fi
  [[ " ${PORTS[$pod]} " == *" $store_port "* ]] && STORE_METRICS+=("$ip:$store_port")
done < <(kubectl -n "$NS" get pod -l "ppu.dev/job=$JOB" --field-selector=status.phase=Running \
  -o jsonpath='{range .items[*]}{.metadata.name} {.status.podIP} {.spec.nodeName} {.status.containerStatuses[0].containerID}{"\n"}{end}')
((${#METRICS[@]} >= 2)) || die "$JOB has ${#METRICS[@]} running ranks; the check needs the job training"
for pod in "${!PORTS[@]}"; do
  [[ "$pod" != *-rank-* || -n "${GLOO[$pod]}" ]] || die "$pod has no Gloo connection to another rank (is $JOB training?)"
done
[[ "${STORE_METRICS[*]}" == *":$store_port"* ]] || die "no pod of $JOB listens on the store port $store_port"
for pod in "${!PORTS[@]}"; do echo "    $pod listens on ${PORTS[$pod]}; Gloo connections on ${GLOO[$pod]:-none}"; done
# The operator's running pod (not one a rollout is terminating): IP, metrics port, health port.
read -r op_ip op_metrics op_health < <(kubectl -n "$OPNS" get pod -l app.kubernetes.io/name=ppu-operator \
  --field-selector=status.phase=Running -o jsonpath='{range .items[*]}{.metadata.deletionTimestamp}|{.status.podIP} {.spec.containers[0].ports[?(@.name=="metrics")].containerPort} {.spec.containers[0].ports[?(@.name=="health")].containerPort}{"\n"}{end}' \
  | awk -F'|' '$1 == "" {print $2; exit}') || true
[[ -n "${op_ip:-}" && -n "${op_metrics:-}" && -n "${op_health:-}" ]] || die "no running operator pod with an IP, a metrics and a health port in $OPNS"
OP_TARGETS=("$op_ip:$op_metrics" "$op_ip:$op_health")

# expect WHO WANT N RESULTS: RESULTS ("TARGET RC" lines) has N lines, each with RC WANT (0 or 124)
expect() {
  local who="$1" want="$2" n="$3" bad got
  bad="$(awk -v w="$want" 'NF && $2 != w {printf "%s(rc %s) ", $1, $2}' <<<"$4")"
  got="$(grep -c . <<<"$4" || true)"
  [[ "$got" == "$n" && -z "$bad" ]] && return 0
  fail "$who: $got of $n probes answered; $([[ $want == 0 ]] && echo "not reached" || echo "not dropped"): ${bad:-none}"
  return 1
}

# ---- a rank of the job itself ------------------------------------------------------------------
r="$(probe "$NS" "$JOB-rank-1" ppu-train "${STORE_METRICS[@]}")" || true
expect "rank 1 of $JOB to the store and /metrics of its job" 0 ${#STORE_METRICS[@]} "$r" \
  && pass "rank 1 of $JOB reaches ${#STORE_METRICS[@]} store and metrics ports of its job"

# ---- pods that are not the job's --------------------------------------------------------------
other_rank="$(kubectl -n "$NS" get pod -l "ppu.dev/job=$OTHER" --field-selector=status.phase=Running -o jsonpath='{.items[0].metadata.name}')"
[[ -n "$other_rank" ]] || die "PPUJob $OTHER has no running rank"
for who in "$OUT_NS/probe/probe/a pod in namespace $OUT_NS with the labels of $JOB's pods" \
  "$NS/$other_rank/ppu-train/rank $other_rank of PPUJob $OTHER in $NS" \
  "$NS/probe/probe/a pod in $NS that is not $JOB's"; do
  IFS=/ read -r pns pod c what <<<"$who"
  r="$(probe "$pns" "$pod" "$c" "${JOB_TARGETS[@]}")" || true
  expect "$what to $JOB's ports" 124 ${#JOB_TARGETS[@]} "$r" \
    && pass "$what cannot connect to any of $JOB's ${#JOB_TARGETS[@]} ports (store, metrics, Gloo): dropped"
  r="$(probe "$pns" "$pod" "$c" "${OP_TARGETS[@]}")" || true
  expect "$what to the operator's metrics and health ports" 124 2 "$r" \
    && pass "$what cannot connect to the operator's metrics ($op_metrics) or health ($op_health) port"
done

# ---- the metrics namespace ---------------------------------------------------------------------
NOT_METRICS=()
for t in "${JOB_TARGETS[@]}"; do [[ " ${METRICS[*]} " == *" $t "* ]] || NOT_METRICS+=("$t"); done
r="$(probe "$MNS" probe probe "${NOT_METRICS[@]}")" || true
expect "a pod in $MNS to $JOB's store and Gloo ports" 124 ${#NOT_METRICS[@]} "$r" \
  && pass "a pod in $MNS cannot connect to $JOB's ${#NOT_METRICS[@]} store and Gloo ports"
scraped=0
for t in "${METRICS[@]}"; do
  # shellcheck disable=SC2016 # expanded by the pod's bash
  body="$(kubectl -n "$MNS" exec probe -c probe -- timeout 10 bash -c '
    exec 3<>"/dev/tcp/${1%:*}/${1##*:}"; printf "GET /metrics HTTP/1.0\r\nHost: %s\r\n\r\n" "$1" >&3; cat <&3' scrape "$t" 2>&1 || true)"
  if grep -q '^ppu_' <<<"$body"; then scraped=$((scraped + 1)); else fail "a pod in $MNS gets no PPU metrics from $t: $(head -c 200 <<<"$body")"; fi
done
((scraped == ${#METRICS[@]})) && pass "a pod in $MNS scrapes /metrics of all $scraped ranks of $JOB"
r="$(probe "$MNS" probe probe "${OP_TARGETS[@]}")" || true
expect "a pod in $MNS to the operator's metrics and health ports" 0 2 "$r" \
  && pass "a pod in $MNS connects to the operator's metrics ($op_metrics) and health ($op_health) ports"

exit $FAILED
