#!/usr/bin/env bash
# End to end on a real single-node cluster (scripts/cluster.sh), with the image built here
# (scripts/build-image.sh) and the chart installed by helm (ctest label `cluster`):
#   1. helm install charts/ppu-operator: the operator runs in-cluster under its ServiceAccount
#      (no kubeconfig: the in-cluster config path) and becomes Ready;
#   2. a CPU PPUJob (4 ranks, tiny model, checkpoints on a PersistentVolume) in a namespace that
#      enforces the `restricted` Pod Security Standard: ranks rendezvous through the headless
#      Service's DNS name (CoreDNS), train, and `kubectl get ppj` shows round and perplexity;
#   3. while it trains: rank containers and the operator's run as uid 65532, with no_new_privs,
#      seccomp filtering and a read-only root filesystem (read from the kernel, /proc/PID/status
#      and mountinfo); the operator's ServiceAccount is refused what its RBAC does not grant
#      (auth can-i, and a real request with its token);
#   4. Prometheus discovers the operator and the rank pods through Kubernetes service discovery,
#      and every dashboard panel and variable returns data for that job (Prometheus 2.54 from its
#      Go module: Debian's 2.42 is built without Kubernetes discovery);
#   4b. NetworkPolicies enforced (cluster.sh's kube-network-policies), with two PPUJobs of 2 ranks
#      started for it: tests/cluster/isolation_check.sh probes, from real pods, every port the
#      first job's pods listen on (store, metrics, Gloo) and the operator's metrics and health
#      ports: the job's own rank reaches its job; a pod in another namespace carrying the job's
#      labels, a rank of the second PPUJob and a plain pod in the namespace are dropped
#      everywhere; a pod in `monitoring` (the chart's default metricsNamespaces, metricsFrom and
#      healthFrom) scrapes every rank and reaches the operator's two ports, and nothing else.
#      Each assertion prints its own PASS/FAIL line;
#   5. the same job again, one rank's container killed with SIGKILL a third of the way through:
#      gang restart, the new gang resumes from the checkpoint on the volume, Succeeded, and every
#      rank's final param_checksum equals the uninterrupted run's;
#   5b. chaos under network.recovery=live, five faults in one job, each with its own PASS line:
#      rank 2's pod deleted as a round's outer sync starts; the rendezvous pod deleted (recreated
#      alone, event StoreReplaced); rank 0's container SIGKILLed; rank 3's pod deleted and the
#      operator's pod deleted while it replaces it; rank 1's traffic dropped for 12 s (a
#      NetworkPolicy denies its egress, and its packets are dropped at its node's bridge both
#      ways). After each rank fault only that pod is recreated (the others keep their UIDs)
#      and condition Degraded is seen True, then False; the job Succeeds with restartCount 0 and 4 recoveries, every rank with
#      the same parameters, its perplexity inside the fault-free band (scripts/cluster/band.sh:
#      seed 0's fault-free run -/+ the range of three seeds, run here by the image's ppu-launch in
#      the background from the script's start, on the CPU the cluster leaves idle; judged last, 5c);
#   6. manifests/samples/cpu-tiny.yaml applied as shipped (its image name is an alias that
#      `cluster.sh load-image --as` gave the built image) runs to Succeeded, and its final status
#      (round, perplexity, checkpoint round, ResultReported) is what the same training section
#      gives when run here by the image's ppu-launch (the sample's pods are cleaned up, so there
#      are no logs to read); the ref job's status is checked against its ranks' summaries on its
#      volume;
#   7. manifests/samples/cpu-tiny-export.yaml (a PVC and a PPUJob with spec.export) applied as
#      shipped: it Succeeds, the operator's export Job writes the model (Exported=True, column
#      EXPORT ModelExported, status.export at the last checkpoint round); the PPUJob is deleted
#      (its export Job goes with it) and a pod that mounts the claim, as a server would, finds the
#      Hugging Face directory there: model.safetensors, and a config.json of model_type gpt_neox;
#   8. Kueue (scripts/cluster.sh kueue-up; the chart with kueue.enabled) and the queue of
#      manifests/samples/kueue-queue.yaml sized for one 4-rank gang: two queued jobs submitted
#      together, one runs, the other waits (reason Queued with Kueue's message, no pod);
#      suspending the first hands its quota to the second, and the first, resumed, queues again
#      and finishes from its checkpoint; a high-priority job preempts a running low one (its pods
#      deleted, reason Evicted), which is admitted again afterwards, resumes from its checkpoint
#      and Succeeds with restartCount 0; a queued job deleted while waiting leaves no Workload
#      and no pod; every Workload goes with its PPUJob.
# Prints how long each phase took. Needs root.
#
# Usage: scripts/cluster-e2e.sh [--keep] [--rebuild-image]
#   --keep           leave the cluster running afterwards (default: `cluster.sh down`)
#   --rebuild-image  rebuild the image even if podman has one (default: build only if missing)
#   PPU_CLUSTER_DIR  cluster state dir (default /var/lib/ppu-cluster-e2e)
#   PPU_IMAGE        image to test (default localhost/ppu:dev)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$ROOT/scripts/cluster/ppujob.sh"
source "$ROOT/scripts/cluster/band.sh"
source "$ROOT/scripts/cluster/rank-logs.sh"
export PPU_CLUSTER_DIR="${PPU_CLUSTER_DIR:-/var/lib/ppu-cluster-e2e}"
export PPU_CLUSTER_PORT="${PPU_CLUSTER_PORT:-16445}"
KEEP=0
REBUILD=0
for a in "$@"; do
  case "$a" in
    --keep) KEEP=1 ;;
    --rebuild-image) REBUILD=1 ;;
    -h | --help)
      sed -n '2,62p' "$0"
      exit 0
      ;;
    *)
      echo "cluster-e2e: unknown flag '$a' (try --help)" >&2
      exit 2
      ;;
  esac
done
CL="$ROOT/scripts/cluster.sh"
IMAGE="${PPU_IMAGE:-localhost/ppu:dev}" # a podman image; built by scripts/build-image.sh if missing
NS=ppu-e2e
OPNS=ppu-system
T0=$(date +%s)
TP=$T0
say() { echo "[cluster-e2e +$(($(date +%s) - T0))s] $*"; }
die() {
  echo "FAIL: $*" >&2
  exit 1
}
phase() {
  local now
  now=$(date +%s)
  echo "[cluster-e2e] phase '$1' took $((now - TP)) s"
  TP=$now
}

# ---- the jobs' manifests (text only) -----------------------------------------------------------
job() { # job NAME CLAIM STEPS: the cpu-tiny sample on our image and a PersistentVolumeClaim
  ppujob_head "$NS" "$1" "$2" "$IMAGE"
  # spec.training: the sample's, longer so that a kill lands mid-run.
  sed -n '/^  training:/,$p' "$ROOT/manifests/samples/cpu-tiny.yaml" | sed "s/steps: 200,/steps: $3,/"
}
# Long enough (about two minutes here) that every check below sees the ranks running; the sample
# synchronises every 10 steps, so STEPS/10 outer rounds.
STEPS=3000
ROUNDS=$((STEPS / 10))
grep -q 'sync_every: 10,' "$ROOT/manifests/samples/cpu-tiny.yaml" || die "cpu-tiny.yaml no longer has outer.sync_every 10; update ROUNDS"
LIVE_STEPS=$((STEPS * 4))
live_training() { # the live job's PPUJob on claim $1
  # max_degraded_rounds: rounds here last a fraction of a second; the default 20 (sized for rounds
  # of minutes) would turn a replacement that takes a lease hand-over into a gang restart.
  job live "$1" "$LIVE_STEPS" | sed 's/^    checkpoint: /    network: {recovery: live, heartbeat_s: 5, max_degraded_rounds: 1000}\n    checkpoint: /'
}

