#!/usr/bin/env bash
# End to end on one machine: kube-apiserver + etcd, the operator (installed from the Helm chart's
# manifests and running under the chart's ServiceAccount and RBAC), and a node agent playing the
# kubelet (tests/e2e/node_agent.py). Applies a small PPUJob, kills one rank's process at a random
# moment after the first checkpoint, and requires: the operator restarts the gang, training
# resumes from the checkpoint, the job Succeeds, and the final param_checksum equals an
# uninterrupted `ppu-launch --nproc K` run of the same config.
#
# Usage: scripts/e2e.sh [--train PPU_TRAIN] [--launch PPU_LAUNCH] [--operator PPU_OPERATOR]
#   defaults: build/bin/ppu-train, build/bin/ppu-launch, build/operator/ppu-operator
#   E2E_SEED=N       reproduce a run's random kill moment and rank (printed at start)
#   E2E_KEEP=1       keep the work dir (logs of every process) after the run
#   E2E_NO_METRICS=1 ranks serve no /metrics (to bisect a failure)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TRAIN="$ROOT/build/bin/ppu-train"
LAUNCH="$ROOT/build/bin/ppu-launch"
OPERATOR="$ROOT/build/operator/ppu-operator"
while (($#)); do
  case "$1" in
    --train)
      TRAIN="$2"
      shift 2
      ;;
    --launch)
      LAUNCH="$2"
      shift 2
      ;;
    --operator)
      OPERATOR="$2"
      shift 2
      ;;
    -h | --help)
      sed -n '2,16p' "$0"
      exit 0
      ;;
    *)
      echo "e2e: unknown argument '$1' (try --help)" >&2
      exit 2
      ;;
  esac
done
for b in "$TRAIN" "$LAUNCH" "$OPERATOR"; do [[ -x "$b" ]] || {
  echo "e2e: $b is not built" >&2
  exit 1
}; done
TRAIN="$(readlink -f "$TRAIN")"
LAUNCH="$(readlink -f "$LAUNCH")"
OPERATOR="$(readlink -f "$OPERATOR")"

