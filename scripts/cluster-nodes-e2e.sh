#!/usr/bin/env bash
# End to end on a real two-node cluster (scripts/cluster.sh up --nodes 2: two kubelets and two
# containerds, each node its own network namespace, bridge and pod CIDR, routed to each other),
# with NetworkPolicies enforced (kube-network-policies on both nodes) and the chart's defaults
# (ctest label `cluster`). Each step prints its own PASS line, or FAIL and stops:
#   1. a 4-rank PPUJob spread over both nodes by the user's spec.scheduling.affinity (a preferred
#      podAntiAffinity on kubernetes.io/hostname between the job's rank pods; a weak preference
#      for node 1 keeps the live job's store, created before any rank, there), its checkpoints on a
#      ReadWriteMany PersistentVolumeClaim that both nodes mount (the local StorageClass's
#      hostPath volumes are one host directory: what NFS or a shared-filesystem CSI driver is on
#      a real cluster): ranks on both nodes, rendezvous and Gloo across the nodes, training;
#   2. node loss under recovery live, slicing N = 2: the operator's preferred anti-affinity
#      between the owners of a slice (label ppu.dev/slice) put each slice's two owners on
#      different nodes, so the survivors of either node cover every slice. `cluster.sh stop-node
#      ppu-node-2` kills the node's kubelet, containerd and pods at once; the node goes NotReady,
#      its pods are evicted after their tolerations (the job's spec.scheduling.tolerations: 5 s for
#      unreachable/not-ready) and stay Terminating, the operator force-deletes them (events
#      PodForceDeleted), the lost ranks are recreated on the surviving node and rejoin; condition
#      Degraded is seen True and then False; the operator's /metrics (read through a port-forward
#      with a reader's token, the chart's metricsAuth) count the recoveries, the force deletions
#      and 4 live ranks; the job Succeeds with restartCount 0, one recovery per lost rank, every
#      pod on node 1, every rank with the same final parameters (its perplexity: step 4);
#   2b. node 2 partitioned (`cluster.sh partition-node`: its processes run on, neither side hears
#      the other), on a fresh cluster, under live: its ranks are replaced on node 1 as in 2; then
#      `heal-node`: the node is Ready again, its old rank processes leave (out of the live group)
#      and its kubelet ends their containers; no gang restart, no loss counted twice, Succeeded;
#   3. node loss under recovery gang, on a fresh two-node cluster: one gang restart, the new gang
#      on the surviving node (the old pods on the lost node force-deleted), rank 0 resumes from
#      the last checkpoint on the shared volume, the job Succeeds with restartCount 1;
#   4. the final perplexity of the live jobs of 2 and 2b inside the fault-free band
#      (scripts/cluster/band.sh: seed 0's own fault-free run -/+ the range of three seeds of the
#      same training section, run here by the image's ppu-launch in the background from the
#      start, on the core the 250m rank pods leave idle).
# The operator is pinned to node 1 (chart nodeSelector): the test loses node 2, not the operator.
# Needs root; builds the image (scripts/build-image.sh) if podman lacks it.
#
# Usage: scripts/cluster-nodes-e2e.sh [--keep]
#   --keep           leave the cluster running afterwards (default: `cluster.sh down`)
#   PPU_CLUSTER_DIR  cluster state dir (default /var/lib/ppu-cluster-nodes-e2e)
#   PPU_IMAGE        image to test (default localhost/ppu:dev)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$ROOT/scripts/cluster/ppujob.sh"
source "$ROOT/scripts/cluster/band.sh"
source "$ROOT/scripts/cluster/rank-logs.sh"
export PPU_CLUSTER_DIR="${PPU_CLUSTER_DIR:-/var/lib/ppu-cluster-nodes-e2e}"
export PPU_CLUSTER_PORT="${PPU_CLUSTER_PORT:-16446}"
KEEP=0
for a in "$@"; do
  case "$a" in
    --keep) KEEP=1 ;;
    -h | --help)
      sed -n '2,40p' "$0"
      exit 0
      ;;
    *)
      echo "cluster-nodes-e2e: unknown flag '$a' (try --help)" >&2
      exit 2
      ;;
  esac
