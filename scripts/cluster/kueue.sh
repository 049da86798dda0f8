# shellcheck shell=bash
# scripts/cluster.sh, part: Kueue (sigs.k8s.io/kueue, pinned in tests/cluster/kueue/go.mod, built
# with its CRDs by scripts/build-cluster-tools.sh --kueue), for queueing PPUJobs. The PPU operator
# creates Kueue Workload objects (kueue.x-k8s.io/v1beta2) itself, so no Kueue webhook and no job
# integration of Kueue's is installed; only its CRDs and its manager, which admits, queues and
# preempts Workloads.
#
#   cmd_kueue_up    needs a running cluster. Applies the CRDs (server-side: the Workload CRD is
#                   1.4 MB, over client-side apply's annotation limit) and the namespace
#                   kueue-system; writes $DIR/kueue/: a Configuration (config.kueue.x-k8s.io/
#                   v1beta2: no leader election, no internal cert management, VisibilityOnDemand
#                   off, frameworks [batch/job], webhook, health probe and metrics on free ports
#                   of 127.0.0.1) and self-signed certificates for the webhook server (its certDir)
#                   and for metrics; starts the manager and waits for its /readyz. Prints the log's
#                   path. When a manager already answers, does nothing.
#   cmd_kueue_down  stops the manager and removes every file and directory kueue-up made; the
#                   CRDs and Kueue's API objects stay until `down`. Nothing to do is no error.
#   kueue_down      the same, quiet when Kueue never ran; cmd_down calls it first.
#
# Where the manager runs: inside the cluster's network and mount namespaces and its cgroup, like
# every other daemon (spawn), as the cluster admin ($DIR/pki/admin.kubeconfig, the API server at
# 127.0.0.1:443 there). So its ports are the namespace's, not the host's (two clusters on one host,
# or a Kueue of the host's, do not collide), it needs no relay, and `down` would stop it with the
# rest of the cgroup even without kueue_down. Kueue's manager loads the metrics certificate from
# the fixed path /etc/kueue/metrics/certs (even with metrics off); that path is a bind mount of
# $DIR/kueue/metrics-certs inside the mount namespace only, so no key lands in the host's /etc.
# The host directories the mount point needs are created only where absent, recorded in
# $DIR/kueue-created-paths and removed (rmdir, deepest first) by kueue_down.
# Sourced by cluster.sh; defines functions only.

KUEUE_METRICS_CERTS=/etc/kueue/metrics/certs

kueue_pid() { # the manager's pid, when that process still runs with our config
  local pid
  pid="$(cat "$DIR/run/kueue.pid" 2>/dev/null)" || return 1
  [[ -n "$pid" && -r "/proc/$pid/cmdline" ]] || return 1
  tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline" | grep -q -- "--config $DIR/kueue/config.yaml " || return 1
  echo "$pid"
}

kueue_free_port() { # kueue_free_port FIRST TAKEN...: the first port from FIRST that nothing in
  # the namespace listens on and that is not among TAKEN
  local first="$1" p t
  shift
  for ((p = first; p < first + 200; p++)); do
    for t in "$@"; do [[ $p == "$t" ]] && continue 2; done
    if [[ -z "$(in_netns ss -Hltn "sport = :$p")" ]]; then
      echo "$p"
      return 0
    fi
  done
  die "no free port from $first in the cluster's network namespace"
}

kueue_cert() { # kueue_cert DIR CN: a self-signed serving certificate for 127.0.0.1 (30 days)
  mkdir -p "$1"
  openssl req -x509 -newkey rsa:2048 -nodes -days 30 -keyout "$1/tls.key" -out "$1/tls.crt" \
    -subj "/CN=$2" -addext "subjectAltName=IP:127.0.0.1,DNS:localhost" \
    -addext "extendedKeyUsage=serverAuth" 2>/dev/null
  chmod 0600 "$1/tls.key"
}