# ---- prerequisites: Debian packages, tools, image, cluster -----------------------------------
[[ $(id -u) == 0 ]] || die "needs root (containerd, namespaces, cgroups)"
PROM_PID=""
BAND=""
RANK_LOGS=""
cleanup() {
  local rc=$?
  band_stop
  rank_logs_stop
  [[ -n "$BAND" ]] && rm -rf "$BAND"
  if [[ -n "$PROM_PID" ]]; then
    kill "$PROM_PID" 2>/dev/null || true
    wait "$PROM_PID" 2>/dev/null || true
  fi
  if ((rc != 0)) && [[ -f "$PPU_CLUSTER_DIR/kubeconfig" ]]; then
    echo "--- state at failure" >&2
    kubectl get ppj,pods,pvc -A -o wide >&2 2>/dev/null || true
    kubectl -n "$OPNS" logs deploy/ppu-operator --tail=30 >&2 2>/dev/null || true
  fi
  # What each rank of the namespace's jobs saw of its group (faults, fencing, re-formations),
  # from the copies kept while they ran: a pod replaced or restarted before the failure too.
  if [[ -n "$RANK_LOGS" ]]; then
    ((rc != 0)) && rank_logs_show "$RANK_LOGS"
    rm -rf "$RANK_LOGS"
  fi
  if [[ $KEEP == 0 ]]; then
    TP=$(date +%s)
    bash "$CL" down || rc=1
    phase "cluster down"
  fi
  exit $rc
}
trap cleanup EXIT
bash "$CL" deps
if [[ $REBUILD == 1 ]] || ! podman image exists "$IMAGE"; then bash "$ROOT/scripts/build-image.sh" --tag "$IMAGE" >/dev/null; fi
phase image
# Step 5b's fault-free band (scripts/cluster/band.sh: the image's ppu-launch) runs in the
# background from here on, on the CPU that the builds and the cluster leave idle; step 5c reads it
# at the end.
BAND="$(mktemp -d /var/tmp/ppu-e2e-band.XXXXXX)"
band_start "$BAND" < <(live_training ckpt-band) || die "step 5c compares with local fault-free runs and cannot start them"
HELM="$(bash "$ROOT/scripts/build-helm.sh" | tail -1)"
# Prometheus with Kubernetes service discovery: Debian's 2.42 is built without it, so it comes
# from its Go module (tests/cluster/prometheus/go.mod).
PROM="$(bash "$ROOT/scripts/build-cluster-tools.sh" --prometheus | tail -1)/prometheus"
bash "$ROOT/scripts/build-cluster-tools.sh" --kueue >/dev/null # step 8 (cluster.sh kueue-up runs it)
phase tools
[[ -f "$PPU_CLUSTER_DIR/holder.pid" ]] && bash "$CL" down
eval "$(bash "$CL" up | tail -1)"
# shellcheck source=/dev/null # written by cluster.sh up: TOOLS
source "$PPU_CLUSTER_DIR/env"
kubectl() { "$TOOLS/kubectl" "$@"; }
phase "cluster up"
RANK_LOGS="$(mktemp -d /var/tmp/ppu-e2e-rank-logs.XXXXXX)"
rank_logs_start "$RANK_LOGS" "$NS"
# Also under the samples' image name, so that a sample applied as shipped finds it (step 6).
SAMPLE_IMAGE="$(sed -n 's/^  image: *//p' "$ROOT/manifests/samples/cpu-tiny.yaml")"
[[ -n "$SAMPLE_IMAGE" ]] || die "manifests/samples/cpu-tiny.yaml names no spec.image"
bash "$CL" load-image "$IMAGE" --as "$SAMPLE_IMAGE"
phase "image into containerd"

# ---- 1. the operator, in-cluster --------------------------------------------------------------
"$HELM" install ppu-operator "$ROOT/charts/ppu-operator" -n "$OPNS" --create-namespace \
  --set image.repository="${IMAGE%:*}" --set image.tag="${IMAGE##*:}" --set image.pullPolicy=Never \
  --set operator.scrapeInterval=2s --wait --timeout 180s >/dev/null
SA="$(kubectl -n "$OPNS" get deploy ppu-operator -o jsonpath='{.spec.template.spec.serviceAccountName}')"
[[ -n "$SA" && "$SA" != default ]] || die "operator Deployment has no ServiceAccount of its own ('$SA')"
OPPOD="$(kubectl -n "$OPNS" get pod -l app.kubernetes.io/name=ppu-operator -o jsonpath='{.items[0].metadata.name}')"
kubectl -n "$OPNS" get pod "$OPPOD" -o jsonpath='{.spec.containers[0].args}' | grep -q kubeconfig \
  && die "operator started with --kubeconfig; the in-cluster path is not exercised"
kubectl -n "$OPNS" wait --for=condition=Ready "pod/$OPPOD" --timeout=60s >/dev/null
say "operator $OPPOD Ready under ServiceAccount $SA, in-cluster config"
phase "helm install"

# ---- 2. a PPUJob in a restricted namespace ----------------------------------------------------
kubectl create namespace "$NS" >/dev/null
kubectl label namespace "$NS" pod-security.kubernetes.io/enforce=restricted >/dev/null
pv_dir() { # host directory of the PersistentVolume bound to claim $1
  local pv
  pv="$(kubectl -n "$NS" get pvc "$1" -o jsonpath='{.spec.volumeName}')"
  kubectl get pv "$pv" -o jsonpath='{.spec.hostPath.path}'
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
job ref ckpt-ref "$STEPS" | kubectl apply -f - >/dev/null
wait_phase ref Running 240
MASTER="$(kubectl -n "$NS" get pod -l ppu.dev/job=ref -o jsonpath='{.items[0].spec.containers[0].env[?(@.name=="MASTER_ADDR")].value}')"
[[ "$MASTER" =~ ^[a-z0-9.-]+$ && ! "$MASTER" =~ ^[0-9.]+$ ]] || die "MASTER_ADDR '$MASTER' is not a DNS name"
say "ref Running; ranks rendezvous at $MASTER (a headless Service name, resolved by CoreDNS)"
phase "job scheduled and running"

# ---- 3. security, read from the kernel and the API server while the ranks run -----------------
bash "$ROOT/tests/cluster/security_check.sh" "$NS" ref "$OPNS" "$SA"
phase "security checks"

# ---- 4. Prometheus through Kubernetes service discovery ---------------------------------------
# A ServiceAccount for Prometheus: discovery (pods, endpoints) and GET /metrics (the operator
# may authorise scrapes with TokenReview/SubjectAccessReview).
kubectl apply -f - >/dev/null <<EOF
apiVersion: v1
kind: ServiceAccount
metadata: {name: prometheus, namespace: $OPNS}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: ppu-e2e-prometheus}
rules:
- apiGroups: [""]
  resources: [pods, endpoints, services]
  verbs: [get, list, watch]