done
CL="$ROOT/scripts/cluster.sh"
IMAGE="${PPU_IMAGE:-localhost/ppu:dev}"
NS=ppu-nodes
OPNS=ppu-system
N1=ppu-node
N2=ppu-node-2
T0=$(date +%s)
say() { echo "[cluster-nodes-e2e +$(($(date +%s) - T0))s] $*"; }
pass() { echo "PASS cluster-nodes: $*"; }
die() {
  echo "FAIL: cluster-nodes: $*" >&2
  exit 1
}

[[ $(id -u) == 0 ]] || die "needs root (containerd, namespaces, cgroups)"
bash "$CL" deps
HELM="$(bash "$ROOT/scripts/build-helm.sh" | tail -1)"
if ! podman image exists "$IMAGE"; then bash "$ROOT/scripts/build-image.sh" --tag "$IMAGE" >/dev/null; fi
BAND=""
RANK_LOGS=""
cleanup() {
  local rc=$?
  band_stop
  rank_logs_stop
  [[ -n "$BAND" ]] && rm -rf "$BAND"
  if ((rc != 0)) && [[ -f "$PPU_CLUSTER_DIR/kubeconfig" ]]; then
    echo "--- state at failure" >&2
    kubectl get nodes,ppj,pods -A -o wide >&2 2>/dev/null || true
    kubectl -n "$OPNS" logs deploy/ppu-operator --tail=30 >&2 2>/dev/null || true
  fi
  # Every rank's own account, from the copies kept while the jobs ran (a lost node's pods too).
  if [[ -n "$RANK_LOGS" ]]; then
    ((rc != 0)) && rank_logs_show "$RANK_LOGS"
    rm -rf "$RANK_LOGS"
  fi
  if [[ $KEEP == 0 ]]; then bash "$CL" down || rc=1; fi
  exit $rc
}
trap cleanup EXIT
kubectl() { "$TOOLS/kubectl" "$@"; }

cluster_up() { # a fresh two-node cluster with the image loaded and the operator on node 1
  [[ -f "$PPU_CLUSTER_DIR/holder.pid" ]] && bash "$CL" down
  eval "$(bash "$CL" up --nodes 2 | tail -1)"
  # shellcheck source=/dev/null # written by cluster.sh up: TOOLS, NETPOL, NODES
  source "$PPU_CLUSTER_DIR/env"
  [[ "$NETPOL" == 1 && "$NODES" == 2 ]] || die "cluster.sh up --nodes 2 gave NETPOL=$NETPOL NODES=$NODES"
  bash "$CL" status || die "the cluster is not healthy"
  bash "$CL" load-image "$IMAGE" >/dev/null
  "$HELM" install ppu-operator "$ROOT/charts/ppu-operator" -n "$OPNS" --create-namespace \
    --set image.repository="${IMAGE%:*}" --set image.tag="${IMAGE##*:}" --set image.pullPolicy=Never \
    --set operator.scrapeInterval=2s --set "nodeSelector.kubernetes\.io/hostname=$N1" \
    --set "metricsAuth.readers[0].name=e2e-metrics" --set "metricsAuth.readers[0].namespace=$OPNS" \
    --wait --timeout 180s >/dev/null
  kubectl -n "$OPNS" create serviceaccount e2e-metrics >/dev/null
  kubectl create namespace "$NS" >/dev/null
  kubectl label namespace "$NS" pod-security.kubernetes.io/enforce=restricted >/dev/null
  # Copies of the rank pods' logs (rank-logs.sh): one copier for the script, across clusters.
  if [[ -z "$RANK_LOGS" ]]; then
    RANK_LOGS="$(mktemp -d /var/tmp/ppu-nodes-rank-logs.XXXXXX)"
    rank_logs_start "$RANK_LOGS" "$NS"
  fi
}