SEED="${E2E_SEED:-$RANDOM}"
RANDOM=$SEED
W="$(mktemp -d /tmp/ppu-e2e.XXXXXX)"
NS=default
JOB=e2e
K=2
say() { echo "[e2e $(date +%H:%M:%S)] $*"; }
die() {
  echo "[e2e] FAIL: $*" >&2
  for f in "$W"/operator.log "$W"/agent.log; do [[ -f "$f" ]] && {
    echo "--- tail $f" >&2
    tail -25 "$f" >&2
  }; done
  for f in "$W/agent/$NS/$JOB"/*.log; do [[ -f "$f" ]] && {
    echo "--- tail $f" >&2
    tail -5 "$f" >&2
  }; done
  exit 1
}
PIDS=()
cleanup() {
  for ((i = ${#PIDS[@]} - 1; i >= 0; i--)); do kill "${PIDS[i]}" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  "$ROOT/scripts/kube-test-env.sh" stop "$W/kube" >/dev/null 2>&1 || true
  if [[ "${E2E_KEEP:-0}" == 1 ]]; then echo "[e2e] kept $W"; else rm -rf "$W"; fi
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
say "seed $SEED, work dir $W"

# 1. Control plane, and the operator installed the way a user would: the chart's manifests.
"$ROOT/scripts/kube-test-env.sh" start "$W/kube" >/dev/null || die "kube-test-env did not start"
# shellcheck source=/dev/null # written by kube-test-env.sh start
source "$W/kube/env"
K() { "$KUBECTL" --kubeconfig "$W/kube/kubeconfig" "$@"; }
HELM="$("$ROOT/scripts/build-helm.sh" | tail -1)"
K create namespace ppu-system >/dev/null
"$HELM" template ppu-operator "$ROOT/charts/ppu-operator" -n ppu-system >"$W/chart.yaml"
K apply -f "$W/chart.yaml" >/dev/null || die "chart manifests rejected"
# The operator authenticates as the chart's ServiceAccount: missing RBAC rules fail this test.
TOKEN="$(K create token ppu-operator -n ppu-system --duration=2h)"
cat >"$W/operator.kubeconfig" <<KC
apiVersion: v1
kind: Config
clusters: [{name: test, cluster: {server: "https://127.0.0.1:$APISERVER_PORT", certificate-authority: "$W/kube/certs/apiserver.crt"}}]
users: [{name: ppu-operator, user: {token: "$TOKEN"}}]
contexts: [{name: test, context: {cluster: test, user: ppu-operator, namespace: ppu-system}}]
current-context: test
KC
OP_METRICS=$(free_port)
OP_HEALTH=$(free_port)
"$OPERATOR" --kubeconfig "$W/operator.kubeconfig" --metrics-addr "127.0.0.1:$OP_METRICS" \
  --health-addr "127.0.0.1:$OP_HEALTH" --scrape-interval 2s --restart-backoff 1s >"$W/operator.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 1 100); do
  curl -sf "http://127.0.0.1:$OP_HEALTH/readyz" >/dev/null && break
  sleep 0.3
done
curl -sf "http://127.0.0.1:$OP_HEALTH/readyz" >/dev/null || die "operator not ready"
say "operator ready (as system:serviceaccount:ppu-system:ppu-operator)"

AGENT_ARGS=()
[[ "${E2E_NO_METRICS:-0}" == 1 ]] && AGENT_ARGS+=(--no-metrics)
python3 "$ROOT/tests/e2e/node_agent.py" --kube-dir "$W/kube" --work "$W/agent" \
  --bin-dir "$(dirname "$TRAIN")" "${AGENT_ARGS[@]}" >"$W/agent.log" 2>&1 &
PIDS+=($!)

# 2. The PPUJob: tests/e2e/tiny-job.yaml as spec.training.
{
  cat <<YAML
apiVersion: ppu.dev/v1alpha1
kind: PPUJob
metadata: {name: $JOB, namespace: $NS}
spec:
  replicas: $K
  image: ppu:e2e
  checkpoint: {volumeSource: {emptyDir: {}}}
  runPolicy: {backoffLimit: 3, cleanPodPolicy: None}
  training:
YAML
  grep -v '^#' "$ROOT/tests/e2e/tiny-job.yaml" | sed 's/^/    /'
} >"$W/job.yaml"
K apply -f "$W/job.yaml" >/dev/null || die "PPUJob rejected"
say "applied PPUJob $NS/$JOB ($K ranks)"
phase() { K get ppj "$JOB" -n $NS -o jsonpath='{.status.phase}' 2>/dev/null || true; }

# 3. Kill one rank at a random moment after the first checkpoint is written.
CKPT="$W/agent/$NS/$JOB/checkpoints"
for _ in $(seq 1 600); do
  [[ -n "$(ls -A "$CKPT" 2>/dev/null)" ]] && break
  sleep 0.2
done
[[ -n "$(ls -A "$CKPT" 2>/dev/null)" ]] || die "no checkpoint written within 120 s"
DELAY="$((RANDOM % 8)).$((RANDOM % 10))"
VICTIM=$((RANDOM % K))
sleep "$DELAY"
[[ "$(phase)" == Running ]] || die "job is '$(phase)' before the kill: training too short to interrupt"
PID="$(cat "$W/agent/pids/${NS}_$JOB-rank-$VICTIM.pid")"
kill -9 "$PID" || die "rank $VICTIM (pid $PID) already gone"
say "killed rank $VICTIM (pid $PID) ${DELAY}s after the first checkpoint"

# 4. The job must finish: gang restarted, resumed from the checkpoint, Succeeded.
for _ in $(seq 1 900); do
  p="$(phase)"
  [[ "$p" == Succeeded || "$p" == Failed ]] && break
  sleep 0.4
done
p="$(phase)"
[[ "$p" == Succeeded ]] || die "job ended '$p': $(K get ppj $JOB -n $NS -o jsonpath='{.status.conditions}')"
RESTARTS="$(K get ppj "$JOB" -n $NS -o jsonpath='{.status.restartCount}')"
[[ "${RESTARTS:-0}" -ge 1 ]] || die "job Succeeded but status.restartCount is '${RESTARTS}'"
say "job Succeeded after $RESTARTS gang restart(s)"
grep -l "resumed from" "$W"/agent/$NS/$JOB/*.log >/dev/null || die "no rank log says it resumed from a checkpoint"
say "ranks resumed: $(grep -h "resumed from" "$W"/agent/$NS/$JOB/*.log | head -1 | sed 's/.*resumed/resumed/')"

CHECKSUM="$ROOT/scripts/e2e_checksum.py" # the ranks' summaries, read through python/ppu
JOB_SUM="$(python3 "$CHECKSUM" job "$W/agent/$NS/$JOB" "$JOB" "$K")" || die "$JOB_SUM"

# 5. Reference: the same config, uninterrupted, with the local launcher. First the config the
# job really ran (the operator's ConfigMap), then the source file itself (CRD defaults must not
# change what the runtime does).
K get configmap -n $NS -l ppu.dev/job=$JOB -o jsonpath='{.items[0].data.config\.yaml}' >"$W/job-config.yaml"
[[ -s "$W/job-config.yaml" ]] || die "cannot read the job's ConfigMap"
for cfg in "$W/job-config.yaml" "$ROOT/tests/e2e/tiny-job.yaml"; do
  (cd "$W" && "$LAUNCH" --ppu-train "$TRAIN" --nproc $K --config "$cfg" --summary "$W/ref.json" >"$W/ref.log" 2>&1) \
    || die "reference ppu-launch run failed (see $W/ref.log)"
  SAID="$(python3 "$CHECKSUM" reference "$JOB_SUM" "$W/ref.json" "$cfg" "$W" "$ROOT")" || die "$SAID"
  say "$SAID"
done
echo "e2e: PASS (seed $SEED)"