- nonResourceURLs: [/metrics]
  verbs: [get]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: ppu-e2e-prometheus}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: ppu-e2e-prometheus}
subjects: [{kind: ServiceAccount, name: prometheus, namespace: $OPNS}]
EOF
PW="$PPU_CLUSTER_DIR/prometheus"
mkdir -p "$PW"
kubectl -n "$OPNS" create token prometheus --duration=2h >"$PW/token"
cp "$PPU_CLUSTER_DIR/pki/ca.crt" "$PW/ca.crt"
cat >"$PW/prometheus.yml" <<EOF
global: {scrape_interval: 2s, evaluation_interval: 2s}
scrape_configs:
  - job_name: ppu-ranks     # the chart's PodMonitor, as plain service discovery
    kubernetes_sd_configs:
      - role: pod
        api_server: https://127.0.0.1:443
        tls_config: {ca_file: $PW/ca.crt}
        bearer_token_file: $PW/token
    relabel_configs:
      - {source_labels: [__meta_kubernetes_pod_label_ppu_dev_job], regex: .+, action: keep}
      - {source_labels: [__meta_kubernetes_pod_container_port_name], regex: metrics, action: keep}
      - {source_labels: [__meta_kubernetes_pod_label_ppu_dev_job], target_label: job}
      - {source_labels: [__meta_kubernetes_namespace], target_label: namespace}
      - {source_labels: [__meta_kubernetes_pod_name], target_label: pod}
  - job_name: ppu-operator  # the chart's metrics Service, through its endpoints
    honor_labels: true
    bearer_token_file: $PW/token
    kubernetes_sd_configs:
      - role: endpoints
        namespaces: {names: [$OPNS]}
        api_server: https://127.0.0.1:443
        tls_config: {ca_file: $PW/ca.crt}
        bearer_token_file: $PW/token
    relabel_configs:
      - {source_labels: [__meta_kubernetes_service_name], regex: ppu-operator-metrics, action: keep}
      - {source_labels: [__meta_kubernetes_endpoint_port_name], regex: metrics, action: keep}
EOF
bash "$CL" netns "$PROM" --config.file="$PW/prometheus.yml" --storage.tsdb.path="$PW/tsdb" \
  --web.listen-address=127.0.0.1:9090 --log.level=warn >"$PW/prometheus.log" 2>&1 &
PROM_PID=$!
bash "$CL" netns python3 "$ROOT/tests/cluster/dashboards_live.py" --prometheus http://127.0.0.1:9090 \
  --namespace "$NS" --job ref --timeout 300 || die "dashboard panels without data (see $PW/prometheus.log)"
phase "prometheus: every panel has data"

# `kubectl get ppj` columns: round and perplexity from the ranks' metrics.
for ((i = 0; i < 120; i++)); do
  line="$(kubectl -n "$NS" get ppj ref --no-headers)"
  read -r _ _ _ round ppl _ <<<"$line"
  [[ "$round" =~ ^[0-9]+$ && "$round" -ge 1 && "$ppl" =~ ^[0-9.]+$ ]] && break
  sleep 2
done
[[ "$round" =~ ^[0-9]+$ && "$ppl" =~ ^[0-9.]+$ ]] || die "kubectl get ppj shows no round/perplexity: '$line'"
say "kubectl get ppj ref: $line"

# ---- 4b. who may connect to a job and the operator, with NetworkPolicies enforced ------------
[[ "${NETPOL:-0}" == 1 ]] || die "the cluster does not enforce NetworkPolicies (cluster.sh up without --no-network-policy)"
# Two PPUJobs of their own in the job namespace (2 ranks each, checkpoints on an emptyDir), long
# enough to be running throughout whatever ref is doing: iso, whose ports are probed, and
# iso-other, a rank of which is the other PPUJob's. Deleted after the check.
small_job() { # small_job NAME: job() with 2 ranks, 100000 steps, no claim
  job "$1" none 100000 | sed -n '/^apiVersion: ppu.dev/,$p' \
    | sed -e 's/^  replicas: 4$/  replicas: 2/' -e 's/checkpoint: {claimName: none}/checkpoint: {volumeSource: {emptyDir: {}}}/'
}
{
  small_job iso
  echo ---
  small_job iso-other
} | kubectl apply -f - >/dev/null
probe_pod() { # probe_pod NAMESPACE LABELS: a pod "probe" that sleeps, with the image's bash for probes
  cat <<EOF
apiVersion: v1
kind: Pod
metadata: {name: probe, namespace: $1, labels: $2}
spec:
  automountServiceAccountToken: false
  terminationGracePeriodSeconds: 1
  securityContext: {runAsNonRoot: true, runAsUser: 65532, runAsGroup: 65532, seccompProfile: {type: RuntimeDefault}}
  containers:
  - name: probe
    image: $IMAGE
    imagePullPolicy: Never
    command: [sleep, infinity]
    resources: {requests: {cpu: 10m, memory: 16Mi}, limits: {cpu: 200m, memory: 64Mi}}
    securityContext: {allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: {drop: [ALL]}}
EOF
}
kubectl create namespace monitoring >/dev/null
kubectl create namespace ppu-outside >/dev/null
{
  probe_pod monitoring "{}"
  echo ---
  probe_pod ppu-outside "{ppu.dev/job: iso}" # the probed job's own labels, in another namespace
  echo ---
  probe_pod "$NS" "{}"
} | kubectl apply -f - >/dev/null
for pns in monitoring ppu-outside "$NS"; do kubectl -n "$pns" wait --for=condition=Ready pod/probe --timeout=120s >/dev/null; done
for j in iso iso-other; do
  wait_phase "$j" Running 240
  kubectl -n "$NS" wait --for=condition=Ready pod -l "ppu.dev/job=$j" --timeout=120s >/dev/null
done
bash "$ROOT/tests/cluster/isolation_check.sh" "$NS" iso iso-other "$OPNS" monitoring ppu-outside \
  || die "NetworkPolicies let through what they should not, or block what they should let through (lines above)"
kubectl -n "$NS" delete ppj iso iso-other --wait=false >/dev/null
kubectl -n "$NS" delete pod probe --wait=false >/dev/null
kubectl delete namespace monitoring ppu-outside --wait=false >/dev/null
phase "network policies enforced"