# job NAME RECOVERY STEPS [SLICES]: the cpu-tiny sample's training (N = SLICES, default its 2), 4
# ranks spread over the nodes by the user's affinity, checkpoints on a ReadWriteMany claim,
# evicted 5 s after their node is lost. Each rank is limited to 250m of CPU: a node's loss takes
# Kubernetes about 90 s to act on (40 s to NotReady, the pods' 30 s grace, the replacement's
# start), and at 1 CPU each the survivors ran the rest of the job in that time (the replacements
# rejoined 8 s before its end); at 250m the job lasts several minutes and the lost ranks are back
# for most of it, while the band's local runs (scripts/cluster/band.sh) cost no more.
# network.max_degraded_rounds 1000: this job's rounds last a fraction of a second, so the default
# (20 rounds, sized for rounds of minutes) would end a node loss's minute-long replacement in a
# gang restart (it did, 2026-11-27).
job() {
  ppujob_head "$NS" "$1" "ckpt-$1" "$IMAGE" | sed 's/limits: {cpu: "1",/limits: {cpu: 250m,/'
  cat <<EOF
  scheduling:
    affinity:
      podAntiAffinity:
        preferredDuringSchedulingIgnoredDuringExecution:
        - weight: 100
          podAffinityTerm:
            topologyKey: kubernetes.io/hostname
            labelSelector:
              matchLabels: {ppu.dev/job: $1}
              matchExpressions: [{key: ppu.dev/rank, operator: Exists}]
      nodeAffinity: # a tie-breaker: the live store (created first, no rank yet) goes to node 1
        preferredDuringSchedulingIgnoredDuringExecution:
        - weight: 1
          preference: {matchExpressions: [{key: kubernetes.io/hostname, operator: In, values: [$N1]}]}
    tolerations:
    - {key: node.kubernetes.io/unreachable, operator: Exists, effect: NoExecute, tolerationSeconds: 5}
    - {key: node.kubernetes.io/not-ready, operator: Exists, effect: NoExecute, tolerationSeconds: 5}
EOF
  sed -n '/^  training:/,$p' "$ROOT/manifests/samples/cpu-tiny.yaml" | sed "s/steps: 200,/steps: $3,/" \
    | sed "s/^    checkpoint: /    network: {recovery: $2, heartbeat_s: 5, max_degraded_rounds: 1000}\n    checkpoint: /" \
    | sed "s/slices: 2}/slices: ${4:-2}}/"
}
ppj() { kubectl -n "$NS" get ppj "$1" -o jsonpath="{.status.$2}"; }
wait_phase() { # wait_phase JOB PHASE SECONDS
  local i p
  for ((i = 0; i < $3; i += 2)); do
    p="$(ppj "$1" phase)"
    [[ "$p" == "$2" ]] && return 0
    [[ "$p" == Failed ]] && die "PPUJob $1 Failed: $(kubectl -n "$NS" get ppj "$1" -o jsonpath='{.status}')"
    sleep 2
  done
  die "PPUJob $1 not $2 after $3 s (phase '$p')"
}
wait_round() { # wait_round JOB ROUND
  local i r
  for ((i = 0; i < 900; i += 2)); do
    r="$(ppj "$1" outerRound)"
    [[ "$r" =~ ^[0-9]+$ && "$r" -ge $2 ]] && return 0
    [[ "$(ppj "$1" phase)" == Failed ]] && die "$1 Failed: $(kubectl -n "$NS" get ppj "$1" -o jsonpath='{.status}')"
    sleep 2
  done
  die "$1 never reached round $2 (at '$r')"
}
nodes_of() { # nodes_of JOB: "rank node" per rank pod
  kubectl -n "$NS" get pod -l "ppu.dev/job=$1" -o jsonpath='{range .items[*]}{.metadata.labels.ppu\.dev/rank} {.spec.nodeName}{"\n"}{end}' | sort -n
}
pv_dir() {
  local pv
  pv="$(kubectl -n "$NS" get pvc "$1" -o jsonpath='{.spec.volumeName}')"
  kubectl get pv "$pv" -o jsonpath='{.spec.hostPath.path}'
}
checksum() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["param_checksum"])' "$1"; }
same_parameters() { # same_parameters JOB: every rank's summary names the same parameters
  local d s0 r
  d="$(pv_dir "ckpt-$1")"
  s0="$(checksum "$d/summary-rank-0.json")"
  for r in 1 2 3; do [[ "$(checksum "$d/summary-rank-$r.json")" == "$s0" ]] || die "$1: rank $r ends with other parameters than rank 0"; done
  echo "$s0"
}
spread() { # spread JOB: the job's ranks run on both nodes; prints the ranks on node 2
  local placement on1 on2
  wait_phase "$1" Running 300
  kubectl -n "$NS" wait --for=condition=Ready pod -l "ppu.dev/job=$1,ppu.dev/rank" --timeout=180s >/dev/null
  placement="$(nodes_of "$1")"
  on1="$(awk -v n="$N1" '$2 == n {printf "%s ", $1}' <<<"$placement")"
  on2="$(awk -v n="$N2" '$2 == n {printf "%s ", $1}' <<<"$placement")"
  [[ -n "$on1" && -n "$on2" ]] || die "$1's ranks are not spread over both nodes: $(tr '\n' ';' <<<"$placement")"
  echo "$on2"
}
rejoined() { # rejoined JOB "RANKS": each rank's replacement logs that the live group took it back
  local r i log
  for r in $2; do
    for ((i = 0; i < 240; i += 2)); do
      log="$(kubectl -n "$NS" logs "$1-rank-$r" 2>/dev/null || true)"
      [[ "$log" == *"rank $r rejoined in round"* ]] && break
      [[ "$(ppj "$1" phase)" == Succeeded ]] && die "$1 Succeeded before rank $r's replacement rejoined: the lost ranks trained none of it"
      sleep 2
    done
    [[ "$log" == *"rank $r rejoined in round"* ]] || die "$1: rank $r's replacement never logged that it rejoined"
    say "$1: $(grep -o "rank $r rejoined in round [0-9]*" <<<"$log" | head -1)"
  done
}
slices_split() { # slices_split JOB: each slice's owners (pod label ppu.dev/slice) run on both nodes
  local placement
  placement="$(kubectl -n "$NS" get pod -l "ppu.dev/job=$1,ppu.dev/rank" -o jsonpath='{range .items[*]}{.metadata.labels.ppu\.dev/slice} {.spec.nodeName}{"\n"}{end}')"
  [[ "$(awk '$1 != "" {print}' <<<"$placement" | wc -l)" == 4 ]] || die "$1: rank pods without a ppu.dev/slice label: $(tr '\n' ';' <<<"$placement")"
  [[ -z "$(sort -u <<<"$placement" | awk '{print $1}' | sort | uniq -u)" ]] \
    || die "$1: a slice's owners share a node (slice node: $(tr '\n' ';' <<<"$placement")): the operator's slice anti-affinity did not hold"
}
metric() { # metric NAME JOB TEXT: the value of NAME{job="JOB",namespace="$NS"} in a /metrics text
  awk -v n="$1{" -v j="job=\"$2\"" -v ns="namespace=\"$NS\"" 'index($0, n) == 1 && index($0, j) && index($0, ns) {print $2}' <<<"$3"
}
operator_metrics() { # the operator's /metrics, through a port-forward, as the reader e2e-metrics
  local token pf out="" i
  token="$(kubectl -n "$OPNS" create token e2e-metrics)"
  kubectl -n "$OPNS" port-forward deploy/ppu-operator 18089:metrics >/dev/null 2>&1 &
  pf=$!
  for ((i = 0; i < 40; i++)); do
    out="$(python3 -c 'import sys, urllib.request as u
r = u.Request("http://127.0.0.1:18089/metrics", headers={"Authorization": "Bearer " + sys.argv[1]})
print(u.urlopen(r, timeout=5).read().decode())' "$token" 2>/dev/null)" && break
    sleep 0.5
  done
  kill "$pf" 2>/dev/null || true
  wait "$pf" 2>/dev/null || true
  [[ -n "$out" ]] || die "the operator's /metrics did not answer through a port-forward"
  echo "$out"
}
recovery_metrics() { # recovery_metrics JOB RECOVERIES LOST: what the operator exports after a node loss
  local m i forced
  for ((i = 0; i < 30; i++)); do # the job gauges follow status and the ranks' scrape (2 s)
    m="$(operator_metrics)"
    [[ "$(metric ppu_job_recoveries "$1" "$m")" == "$2" && "$(metric ppu_job_live_ranks "$1" "$m")" == 4 ]] && break
    sleep 2
  done
  [[ "$(metric ppu_job_recoveries "$1" "$m")" == "$2" ]] || die "$1: ppu_job_recoveries '$(metric ppu_job_recoveries "$1" "$m")', status.recoveries $2"
  [[ "$(metric ppu_job_live_ranks "$1" "$m")" == 4 ]] || die "$1: ppu_job_live_ranks '$(metric ppu_job_live_ranks "$1" "$m")' after the replacements rejoined"
  [[ "$(metric ppu_job_restarts "$1" "$m")" == 0 ]] || die "$1: ppu_job_restarts '$(metric ppu_job_restarts "$1" "$m")'"
  forced="$(awk '$1 == "ppu_operator_pod_force_deletions_total" {print int($2)}' <<<"$m")"
  if ! [[ "$forced" =~ ^[0-9]+$ ]] || ((forced < $3)); then
    die "ppu_operator_pod_force_deletions_total '$forced' after $3 pod(s) force-deleted"
  fi
  say "operator metrics: ppu_job_recoveries $2, ppu_job_live_ranks 4, ppu_job_restarts 0, force deletions $forced"
}
# Long enough (about five minutes at 250m per rank, about 3 rounds a second) that a replacement,
# about 90 s after the loss, rejoins well before the end; the gang job only needs to outlast its
# restart.
STEPS=10000
ROUNDS=$((STEPS / 10))
GANG_STEPS=5000
grep -q 'sync_every: 10,' "$ROOT/manifests/samples/cpu-tiny.yaml" || die "cpu-tiny.yaml no longer has outer.sync_every 10; update ROUNDS"

