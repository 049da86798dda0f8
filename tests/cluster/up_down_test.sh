#!/usr/bin/env bash
# scripts/cluster.sh up brings up a working node, and down leaves the machine as it found it.
# Up: the node is Ready, a pod (the pause image) runs with a pod address from the CNI bridge,
# CoreDNS answers for the `kubernetes` Service, the storage class has Available volumes, and the
# API server answers on the host's loopback relay. Down: snapshots taken before up and after down
# are identical — host network interfaces, addresses, routes, iptables rules, mounts, cgroup
# directories, /run/netns — no process mentions the cluster dir, a process started with
# `cluster.sh netns` is stopped too, the relay port is closed, and the cluster dir is gone. Runs
# serially (RUN_SERIAL): another test creating interfaces or mounts at the same time would show in
# the diff.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
export PPU_CLUSTER_DIR="${PPU_CLUSTER_DIR:-/var/lib/ppu-cluster-test}"
export PPU_CLUSTER_PORT="${PPU_CLUSTER_PORT:-16444}"
CL="$ROOT/scripts/cluster.sh"
W="$(mktemp -d)"
fail() {
  echo "FAIL: $*" >&2
  exit 1
}
ok() { echo "ok: $*"; }
netns_pid=""
cleanup() {
  local rc=$?
  [[ -d "$PPU_CLUSTER_DIR" ]] && bash "$CL" down >/dev/null 2>&1
  [[ -n "$netns_pid" ]] && kill "$netns_pid" 2>/dev/null
  rm -rf "$W"
  exit $rc
}
trap cleanup EXIT

snapshot() { # everything the cluster could leave behind on the host
  local out="$1"
  (
    set +e +o pipefail # an empty listing is a result, not an error
    {
      echo "## links"
      ip -o link show | sed 's/^[0-9]*: //' | awk '{print $1, $2}' | sort
      echo "## addresses"
      ip -o addr show | awk '{print $2, $3, $4}' | sort
      echo "## routes"
      ip route show table all | sort
      echo "## iptables"
      for t in iptables-save ip6tables-save; do command -v $t >/dev/null && $t 2>/dev/null | { grep -v '^#' || true; } | sed 's/\[[0-9]*:[0-9]*\]//'; done
      echo "## mounts"
      awk '{print $5, $9, $10}' /proc/self/mountinfo | sort
      echo "## cgroups"
      awk '$3=="cgroup" || $3=="cgroup2" {print $2}' /proc/mounts | while read -r h; do find "$h" -type d 2>/dev/null | grep -i ppu-cluster; done | sort
      echo "## netns"
      find /run/netns -mindepth 1 -maxdepth 1 -printf '%f\n' 2>/dev/null | sort
      echo "## paths"
      ls -1d /run/containerd /var/lib/cni /var/log/pods /var/log/containers 2>/dev/null
    } >"$out"
    true
  )
}

bash "$CL" deps
bash "$ROOT/scripts/build-cluster-tools.sh" >/dev/null
snapshot "$W/before"
[[ ! -e "$PPU_CLUSTER_DIR" ]] || fail "$PPU_CLUSTER_DIR exists before up"

eval "$(bash "$CL" up | tail -1)"
# shellcheck source=/dev/null # written by cluster.sh up: TOOLS
source "$PPU_CLUSTER_DIR/env"
k() { "$TOOLS/kubectl" "$@"; }
bash "$CL" status
[[ "$(k get node ppu-node -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')" == True ]] || fail "node not Ready"
ok "node Ready, API server on the host's loopback relay ($KUBECONFIG)"
k get storageclass ppu-local -o jsonpath='{.metadata.annotations}' | grep -q is-default-class || fail "ppu-local is not the default StorageClass"
[[ "$(k get pv ppu-local-0 -o jsonpath='{.status.phase}')" == Available ]] || fail "PV ppu-local-0 not Available"
ok "StorageClass ppu-local (default) with Available hostPath volumes"

k apply -f - >/dev/null <<'EOF'
apiVersion: v1
kind: Pod
metadata: {name: probe, namespace: default}
spec:
  containers:
  - name: pause
    image: localhost/ppu-pause:1
    imagePullPolicy: Never
    securityContext: {allowPrivilegeEscalation: false, runAsNonRoot: true, capabilities: {drop: [ALL]},
                      seccompProfile: {type: RuntimeDefault}, readOnlyRootFilesystem: true}
EOF
k wait --for=condition=Ready pod/probe --timeout=120s >/dev/null || {
  k describe pod probe >&2
  fail "probe pod not Ready"
}
ip="$(k get pod probe -o jsonpath='{.status.podIP}')"
[[ "$ip" == 10.244.0.* ]] || fail "probe pod address '$ip' is not from the CNI range 10.244.0.0/24"
ok "a pod runs (containerd + runc, pause sandbox) at $ip"
# CoreDNS answers the kubernetes Service's name with its ClusterIP, from inside the cluster netns.
ans="$(bash "$CL" netns python3 "$ROOT/tests/cluster/dns_query.py" 10.96.0.10 kubernetes.default.svc.cluster.local)"
[[ "$ans" == 10.96.0.1 ]] || fail "CoreDNS answered '$ans' for kubernetes.default.svc.cluster.local"
ok "CoreDNS resolves kubernetes.default.svc.cluster.local to $ans"
k delete pod probe --wait=true --timeout=60s >/dev/null
# A process started in the cluster's network namespace from outside (`cluster.sh netns`, as the
# e2e test starts Prometheus) is not in the cluster's cgroup; down must stop it too, or it would
# keep the namespace and its bridge alive.
bash "$CL" netns sleep 3600 >/dev/null 2>&1 </dev/null &
netns_pid=$!
sleep 0.5
[[ "$(readlink "/proc/$netns_pid/ns/net")" == "$(readlink "/proc/$(cat "$PPU_CLUSTER_DIR/holder.pid")/ns/net")" ]] \
  || fail "cluster.sh netns did not run its command in the cluster's network namespace"

bash "$CL" down
for ((i = 0; i < 20; i++)); do
  kill -0 "$netns_pid" 2>/dev/null || break
  sleep 0.25
done
kill -0 "$netns_pid" 2>/dev/null && fail "down left the process started with 'cluster.sh netns' (pid $netns_pid) running"
netns_pid=""
ok "down stopped the process started with 'cluster.sh netns'"
snapshot "$W/after"
if ! diff -u "$W/before" "$W/after" >"$W/diff"; then
  cat "$W/diff" >&2
  fail "down left changes on the host (diff above)"
fi
ok "host interfaces, addresses, routes, iptables, mounts, cgroups, /run/netns: identical before up and after down"
leftover="$(grep -l -- "$PPU_CLUSTER_DIR" /proc/[0-9]*/cmdline 2>/dev/null | grep -v "/proc/$$/" || true)"
for f in $leftover; do
  p="${f#/proc/}"
  p="${p%/cmdline}"
  [[ -r "$f" ]] && fail "process $p still mentions $PPU_CLUSTER_DIR: $(tr '\0' ' ' <"$f")"
done
if (exec 3<>"/dev/tcp/127.0.0.1/$PPU_CLUSTER_PORT") 2>/dev/null; then fail "relay port $PPU_CLUSTER_PORT still open"; fi
[[ ! -e "$PPU_CLUSTER_DIR" ]] || fail "$PPU_CLUSTER_DIR still exists"
ok "no process, port or file of the cluster is left"
echo "up_down_test: all checks passed"