wait_phase ref Succeeded 900
REFDIR="$(pv_dir ckpt-ref)"
summary_field() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2"; } # FILE KEY
checksum() { summary_field "$1" param_checksum; }
REF_SUM="$(checksum "$REFDIR/summary-rank-0.json")"
for r in 1 2 3; do [[ "$(checksum "$REFDIR/summary-rank-$r.json")" == "$REF_SUM" ]] || die "ref ranks disagree on param_checksum"; done
say "ref Succeeded, param_checksum $REF_SUM on all 4 ranks"
# Its final status is the ranks' own result, read back a while after completion, when
# the last scrape is long over, against what rank 0's summary on the volume says.
sleep 20
field() { summary_field "$REFDIR/summary-rank-0.json" "$1"; }
REPORTED='conditions[?(@.type=="ResultReported")].status' # ppj JOB "$REPORTED": the condition's status
[[ "$(ppj ref "$REPORTED")" == True ]] \
  || die "ref: condition ResultReported is not True: $(kubectl -n "$NS" get ppj ref -o jsonpath='{.status.conditions}')"
st_round="$(ppj ref outerRound)"
st_ppl="$(ppj ref perplexity)"
st_ckpt="$(ppj ref lastCheckpointRound)"
[[ "$st_round" == "$(field outer_rounds)" && "$st_round" == "$ROUNDS" ]] \
  || die "ref: status.outerRound '$st_round', the ranks ended at round $(field outer_rounds) of $ROUNDS"
python3 -c 'import sys; sys.exit(abs(float(sys.argv[1]) - float(sys.argv[2])) > 5e-4 + 1e-9 * float(sys.argv[2]))' \
  "${st_ppl:-nan}" "$(field eval_perplexity)" || die "ref: status.perplexity '$st_ppl' is not the ranks' final $(field eval_perplexity)"
[[ "$st_ckpt" == "$(field last_checkpoint_round)" ]] \
  || die "ref: status.lastCheckpointRound '$st_ckpt', the ranks' last written $(field last_checkpoint_round)"
say "ref's final status is the ranks' result: round $st_round, perplexity $st_ppl, checkpoint round $st_ckpt"
phase "uninterrupted job"

# ---- 5. kill a rank mid-run: gang restart, resume from the volume, same result ----------------
job kill ckpt-kill "$STEPS" | kubectl apply -f - >/dev/null
wait_phase kill Running 240
KDIR="$(pv_dir ckpt-kill)"
for ((i = 0; i < 600; i++)); do
  r="$(ppj kill outerRound)"
  [[ "$r" =~ ^[0-9]+$ && "$r" -ge $((ROUNDS / 3)) ]] && break
  sleep 1
done
[[ "$r" =~ ^[0-9]+$ && "$r" -ge $((ROUNDS / 3)) ]] || die "kill job never reached round $((ROUNDS / 3)) (at '$r')"
[[ "$(ppj kill phase)" == Running ]] || die "kill job finished before the kill (round $r)"
CID="$(kubectl -n "$NS" get pod -l ppu.dev/job=kill,ppu.dev/rank=1 -o jsonpath='{.items[0].status.containerStatuses[0].containerID}')"
CID="${CID#containerd://}"
[[ -n "$CID" ]] || die "no container id for rank 1"
bash "$CL" netns ctr -a "$PPU_CLUSTER_DIR/run/containerd.sock" -n k8s.io tasks kill -s SIGKILL "$CID"
say "killed rank 1's container $CID (status at round $r)"
for ((i = 0; i < 240; i++)); do
  rc="$(ppj kill restartCount)"
  [[ "$rc" =~ ^[0-9]+$ && "$rc" -ge 1 ]] && break
  sleep 1
done
[[ "$rc" -ge 1 ]] || die "no gang restart after the kill (restartCount '$rc')"
say "gang restart ($rc)"
for ((i = 0; i < 240; i++)); do
  resumed="$(kubectl -n "$NS" logs -l ppu.dev/job=kill,ppu.dev/rank=0 --tail=-1 2>/dev/null | grep -m1 'resumed from' || true)"
  [[ -n "$resumed" ]] && break
  sleep 1
done
[[ -n "$resumed" ]] || die "the restarted rank 0 never logged 'resumed from' a checkpoint"
say "restarted rank 0: ${resumed#*] }"
wait_phase kill Succeeded 900
for r in 0 1 2 3; do
  s="$(checksum "$KDIR/summary-rank-$r.json")"
  [[ "$s" == "$REF_SUM" ]] || die "rank $r param_checksum $s after kill+resume != $REF_SUM uninterrupted"
done
say "killed job Succeeded after $rc gang restart(s) with param_checksum $REF_SUM, equal to the uninterrupted run"
phase "kill, gang restart, resume"