# The fault-free band of steps 2 and 2b (scripts/cluster/band.sh) runs in the background from here
# on: the rank pods are capped at 250m each, so about a core is idle while they train; step 4
# reads the band at the end.
BAND="$(mktemp -d /var/tmp/ppu-nodes-band.XXXXXX)"
band_start "$BAND" < <(job spread live "$STEPS" 2) || die "steps 2 and 2b compare with local fault-free runs and cannot start them"

# ---- 1 and 2: spread, trains, loses node 2 under live recovery --------------------------------
cluster_up
say "two nodes Ready, NetworkPolicies enforced on both, operator on $N1"
# N = 2: a node holding both owners of a slice would take that slice with it, which live recovery
# cannot cover (the survivors exit 3 and the gang restarts, by design: docs/RECOVERY.md). The
# operator's anti-affinity between a slice's owners is what keeps them apart.
job spread live "$STEPS" 2 | kubectl apply -f - >/dev/null
lost="$(spread spread)"
slices_split spread
wait_round spread 2
[[ "$(ppj spread lastCheckpointRound)" =~ ^[1-9] ]] || wait_round spread 3
pass "4 ranks spread over $N1 and $N2 by spec.scheduling.affinity (ranks ${lost}on $N2), training across the nodes with NetworkPolicies enforced, checkpoints on a ReadWriteMany claim (round $(ppj spread outerRound))"