cmd_kueue_up() {
  [[ $(id -u) == 0 ]] || die "kueue-up needs root"
  if [[ ! -f "$DIR/holder.pid" ]] || ! kill -0 "$(holder)" 2>/dev/null; then
    die "no cluster runs in $DIR (scripts/cluster.sh up first)"
  fi
  # shellcheck source=/dev/null # written by `up`: TOOLS
  source "$DIR/env"
  kubectl_ns get --raw /readyz >/dev/null 2>&1 || die "the API server in $DIR does not answer"
  local k="$DIR/kueue"
  if kueue_pid >/dev/null && in_netns curl -sf "http://$(cat "$k/health")/readyz" >/dev/null 2>&1; then
    log "Kueue already runs; log in $DIR/log/kueue.log"
    return 0
  fi
  kueue_down # a manager that died, or files of one
  local kt
  kt="$("$ROOT/scripts/build-cluster-tools.sh" --kueue | tail -1)"
  [[ -x "$kt/kueue" && -f "$kt/kueue-crds/.complete" ]] || die "no kueue or kueue-crds/ in $kt"
  log "Kueue $(cat "$kt/kueue-crds/.complete"): CRDs"
  kubectl_ns apply --server-side --force-conflicts --field-manager=ppu-cluster -f "$kt/kueue-crds/" >/dev/null
  kubectl_ns wait --for=condition=Established -f "$kt/kueue-crds/" --timeout=60s >/dev/null
  kubectl_ns create namespace kueue-system --dry-run=client -o yaml | kubectl_ns apply -f - >/dev/null

  mkdir -p "$k"
  kueue_cert "$k/webhook-certs" ppu-kueue-webhook
  kueue_cert "$k/metrics-certs" ppu-kueue-metrics
  # The fixed metrics path: a mount point on the host, the certificates only inside the namespace.
  : >"$DIR/kueue-created-paths"
  local d="" part
  for part in $(tr '/' ' ' <<<"$KUEUE_METRICS_CERTS"); do
    d="$d/$part"
    if [[ ! -e "$d" ]]; then
      mkdir "$d"
      echo "$d" >>"$DIR/kueue-created-paths"
    fi
  done
  in_ns mount --bind "$k/metrics-certs" "$KUEUE_METRICS_CERTS"

  local webhook health metrics
  webhook="$(kueue_free_port 9443)"
  health="$(kueue_free_port 8081 "$webhook")"
  metrics="$(kueue_free_port 8443 "$webhook" "$health")"
  echo "127.0.0.1:$health" >"$k/health"
  cat >"$k/config.yaml" <<EOF
apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
namespace: kueue-system
leaderElection:
  leaderElect: false
internalCertManagement:
  enable: false
webhook:
  host: 127.0.0.1
  port: $webhook
  certDir: $k/webhook-certs
health:
  healthProbeBindAddress: 127.0.0.1:$health
metrics:
  bindAddress: 127.0.0.1:$metrics
integrations:
  frameworks: ["batch/job"]
featureGates:
  VisibilityOnDemand: false
EOF
  log "Kueue manager (webhook :$webhook, health :$health, metrics :$metrics in the namespace)"
  : >"$DIR/log/kueue.log"
  spawn kueue "$kt/kueue" --config "$k/config.yaml" --kubeconfig "$DIR/pki/admin.kubeconfig"
  if ! wait_for "kueue" 120 in_netns curl -sf "http://127.0.0.1:$health/readyz"; then
    kueue_down
    die "Kueue did not become ready (its log: $DIR/log/kueue.log)"
  fi
  log "Kueue ready; log in $DIR/log/kueue.log"
}

kueue_down() {
  local pid round
  if pid="$(kueue_pid)"; then
    kill -TERM "$pid" 2>/dev/null || true
    for round in $(seq 1 40); do
      kill -0 "$pid" 2>/dev/null || break
      if ((round == 30)); then kill -KILL "$pid" 2>/dev/null || true; fi
      sleep 0.25
    done
    if kill -0 "$pid" 2>/dev/null; then die "Kueue manager $pid survives SIGKILL"; fi
  fi
  rm -f "$DIR/run/kueue.pid"
  # The bind mount exists only in the cluster's mount namespace (gone anyway if the holder is).
  if [[ -f "$DIR/holder.pid" ]] && kill -0 "$(holder)" 2>/dev/null \
    && in_ns grep -q " $KUEUE_METRICS_CERTS " /proc/self/mounts; then
    in_ns umount "$KUEUE_METRICS_CERTS"
  fi
  if [[ -f "$DIR/kueue-created-paths" ]]; then
    local p
    tac "$DIR/kueue-created-paths" | while read -r p; do rmdir "$p" 2>/dev/null || log "left $p (not empty)"; done
    rm -f "$DIR/kueue-created-paths"
  fi
  rm -rf "$DIR/kueue"
}

cmd_kueue_down() {
  [[ $(id -u) == 0 ]] || die "kueue-down needs root"
  if [[ ! -d "$DIR" ]]; then
    log "nothing to stop ($DIR does not exist)"
    return 0
  fi
  kueue_down
  log "Kueue stopped; its CRDs and objects stay until scripts/cluster.sh down"
}