# ---- 5b. chaos under live recovery: each fault replaces only what it hit --------------------------
# network.recovery=live (docs/RECOVERY.md): the operator runs the job's rendezvous pod. One job,
# five faults in turn, each with its own PASS line: rank 2's pod deleted as a round's outer sync
# starts; the rendezvous pod deleted; rank 0's container SIGKILLed; rank 3's pod deleted and the
# operator's pod deleted while it replaces it; rank 1's traffic dropped for 12 s by a
# NetworkPolicy. After each rank fault only that rank's pod is recreated (the others keep their
# UIDs) and condition Degraded is seen True, then False. The job Succeeds with no gang restart and
# 4 recoveries, every rank at the same parameters; its perplexity is judged at the end (5c)
# against the fault-free band of scripts/cluster/band.sh, whose local runs started with the script.
pass() { echo "PASS cluster-e2e: $*"; }
live_training ckpt-live | kubectl apply -f - >/dev/null
wait_phase live Running 240
uid() { kubectl -n "$NS" get pod -l "ppu.dev/job=live,ppu.dev/rank=$1" -o jsonpath='{.items[0].metadata.uid}'; }
live_failed() {
  [[ "$(ppj live phase)" == Failed ]] && die "live job Failed: $(kubectl -n "$NS" get ppj live -o jsonpath='{.status}')"
  [[ "$(ppj live phase)" == Succeeded ]] && die "live job Succeeded before every fault was injected: lengthen LIVE_STEPS"
  return 0
}
live_round() { # live_round ROUND: wait until the job's status reaches outer round ROUND
  local i r
  for ((i = 0; i < 600; i++)); do
    r="$(ppj live outerRound)"
    [[ "$r" =~ ^[0-9]+$ && "$r" -ge $1 ]] && return 0
    live_failed
    sleep 1
  done
  die "live job never reached round $1 (at '$r')"
}
DEGRADED='conditions[?(@.type=="Degraded")].status' # ppj JOB "$DEGRADED": the condition's status
utc_now() { date -u +%Y-%m-%dT%H:%M:%SZ; }
rejoined_line() { # rejoined_line RANK: RANK's pod logged that it rejoined (the log read whole:
  # grep -q ends a pipe early, and kubectl's SIGPIPE would fail it under pipefail)
  local log
  log="$(kubectl -n "$NS" logs "live-rank-$1" 2>/dev/null || true)"
  grep -q "rank $1 rejoined in round" <<<"$log"
}
wait_recovered() { # wait_recovered N SINCE RANK: until status.recoveries is N, RANK's replacement
  # says it rejoined and every rank is in the live group again; and condition Degraded has been
  # True since SINCE (the fault's time, RFC 3339) and is False again. A Degraded spell can be
  # shorter than this loop's poll, so a False whose lastTransitionTime is at or after SINCE counts
  # as seen too: the operator moves that time only when the status changes.
  local i n degraded since_true seen=0
  for ((i = 0; i < 300; i++)); do
    [[ "$(ppj live "$DEGRADED")" == True ]] && seen=1
    n="$(ppj live recoveries)"
    [[ "$n" =~ ^[0-9]+$ && "$n" -ge $1 ]] && break
    live_failed
    sleep 1
  done
  [[ "$n" == "$1" ]] || die "live job: recoveries '$n'; expected $1 after $1 rank loss(es)"
  for ((i = 0; i < 120; i++)); do
    [[ "$(ppj live "$DEGRADED")" == True ]] && seen=1
    rejoined_line "$3" && break
    live_failed
    sleep 1
  done
  rejoined_line "$3" || die "live job: rank $3's replacement never logged that it rejoined"
  for ((i = 0; i < 60; i++)); do
    degraded="$(ppj live "$DEGRADED")"
    [[ "$degraded" == True ]] && seen=1
    since_true="$(ppj live 'conditions[?(@.type=="Degraded")].lastTransitionTime')"
    if [[ "$degraded" == False && "$(ppj live liveRanks)" == 4 ]] && [[ $seen == 1 || ! "$since_true" < "$2" ]]; then
      [[ "$(ppj live recoveries)" == "$1" ]] || die "live job: recoveries $(ppj live recoveries) after recovery $1: a loss counted twice"
      return 0
    fi
    live_failed
    sleep 1
  done
  if [[ $seen == 0 && "$since_true" < "$2" ]]; then
    die "live job: condition Degraded never True while rank $3 was lost (recovery $1; last transition $since_true, fault at $2)"
  fi
  die "live job: condition Degraded not cleared after recovery $1: $(kubectl -n "$NS" get ppj live -o jsonpath='{.status.conditions}')"
}
declare -A UIDS
remember_uids() { for r in 0 1 2 3; do UIDS[$r]="$(uid "$r")"; done; }
only_replaced() { # only_replaced RANK: RANK's pod has a new UID, every other rank's is unchanged
  local r
  for r in 0 1 2 3; do
    if [[ $r == "$1" ]]; then
      [[ "$(uid "$r")" != "${UIDS[$r]}" ]] || die "rank $r's pod was not recreated after it was lost"
    else
      [[ "$(uid "$r")" == "${UIDS[$r]}" ]] || die "rank $r's pod was recreated although only rank $1 was lost"
    fi
  done
  [[ "$(ppj live restartCount)" == 0 ]] || die "the loss of rank $1 restarted the gang (restartCount $(ppj live restartCount))"
}
at_round_boundary() { # at_round_boundary ROUND: returns as rank 1 logs the step that ends a round >= ROUND
  # (log_every = sync_every = 10: the line of a round's last step, when its outer sync starts).
  # (kubectl ends by SIGPIPE once awk has found it: only awk's status counts, even under pipefail.)
  { timeout 600 kubectl -n "$NS" logs -f live-rank-1 --tail=1 || true; } | awk -v from=$(($1 * 10)) '
    match($0, / info step [0-9]+\//) {
      s = substr($0, RSTART + 11, RLENGTH - 12) + 0
      if (s >= from && s % 10 == 0) { found = 1; exit }
    }
    END { exit !found }' || die "rank 1 never logged the end of round $1"
}
store_uid() { kubectl -n "$NS" get pod live-rendezvous -o jsonpath='{.metadata.uid}' 2>/dev/null; }
[[ -n "$(kubectl -n "$NS" get pod live-rendezvous -o name 2>/dev/null)" ]] || die "the live job has no rendezvous pod"
live_round 30
remember_uids
# (1) a rank pod deleted during an outer sync
at_round_boundary 32
fault_at="$(utc_now)"
kubectl -n "$NS" delete pod -l ppu.dev/job=live,ppu.dev/rank=2 --wait=false >/dev/null
say "deleted rank 2's pod as rank 1 logged the end of a round (its outer sync), round $(ppj live outerRound)"
wait_recovered 1 "$fault_at" 2
only_replaced 2
pass "chaos: rank 2's pod deleted during an outer sync; only it was recreated, Degraded seen and cleared, no gang restart"
# (2) the store's pod deleted: recreated alone (event StoreReplaced), the ranks rebuild its keys
# and train on; no rank pod changes, no gang restart. No rank leaves the live group, so Degraded
# is not expected; whether it was seen is printed.
remember_uids
STORE_UID="$(store_uid)"
at_round="$(ppj live outerRound)"
kubectl -n "$NS" delete pod live-rendezvous --wait=false >/dev/null
say "deleted the rendezvous pod at round $at_round"
store_degraded=False
for ((i = 0; i < 300; i++)); do
  [[ "$(ppj live "$DEGRADED")" == True ]] && store_degraded=True
  now="$(store_uid)"
  [[ -n "$now" && "$now" != "$STORE_UID" ]] && break
  sleep 1
done
[[ -n "$now" && "$now" != "$STORE_UID" ]] || die "the rendezvous pod was not recreated after it was deleted"
live_round $((at_round + 5))
replaced="$(kubectl -n "$NS" get events --field-selector reason=StoreReplaced -o jsonpath='{range .items[*]}{.message}{"\n"}{end}')"
[[ -n "$replaced" ]] || die "no StoreReplaced event after the rendezvous pod was deleted"
only_replaced none
pass "chaos: the rendezvous pod deleted, recreated alone ($replaced); the job trains on at round $(ppj live outerRound) (Degraded seen: $store_degraded)"
# (3) rank 0's container SIGKILLed (the store's and the job's first rank)
live_round $((at_round + 20))
remember_uids
CID="$(kubectl -n "$NS" get pod -l ppu.dev/job=live,ppu.dev/rank=0 -o jsonpath='{.items[0].status.containerStatuses[0].containerID}')"
fault_at="$(utc_now)"
bash "$CL" netns ctr -a "$PPU_CLUSTER_DIR/run/containerd.sock" -n k8s.io tasks kill -s SIGKILL "${CID#containerd://}"
say "killed rank 0's container at round $(ppj live outerRound)"
wait_recovered 2 "$fault_at" 0
only_replaced 0
pass "chaos: rank 0's container SIGKILLed; only its pod was recreated, Degraded seen and cleared, no gang restart"
# (4) the operator's pod deleted while it replaces a rank: the next operator (the Deployment's new
# pod, once it holds the lease) finds the loss already counted in status.recoveringRanks and
# finishes the replacement; the loss counts once.
live_round $(($(ppj live outerRound) + 5))
remember_uids
OP_UID="$(kubectl -n "$OPNS" get pod -l app.kubernetes.io/name=ppu-operator -o jsonpath='{.items[0].metadata.uid}')"
OP_NAME="$(kubectl -n "$OPNS" get pod -l app.kubernetes.io/name=ppu-operator -o jsonpath='{.items[0].metadata.name}')"
fault_at="$(utc_now)"
# Back to back: the operator goes while the loss is being handled (whichever of the old and the
# new operator sees it first counts it; the other must not count it again).
kubectl -n "$NS" delete pod -l ppu.dev/job=live,ppu.dev/rank=3 --wait=false >/dev/null
kubectl -n "$OPNS" delete pod -l app.kubernetes.io/name=ppu-operator --wait=false >/dev/null
say "deleted rank 3's pod, then at once the operator's pod"
wait_recovered 3 "$fault_at" 3
only_replaced 3
kubectl -n "$OPNS" wait --for=delete "pod/$OP_NAME" --timeout=120s >/dev/null || die "the operator's old pod $OP_NAME is still there"
kubectl -n "$OPNS" wait --for=condition=Ready pod -l app.kubernetes.io/name=ppu-operator --timeout=120s >/dev/null
[[ "$(kubectl -n "$OPNS" get pod -l app.kubernetes.io/name=ppu-operator -o jsonpath='{.items[0].metadata.uid}')" != "$OP_UID" ]] \
  || die "the operator's pod was not replaced"