store_node="$(kubectl -n "$NS" get pod spread-rendezvous -o jsonpath='{.spec.nodeName}')"
[[ "$store_node" == "$N1" ]] || die "the live job's store runs on '$store_node', not $N1: losing $N2 would lose it (a gang restart by design)"
wait_round spread $((ROUNDS / 10))
bash "$CL" stop-node "$N2"
say "stopped $N2 at round $(ppj spread outerRound) (ranks ${lost}were there)"
for ((i = 0; i < 180; i += 2)); do
  ready="$(kubectl get node "$N2" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')"
  [[ "$ready" != True ]] && break
  sleep 2
done
[[ "$ready" != True ]] || die "$N2 still Ready 180 s after it was stopped"
say "$N2 Ready=$ready"
degraded_seen=0
for ((i = 0; i < 600; i += 2)); do
  [[ "$(ppj spread 'conditions[?(@.type=="Degraded")].status')" == True ]] && degraded_seen=1
  n="$(ppj spread recoveries)"
  if [[ "$n" =~ ^[0-9]+$ ]] && ((n >= $(wc -w <<<"$lost"))) && [[ "$(ppj spread liveRanks)" == 4 ]]; then break; fi
  [[ "$(ppj spread phase)" == Failed ]] && die "spread Failed: $(kubectl -n "$NS" get ppj spread -o jsonpath='{.status}')"
  sleep 2
done
((n >= $(wc -w <<<"$lost"))) || die "spread: recoveries '$n', liveRanks '$(ppj spread liveRanks)' after losing ranks $lost"
((degraded_seen == 1)) || die "spread: condition Degraded never True while ranks ${lost}were lost"
forced="$(kubectl -n "$NS" get events --field-selector reason=PodForceDeleted -o jsonpath='{range .items[*]}{.message}{"\n"}{end}')"
[[ "$forced" == *"$N2"* ]] || die "no PodForceDeleted event naming $N2: $forced"
recovery_metrics spread "$n" "$(wc -w <<<"$lost")"
rejoined spread "$lost"
wait_phase spread Succeeded 1200
[[ "$(ppj spread restartCount)" == 0 ]] || die "spread: restartCount $(ppj spread restartCount), expected no gang restart"
[[ "$(ppj spread 'conditions[?(@.type=="Degraded")].status')" == False ]] || die "spread: Degraded not cleared at the end"
placement="$(nodes_of spread)"
[[ -z "$(awk -v n="$N1" '$NF != n' <<<"$placement")" ]] || die "spread: pods not on $N1 at the end: $(tr '\n' ';' <<<"$placement")"
sum="$(same_parameters spread)"
spread_ppl="$(ppj spread perplexity)"
pass "live: $N2 lost; ranks ${lost}force-deleted from it and replaced on $N1 ($(ppj spread recoveries) recoveries, Degraded seen and cleared, the operator's metrics agree), Succeeded with restartCount 0, every rank at parameters $sum, perplexity $spread_ppl (judged against the fault-free band in step 4)"

# ---- 2b: node 2 partitioned, not stopped, then back: its old ranks are fenced -----------------
# The node's processes run on through the partition (a switch failed, not the machine): the
# operator replaces its ranks on node 1 as in step 2; when the node comes back, its old rank
# processes find the live group formed without them and leave (exit 5, out of the group), and its
# kubelet ends the containers of pods the API server no longer has. Nothing of the old pods may
# rejoin: no gang restart, no loss counted twice, the replacements train on.
cluster_up
job part live "$STEPS" 2 | kubectl apply -f - >/dev/null
lost="$(spread part)"
slices_split part
wait_round part $((ROUNDS / 10))
bash "$CL" partition-node "$N2"
say "partitioned $N2 at round $(ppj part outerRound) (ranks ${lost}were there)"
for ((i = 0; i < 600; i += 2)); do
  n="$(ppj part recoveries)"
  if [[ "$n" =~ ^[0-9]+$ ]] && ((n >= $(wc -w <<<"$lost"))) && [[ "$(ppj part liveRanks)" == 4 ]]; then break; fi
  [[ "$(ppj part phase)" == Failed ]] && die "part Failed: $(kubectl -n "$NS" get ppj part -o jsonpath='{.status}')"
  sleep 2
done
((n == $(wc -w <<<"$lost"))) || die "part: recoveries '$n', liveRanks '$(ppj part liveRanks)' after partitioning ranks $lost"
rejoined part "$lost"
old_ranks_on_n2() { # processes of ppu-train still running in node 2's cgroup
  local p c=0
  for p in $(pgrep -x ppu-train); do grep -q "/node-2/" "/proc/$p/cgroup" 2>/dev/null && c=$((c + 1)); done
  echo "$c"
}
running="$(old_ranks_on_n2)"
((running > 0)) || die "part: no old rank runs on the partitioned $N2: the test would not show the fence"
bash "$CL" heal-node "$N2"
say "healed $N2 at round $(ppj part outerRound) with $running old rank process(es) still running there"
for ((i = 0; i < 180; i += 2)); do
  ready="$(kubectl get node "$N2" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')"
  [[ "$ready" == True && "$(old_ranks_on_n2)" == 0 ]] && break
  sleep 2