pass "chaos: the operator's pod deleted while it replaced rank 3; the next operator finished it (the loss counted once), Degraded seen and cleared, no gang restart"
# (5) rank 1's traffic dropped for 12 s (past twice heartbeat_s 5). The fault enters as a
# NetworkPolicy that selects only rank 1 and allows no egress, so no connection rank 1 opens (a
# store reconnect, a Gloo pair) is admitted. A policy cannot cut a pod off by itself, though:
# policies only allow (the job's own grants rank 1's ingress), and the enforcement judges
# connections, not packets (kube-network-policies queues a connection's first packet and lets the
# kernel pass the rest, as Calico and Cilium do). A connection a peer opened to rank 1 is judged by
# the peer's egress and rank 1's ingress, both allowed; and flushing rank 1's conntrack entries only
# makes a race of it: the first packet after the flush decides the direction, so a peer's
# retransmission brought one of rank 1's store connections through the cut (seen twice: the group
# re-formed with rank 1 in it). So rank 1's packets are also dropped, both ways, at its node's
# bridge for the same 12 s (an nftables table of the bridge family in the node's namespace), as a
# switch port that stops forwarding would. TCP keeps the connections; the others fence rank 1, it
# finds itself out of the group when the cut ends and exits with the code for "I lost the group",
# and only its pod is recreated.
live_round $(($(ppj live outerRound) + 5))
remember_uids
R1IP="$(kubectl -n "$NS" get pod -l ppu.dev/job=live,ppu.dev/rank=1 -o jsonpath='{.items[0].status.podIP}')"
fault_at="$(utc_now)"
kubectl apply -f - >/dev/null <<YAML
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: cut-rank-1, namespace: $NS}
spec:
  podSelector: {matchLabels: {ppu.dev/job: live, ppu.dev/rank: "1"}}
  policyTypes: [Egress]
YAML
bash "$CL" netns nft -f - <<NFT
table bridge ppu_cut_rank_1 {
  chain from_rank { type filter hook prerouting priority -300; ip saddr $R1IP counter drop; }
  chain to_rank { type filter hook postrouting priority -300; ip daddr $R1IP counter drop; }
}
NFT
say "rank 1 ($R1IP) cut off at round $(ppj live outerRound): NetworkPolicy cut-rank-1, and its packets dropped at the bridge"
sleep 12
dropped="$(bash "$CL" netns nft list table bridge ppu_cut_rank_1 | awk '/counter packets/ { for (i = 1; i < NF; i++) if ($i == "packets") n += $(i + 1) } END { print n + 0 }')"
bash "$CL" netns nft delete table bridge ppu_cut_rank_1
kubectl -n "$NS" delete networkpolicy cut-rank-1 >/dev/null
# A cut that dropped nothing cut nothing (rank 1 on another bridge, a rule that never matched).
((dropped > 0)) || die "the bridge dropped none of rank 1's packets during the cut"
say "the cut removed at round $(ppj live outerRound): $dropped of rank 1's packets dropped"
wait_recovered 4 "$fault_at" 1
only_replaced 1
pass "chaos: rank 1's traffic dropped for 12 s (NetworkPolicy and bridge); it was fenced and only its pod recreated, Degraded seen and cleared, no gang restart"
wait_phase live Succeeded 900
[[ "$(ppj live restartCount)" == 0 ]] || die "live job: restartCount '$(ppj live restartCount)', expected no gang restart"
[[ "$(ppj live recoveries)" == 4 ]] || die "live job: recoveries '$(ppj live recoveries)', expected one per rank fault (4)"
LDIR="$(pv_dir ckpt-live)"
LSUM="$(checksum "$LDIR/summary-rank-1.json")"
for r in 0 2 3; do
  [[ "$(checksum "$LDIR/summary-rank-$r.json")" == "$LSUM" ]] || die "live job: rank $r ends with other parameters than rank 1"
done
kubectl -n "$NS" logs live-rank-1 2>/dev/null | grep -E 'lost rank|rejoined in round' | sed 's/^/    /' || true
live_ppl="$(ppj live perplexity)"
pass "chaos: the live job Succeeded after 5 faults with 0 gang restarts and $(ppj live recoveries) recoveries, every rank at $LSUM, perplexity $live_ppl (judged against the fault-free band at the end, step 5c)"
phase "live recovery: five faults, no gang restart"

# ---- 6. a sample as a user applies it: no edits, the default namespace -------------------------
kubectl apply -f "$ROOT/manifests/samples/cpu-tiny.yaml" >/dev/null
NS=default wait_phase cpu-tiny Succeeded 600
line="$(kubectl get ppj cpu-tiny --no-headers)"
say "samples/cpu-tiny.yaml as shipped ($SAMPLE_IMAGE): $line"
ppl="$(kubectl get ppj cpu-tiny -o jsonpath='{.status.perplexity}')"
# It must have learned: uniform guessing over the tiny preset's 256 tokens is perplexity 256.
awk -v p="$ppl" 'BEGIN { exit !(p + 0 > 0 && p + 0 < 64) }' || die "cpu-tiny sample ends at perplexity '$ppl' (>= 64: it did not learn)"
# Its pods are gone (the sample's cleanPodPolicy: All); its final status must be the result of
# the run, read back a while after completion: the same training section run here with
# ppu-launch (checkpoints on, as the operator sets them) ends at the same round and perplexity.
sleep 20
reported="$(NS=default ppj cpu-tiny "$REPORTED")"
[[ "$reported" == True ]] || die "cpu-tiny: condition ResultReported is '$reported', not True"
LOCAL="$PPU_CLUSTER_DIR/cpu-tiny-local"
rm -rf "$LOCAL"
mkdir -p "$LOCAL"
python3 -c 'import sys, yaml
t = yaml.safe_load(open(sys.argv[1]))["spec"]["training"]; t["ranks"] = 4
yaml.safe_dump(t, open(sys.argv[2], "w"))' "$ROOT/manifests/samples/cpu-tiny.yaml" "$LOCAL/training.yaml"
# The image's ppu-launch (in_image, scripts/cluster/band.sh): the pods' binaries and kernel path,
# so the comparison is exact (another BLAS kernel rounds differently).
in_image "$LOCAL" ppu-launch --nproc 4 --config "$LOCAL/training.yaml" --set checkpoint.dir="$LOCAL/ckpt" --summary-dir "$LOCAL" \
  >"$LOCAL/run.log" 2>&1 || die "the local run of cpu-tiny's training section failed: $(tail -3 "$LOCAL/run.log")"
loc() { summary_field "$LOCAL/rank-0.json" "$1"; }
loc_ppl="$(python3 -c 'import sys; print("%.3f" % float(sys.argv[1]))' "$(loc eval_perplexity)")"
st_round="$(NS=default ppj cpu-tiny outerRound)"
st_ppl="$(NS=default ppj cpu-tiny perplexity)"
st_ckpt="$(NS=default ppj cpu-tiny lastCheckpointRound)"
[[ "$st_round" == "$(loc outer_rounds)" ]] || die "cpu-tiny: status.outerRound '$st_round', the local run ends at round $(loc outer_rounds)"
[[ "$st_ppl" == "$loc_ppl" ]] || die "cpu-tiny: status.perplexity '$st_ppl', the local run ends at $loc_ppl"
[[ "$st_ckpt" == "$(loc last_checkpoint_round)" ]] \
  || die "cpu-tiny: status.lastCheckpointRound '$st_ckpt', the local run's last is $(loc last_checkpoint_round)"
st_sum="$(kubectl get ppj cpu-tiny -o jsonpath='{.status.result.parameterChecksum}')"
say "cpu-tiny's final status is the run's result: round $st_round, perplexity $st_ppl, checkpoint round $st_ckpt, as ppu-launch here (parameter checksum in the cluster $st_sum, here $(loc param_checksum))"
kubectl delete -f "$ROOT/manifests/samples/cpu-tiny.yaml" --wait=true >/dev/null
phase "sample as shipped"