done
[[ "$ready" == True ]] || die "part: $N2 not Ready 180 s after it was healed"
[[ "$(old_ranks_on_n2)" == 0 ]] || die "part: $(old_ranks_on_n2) old rank process(es) still run on $N2 180 s after it came back"
wait_phase part Succeeded 1200
[[ "$(ppj part restartCount)" == 0 ]] || die "part: restartCount $(ppj part restartCount): the returning node restarted the gang"
[[ "$(ppj part recoveries)" == "$n" ]] || die "part: recoveries $(ppj part recoveries), $n before the node came back: an old pod counted again"
placement="$(nodes_of part)"
[[ -z "$(awk -v n="$N1" '$NF != n' <<<"$placement")" ]] || die "part: pods not on $N1 at the end: $(tr '\n' ';' <<<"$placement")"
sum="$(same_parameters part)"
part_ppl="$(ppj part perplexity)"
pass "live: $N2 partitioned; ranks ${lost}replaced on $N1; when it came back its $running old rank process(es) were fenced and ended (no rejoin, no gang restart, recoveries still $n), Succeeded, every rank at parameters $sum, perplexity $part_ppl (judged in step 4)"

# ---- 3: the same loss under gang recovery, on a fresh cluster ---------------------------------
cluster_up
ROUNDS=$((GANG_STEPS / 10))
job gang gang "$GANG_STEPS" | kubectl apply -f - >/dev/null
lost="$(spread gang)"
for ((i = 0; i < 600; i += 2)); do
  ck="$(ppj gang lastCheckpointRound)"
  [[ "$ck" =~ ^[0-9]+$ ]] && ((ck >= ROUNDS / 10)) && break
  sleep 2
done
((ck >= ROUNDS / 10)) || die "gang: no checkpoint at round $((ROUNDS / 10)) (last '$ck')"
bash "$CL" stop-node "$N2"
say "stopped $N2 at round $(ppj gang outerRound), checkpoint round $ck (ranks ${lost}were there)"
for ((i = 0; i < 600; i += 2)); do
  rc="$(ppj gang restartCount)"
  [[ "$rc" =~ ^[0-9]+$ ]] && ((rc >= 1)) && [[ "$(ppj gang phase)" == Running ]] && break
  [[ "$(ppj gang phase)" == Failed ]] && die "gang Failed: $(kubectl -n "$NS" get ppj gang -o jsonpath='{.status}')"
  sleep 2
done
[[ "$(ppj gang phase)" == Running ]] || die "gang: no new gang running 600 s after the loss (restartCount '$rc', phase $(ppj gang phase))"
for ((i = 0; i < 240; i += 2)); do
  resumed="$(kubectl -n "$NS" logs gang-rank-0 2>/dev/null | grep -m1 'resumed from' || true)"
  [[ -n "$resumed" ]] && break
  sleep 2
done
[[ -n "$resumed" ]] || die "gang: the new rank 0 never logged 'resumed from' a checkpoint"
wait_phase gang Succeeded 1200
[[ "$(ppj gang restartCount)" == 1 ]] || die "gang: restartCount $(ppj gang restartCount), expected exactly 1"
placement="$(nodes_of gang)"
[[ -z "$(awk -v n="$N1" '$NF != n' <<<"$placement")" ]] || die "gang: pods not on $N1 at the end: $(tr '\n' ';' <<<"$placement")"
forced="$(kubectl -n "$NS" get events --field-selector reason=PodForceDeleted -o jsonpath='{range .items[*]}{.message}{"\n"}{end}')"
[[ "$forced" == *"$N2"* ]] || die "gang: no PodForceDeleted event naming $N2: $forced"
sum="$(same_parameters gang)"
pass "gang: $N2 lost; one gang restart on $N1 (old pods force-deleted), rank 0 ${resumed#*] }, Succeeded, every rank at parameters $sum"

# ---- 4. the live jobs' perplexity against the fault-free band --------------------------------
band_wait || die "step 4 compares with local fault-free runs, and one failed"
read -r lo hi p0 < <(band_of "$BAND") || die "the fault-free runs left no summary in $BAND"
in_band "$lo" "$hi" "$spread_ppl" || die "spread: final perplexity '$spread_ppl' outside the fault-free band [$lo, $hi]"
pass "live: after losing $N2, perplexity $spread_ppl inside the fault-free band [$lo, $hi] (seed 0 fault-free: $p0)"
in_band "$lo" "$hi" "$part_ppl" || die "part: final perplexity '$part_ppl' outside the fault-free band [$lo, $hi]"
pass "live: after partitioning $N2, perplexity $part_ppl inside the fault-free band [$lo, $hi]"
echo "cluster-nodes-e2e: all checks passed in $(($(date +%s) - T0)) s"