# ---- 7. the trained model leaves as a Hugging Face directory on the volume --------------------
EXPORT_SAMPLE="$ROOT/manifests/samples/cpu-tiny-export.yaml"
# The sample's PPUJob name and checkpoint claim, as "NAME CLAIM".
read -r XJOB XCLAIM < <(python3 -c 'import sys, yaml
d = next(d for d in yaml.safe_load_all(open(sys.argv[1])) if d and d["kind"] == "PPUJob")
print(d["metadata"]["name"], d["spec"]["checkpoint"]["claimName"])' "$EXPORT_SAMPLE")
[[ -n "$XJOB" && -n "$XCLAIM" ]] || die "$EXPORT_SAMPLE names no PPUJob with spec.checkpoint.claimName"
kubectl apply -f "$EXPORT_SAMPLE" >/dev/null
NS=default wait_phase "$XJOB" Succeeded 600
exported() { kubectl get ppj "$XJOB" -o jsonpath="{.status.conditions[?(@.type==\"Exported\")].$1}"; }
for ((i = 0; i < 300; i += 2)); do
  why="$(exported reason)"
  [[ "$why" == ModelExported || "$why" == ExportFailed ]] && break
  sleep 2
done
[[ "$why" == ModelExported ]] || die "$XJOB: condition Exported is '$why': $(exported message)"
[[ "$(kubectl get ppj "$XJOB" --no-headers)" == *ModelExported* ]] || die "$XJOB: column EXPORT does not say ModelExported"
x_path="$(NS=default ppj "$XJOB" export.path)"
x_round="$(NS=default ppj "$XJOB" export.round)"
x_last="$(NS=default ppj "$XJOB" lastCheckpointRound)"
[[ "$x_path" == model && -n "$x_round" && "$x_round" == "$x_last" ]] \
  || die "$XJOB: status.export path '$x_path' round '$x_round' (want model, the last checkpoint round '$x_last')"
say "$XJOB exported: $(exported message)"
# Deleting the job takes its export Job with it (garbage collection), never the model on the claim.
kubectl delete ppj "$XJOB" --wait=true >/dev/null
for ((i = 0; i < 60; i++)); do
  kubectl get job "$XJOB-export" >/dev/null 2>&1 || break
  sleep 1
done
kubectl get job "$XJOB-export" >/dev/null 2>&1 && die "Job $XJOB-export outlived its PPUJob"
# A pod that mounts the claim read-only, as a model server would, under the restricted profile.
kubectl apply -f - >/dev/null <<MANIFEST
apiVersion: v1
kind: Pod
metadata: {name: model-reader, namespace: default}
spec:
  restartPolicy: Never
  automountServiceAccountToken: false
  securityContext: {runAsNonRoot: true, runAsUser: 65532, runAsGroup: 65532, seccompProfile: {type: RuntimeDefault}}
  containers:
  - name: reader
    image: $SAMPLE_IMAGE
    command: [sh, -c, 'ls -1 /models/$x_path && echo ---- && cat /models/$x_path/config.json']
    securityContext: {allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: {drop: [ALL]}}
    volumeMounts: [{name: models, mountPath: /models, readOnly: true}]
  volumes: [{name: models, persistentVolumeClaim: {claimName: $XCLAIM, readOnly: true}}]
MANIFEST
for ((i = 0; i < 120; i += 2)); do
  p="$(kubectl get pod model-reader -o jsonpath='{.status.phase}')"
  [[ "$p" == Succeeded || "$p" == Failed ]] && break
  sleep 2
done
listing="$(kubectl logs model-reader 2>&1 || true)"
[[ "$p" == Succeeded ]] || die "the model reader pod ended '$p': $listing"
python3 - "$listing" <<'CHECK' || die "claim $XCLAIM holds no Hugging Face GPT-NeoX model under $x_path/: $listing"
import json, sys
files, _, config = sys.argv[1].partition("----\n")
names = set(files.split())
assert "config.json" in names and ({"model.safetensors", "model.safetensors.index.json"} & names), names
assert json.loads(config)["model_type"] == "gpt_neox", config
CHECK
say "a pod mounting claim $XCLAIM after the PPUJob is gone reads $x_path/: $(tr '\n' ' ' <<<"${listing%%----*}")"
kubectl delete pod model-reader --wait=true >/dev/null
kubectl delete pvc "$XCLAIM" --wait=true >/dev/null
phase "export sample: the model on the volume"

# ---- 8. Kueue: one gang admitted at a time, suspend, preemption, deletion ----------------------
bash "$CL" kueue-up >/dev/null
"$HELM" upgrade ppu-operator "$ROOT/charts/ppu-operator" -n "$OPNS" --reuse-values --set kueue.enabled=true \
  --wait --timeout 180s >/dev/null
kubectl -n "$OPNS" rollout status deploy/ppu-operator --timeout=180s >/dev/null
# The sample queue in this namespace, its quota sized for one job() gang (4 x 100m CPU), not two.
sed -e 's/nominalQuota: "1.5"/nominalQuota: 600m/' -e "s/namespace: default/namespace: $NS/" \
  "$ROOT/manifests/samples/kueue-queue.yaml" | kubectl apply -f - >/dev/null
queued_job() { # queued_job NAME CLAIM STEPS PRIORITY_CLASS: job() in LocalQueue ppu
  job "$1" "$2" "$3" | sed "s|^metadata: {name: $1, namespace: $NS}$|metadata: {name: $1, namespace: $NS, labels: {kueue.x-k8s.io/queue-name: ppu, kueue.x-k8s.io/priority-class: $4}}|"
}
admitted() { kubectl -n "$NS" get ppj "$1" -o jsonpath='{.status.conditions[?(@.type=="Admitted")].status}'; }
npods() { kubectl -n "$NS" get pods -l "ppu.dev/job=$1" --no-headers 2>/dev/null | wc -l; }
# wl_condition JOB TYPE: the status of condition TYPE of the job's Workload.
wl_condition() { kubectl -n "$NS" get workload "ppujob-$1" -o jsonpath="{.status.conditions[?(@.type==\"$2\")].status}" 2>/dev/null; }
# wait_waiting JOB REASON SECONDS: the job waits for Kueue with REASON, and has no pod meanwhile.
wait_waiting() {
  local i
  for ((i = 0; i < $3; i += 2)); do
    if [[ "$(ppj "$1" reason)" == "$2" && "$(admitted "$1")" == False ]]; then
      (($(npods "$1") == 0)) && return 0
    fi
    sleep 2
  done
  die "$1 is not waiting with reason $2 after $3 s: $(kubectl -n "$NS" get ppj "$1" -o jsonpath='{.status}') ($(npods "$1") pods)"
}
# Both at once: Kueue admits one gang; the other waits with no pod, saying why.
{
  queued_job qa ckpt-qa 400 low
  echo ---
  queued_job qb ckpt-qb 400 low
} | kubectl apply -f - >/dev/null
first=""
for ((i = 0; i < 120; i += 2)); do
  for j in qa qb; do [[ "$(admitted $j)" == True ]] && first=$j; done
  [[ -n "$first" ]] && break
  sleep 2
done
[[ -n "$first" ]] || die "Kueue admitted neither qa nor qb: $(kubectl -n "$NS" get ppj,workloads 2>&1)"
second=$([[ $first == qa ]] && echo qb || echo qa)
wait_waiting "$second" Queued 60
msg="$(ppj "$second" message)"
[[ "$msg" == *"insufficient unused quota"* ]] || die "$second waits without Kueue's reason: '$msg'"
[[ "$(kubectl -n "$NS" get ppj "$second" --no-headers)" == *Queued* ]] || die "column REASON does not say Queued"
[[ "$(wl_condition "$second" QuotaReserved)" == False ]] \
  || die "Workload ppujob-$second holds quota while its job waits"
wait_phase "$first" Running 240
say "$first admitted and Running; $second waits with no pod: $msg"
# Suspending the running job releases its quota (its Workload is deleted): the other is admitted.
for ((i = 0; i < 120; i += 2)); do
  ck="$(ppj "$first" lastCheckpointRound)"
  ((${ck:-0} >= 2)) && break
  sleep 2
done
kubectl -n "$NS" patch ppj "$first" --type=merge -p '{"spec":{"runPolicy":{"suspend":true}}}' >/dev/null
wait_phase "$first" Suspended 60
wait_phase "$second" Running 240
kubectl -n "$NS" patch ppj "$first" --type=merge -p '{"spec":{"runPolicy":{"suspend":false}}}' >/dev/null
wait_waiting "$first" Queued 60
say "$first suspended: its quota went to $second; resumed, $first queues again"
wait_phase "$second" Succeeded 600
wait_phase "$first" Succeeded 600
[[ "$(wl_condition "$first" Finished)" == True ]] \
  || die "Workload ppujob-$first is not Finished after its job Succeeded"
# The log whole, then matched: `kubectl logs | grep -q` fails under pipefail when grep exits
# before kubectl has written everything (SIGPIPE).
resumed() { # resumed JOB: rank 0's line saying where it resumed from
  local log
  log="$(kubectl -n "$NS" logs "$1-rank-0")"
  grep -m1 "resumed from" <<<"$log"
}
resumed "$first" >/dev/null || die "$first did not resume from its checkpoint after the suspend"
phase "Kueue: queued, suspended, admitted in turn"

# Preemption: a high-priority job evicts a running low one, which resumes from its checkpoint.
queued_job qc ckpt-qc 1000 low | kubectl apply -f - >/dev/null
wait_phase qc Running 240
for ((i = 0; i < 120; i += 2)); do
  ck="$(ppj qc lastCheckpointRound)"
  ((${ck:-0} >= 2)) && break
  sleep 2
done
queued_job qd ckpt-qd 200 high | kubectl apply -f - >/dev/null
wait_waiting qc Evicted 120
[[ "$(ppj qc message)" == *Preempted* ]] || die "qc evicted without saying it was preempted: $(ppj qc message)"
wait_phase qd Running 240
say "qd (high) preempted qc (low): qc's pods are gone and it waits: $(ppj qc message)"
# A queued job deleted while it waits leaves nothing behind.
queued_job qe ckpt-qe 200 low | kubectl apply -f - >/dev/null
wait_waiting qe Queued 60
kubectl -n "$NS" delete ppj qe --wait=true >/dev/null
for ((i = 0; i < 60; i++)); do
  kubectl -n "$NS" get workload ppujob-qe >/dev/null 2>&1 || break
  sleep 1
done
kubectl -n "$NS" get workload ppujob-qe >/dev/null 2>&1 && die "Workload ppujob-qe outlived its deleted PPUJob"
(($(npods qe) == 0)) || die "deleted queued job qe left pods"
wait_phase qd Succeeded 600
wait_phase qc Succeeded 900
[[ "$(ppj qc restartCount)" == 0 ]] || die "qc's preemption counted as a failure: restartCount $(ppj qc restartCount)"
qc_resumed="$(resumed qc)" || die "qc did not resume from its checkpoint after the preemption"
say "qd Succeeded, then qc was admitted again and Succeeded (restartCount 0): ${qc_resumed#*info }"
kubectl -n "$NS" delete ppj qa qb qc qd --wait=true >/dev/null
for ((i = 0; i < 60; i++)); do
  [[ -z "$(kubectl -n "$NS" get workloads --no-headers 2>/dev/null)" ]] && break
  sleep 1
done
[[ -z "$(kubectl -n "$NS" get workloads --no-headers 2>/dev/null)" ]] || die "Workloads left after their PPUJobs were deleted"
bash "$CL" kueue-down >/dev/null
phase "Kueue: preemption and deletion"

"$HELM" uninstall ppu-operator -n "$OPNS" >/dev/null
phase "helm uninstall"

# ---- 5c. the live job's perplexity against the fault-free band --------------------------------
# The band's three local runs started with the script (scripts/cluster/band.sh); by now they have
# had the CPU the cluster left idle, and what remains of them runs alone.
band_wait || die "step 5c compares with local fault-free runs, and one failed"
read -r lo hi p0 < <(band_of "$BAND") || die "the fault-free runs left no summary in $BAND"
in_band "$lo" "$hi" "$live_ppl" || die "live job: final perplexity '$live_ppl' outside the fault-free seeds' band [$lo, $hi]"
pass "chaos: the live job's perplexity $live_ppl after 5 faults is inside the fault-free band [$lo, $hi] (seed 0 fault-free: $p0)"
phase "fault-free band (what was left of it)"
echo "cluster-e2e: all checks passed in $(($(date +%s) - T0)) s"
