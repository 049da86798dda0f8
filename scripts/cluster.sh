#!/usr/bin/env bash
# A Kubernetes cluster from source, as plain processes, one node or more, for the PPU end-to-end
# tests (tests/cluster/e2e: single_node, two_nodes) and for trying the operator by hand
# (docs/DEPLOY.md, "A local cluster").
#
#   scripts/cluster.sh deps                 install the Debian packages it needs (root)
#   scripts/cluster.sh up [--nodes N] [--no-network-policy]
#                                           start it; prints `export KUBECONFIG=...`. N nodes (default
#                                           1, at most 8): each its own kubelet and containerd with a
#                                           routed pod network. NetworkPolicies are enforced unless
#                                           --no-network-policy (or PPU_CLUSTER_NETPOL=0) says otherwise
#   scripts/cluster.sh down                 stop every process, remove every mount, interface,
#                                           cgroup and file it made
#   scripts/cluster.sh status               exit 0 when the API server answers and every node is Ready
#   scripts/cluster.sh load-image NAME [--as NAME2]...
#                                           copy a podman image into every node's containerd, also
#                                           named NAME2 (e.g. the samples' image, so they run as shipped)
#   scripts/cluster.sh stop-node NAME       lose node NAME (not the first): every process of it is
#                                           killed at once (kubelet, containerd, the pods' containers),
#                                           its namespaces go, and node 1 drops whatever is sent to its
#                                           address or pods: the API server sees it go NotReady
#   scripts/cluster.sh partition-node NAME  cut node NAME (not the first) off: its processes and pods go
#                                           on, but node 1 drops whatever is sent to its address or
#                                           pods, so neither side hears the other: NotReady, as a
#                                           switch failure makes it
#   scripts/cluster.sh heal-node NAME       undo partition-node: the routes to NAME come back
#   scripts/cluster.sh netns CMD...         run CMD inside the cluster's network namespace (exec'd:
#                                           it keeps the caller's PID; `down` stops it too)
#   scripts/cluster.sh kueue-up             start Kueue (its CRDs and manager, no webhooks) on the
#                                           running cluster, for the operator's Workloads
#   scripts/cluster.sh kueue-down           stop it and remove its files (`down` does it too)
#
# What runs (all from Debian or built here by scripts/build-cluster-tools.sh at pinned versions):
# etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubelet (cgroupfs driver, cgroup
# v1), containerd + runc (restrict_oom_score_adj, a local pause image as sandbox_image), bridge
# CNI with host-local IPAM (Debian's containernetworking-plugins), CoreDNS, and a StorageClass
# `ppu-local` with hostPath PersistentVolumes under $PPU_CLUSTER_DIR/volumes, and NetworkPolicy
# enforcement by kube-network-policies (SIG Network's reference implementation, built from its
# pinned module; scripts/cluster/netpol.sh says how it hooks into the bridge's traffic).
#
# Isolation: every process lives in one network namespace and one private mount namespace that
# `up` creates (a holder process keeps them), and in one cgroup subtree (<memory cgroup of the
# caller>/ppu-cluster.<hash of the dir> in every v1 hierarchy). Inside the namespace: loopback, the node address
# 10.200.0.1, the `kubernetes` Service address 10.96.0.1 (the API server listens on :443 there,
# so in-cluster clients need no kube-proxy) and the cluster DNS address 10.96.0.10 (CoreDNS),
# all on `lo`, and the CNI bridge with pods in 10.244.0.0/24. The only iptables rules are those
# of NetworkPolicy enforcement, in the cluster's namespace (scripts/cluster/netpol.sh).
# Node K > 1 (ppu-node-K, address 10.200.0.K, pods in 10.244.K-1.0/24) has namespaces of its own
# and the cgroup <cluster cgroup>/node-K, linked to node 1 by a veth pair and routes
# (scripts/cluster/namespace.sh); the control plane, CoreDNS and the API Service address stay on
# node 1. The hostPath PersistentVolumes are host directories, so every node mounts the same one:
# a ReadWriteMany volume, as NFS or a shared-filesystem CSI driver gives a real cluster.
# The host sees only 127.0.0.1:$PPU_CLUSTER_PORT, a socat relay to the API server.
# Not included: kube-proxy, so ClusterIP Services other than those two have no traffic;
# headless Services (what PPUJobs use) resolve to pod addresses through CoreDNS.
#
# Environment: PPU_CLUSTER_DIR (default /var/lib/ppu-cluster), PPU_CLUSTER_PORT (16443),
#              PPU_CLUSTER_PVS (number of hostPath PersistentVolumes, 16: one per claim the e2e makes, with room),
#              PPU_CLUSTER_NETPOL (1: enforce NetworkPolicies, the default; 0: do not).
#
# The parts, sourced from scripts/cluster/ (each file's header says what it does): common.sh
# (logging, cgroups, entering the namespaces, spawn, wait_for), pki.sh, config.sh, namespace.sh
# (the holder process), images.sh (pause image, load-image), control-plane.sh, node.sh,
# netpol.sh (NetworkPolicy enforcement), addons.sh (CoreDNS, storage), kueue.sh (kueue-up,
# kueue-down) and down.sh. This file keeps
# the settings, deps, up, status and the commands.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DIR="${PPU_CLUSTER_DIR:-/var/lib/ppu-cluster}"
PORT="${PPU_CLUSTER_PORT:-16443}"
NPVS="${PPU_CLUSTER_PVS:-16}"
NODE=ppu-node
NODE_IP=10.200.0.1
API_IP=10.96.0.1
DNS_IP=10.96.0.10
SERVICE_CIDR=10.96.0.0/24
POD_CIDR=10.244.0.0/24
POD_NET=10.244.0.0/16 # every node's pod CIDR is inside it
NETPOL="${PPU_CLUSTER_NETPOL:-1}"
NODES=1
PAUSE_IMAGE=localhost/ppu-pause:1
DEBS=(containerd runc containernetworking-plugins podman buildah debootstrap socat openssl etcd-server
  iproute2 util-linux curl iptables nftables)
SYS_PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

usage() { sed -n '2,52p' "$0"; }

source "$ROOT/scripts/lib.sh"
source "$ROOT/scripts/cluster/common.sh"
source "$ROOT/scripts/cluster/pki.sh"
source "$ROOT/scripts/cluster/config.sh"
source "$ROOT/scripts/cluster/namespace.sh"
source "$ROOT/scripts/cluster/images.sh"
source "$ROOT/scripts/cluster/control-plane.sh"
source "$ROOT/scripts/cluster/node.sh"
source "$ROOT/scripts/cluster/netpol.sh"
source "$ROOT/scripts/cluster/addons.sh"
source "$ROOT/scripts/cluster/kueue.sh"
source "$ROOT/scripts/cluster/down.sh"

cmd_deps() {
  ppu_apt_install cluster "${DEBS[@]}"
}

cmd_up() {
  while (($#)); do
    case "$1" in
      --no-network-policy) NETPOL=0 ;;
      --nodes)
        NODES="${2:-}"
        shift
        ;;
      *) die "up: unknown flag '$1' (try --help)" ;;
    esac
    shift
  done
  [[ $NETPOL == 0 || $NETPOL == 1 ]] || die "PPU_CLUSTER_NETPOL must be 0 or 1, not '$NETPOL'"
  [[ "$NODES" =~ ^[1-8]$ ]] || die "up: --nodes takes 1 to 8, not '$NODES'"
  [[ $(id -u) == 0 ]] || die "up needs root"
  if [[ -f "$DIR/holder.pid" ]]; then die "a cluster already runs in $DIR (scripts/cluster.sh down first)"; fi
  for t in nsenter unshare containerd runc socat openssl podman ctr; do
    command -v "$t" >/dev/null || die "$t not found (bash scripts/cluster.sh deps)"
  done
  [[ -x /usr/lib/cni/bridge && -x /usr/lib/cni/host-local ]] || die "CNI plugins missing (bash scripts/cluster.sh deps)"
  local t0
  t0=$(date +%s)
  TOOLS="$("$ROOT/scripts/build-cluster-tools.sh" | tail -1)"
  local t_tools
  t_tools=$(($(date +%s) - t0))
  mkdir -p "$DIR"/{log,run,etcd,kubelet,containerd,images,volumes}
  printf 'TOOLS=%s\nNETPOL=%s\nNODES=%s\n' "$TOOLS" "$NETPOL" "$NODES" >"$DIR/env"
  pki
  configs
  build_pause_image

  make_holder
  start_etcd
  start_apiserver
  start_controllers
  if [[ $NETPOL == 1 ]]; then start_netpol "$NODE"; fi
  echo "$NODE $NODE_IP $POD_CIDR $DIR" >"$DIR/nodes" # name, address, pod CIDR, state dir
  start_containerd
  start_kubelet
  local k
  for ((k = 2; k <= NODES; k++)); do start_node "$k"; done
  start_addons
  log "ready in $(($(date +%s) - t0)) s (tools ${t_tools} s); logs in $DIR/log"
  echo "export KUBECONFIG=$DIR/kubeconfig"
}

cmd_status() {
  if [[ ! -f "$DIR/holder.pid" ]] || ! kill -0 "$(holder)" 2>/dev/null; then
    log "not running"
    return 1
  fi
  # shellcheck source=/dev/null # written by `up`: TOOLS
  source "$DIR/env"
  local name ip cidr ndir
  while read -r name ip cidr ndir; do
    if [[ -e "$ndir/stopped" ]]; then
      log "node $name was stopped (stop-node)"
      continue
    fi
    node_ready "$name" || {
      log "node $name not Ready"
      return 1
    }
    if [[ "${NETPOL:-0}" == 1 ]]; then
      NSDIR="$ndir" netpol_queue_bound || {
        log "NetworkPolicies are not enforced on $name: no kube-network-policies reads the queue"
        return 1
      }
    fi
  done <"$DIR/nodes"
  if [[ "${NETPOL:-0}" == 1 ]]; then log "NetworkPolicies enforced (kube-network-policies on every node)"; fi
  log "running; export KUBECONFIG=$DIR/kubeconfig"
}

# find_node COMMAND NAME: sets ip, cidr and found (the state dir) of node NAME, not the first.
find_node() {
  local name ndir
  [[ -f "$DIR/nodes" ]] || die "no cluster"
  found=""
  while read -r name ip cidr ndir; do
    if [[ "$name" == "$2" ]]; then found="$ndir" && break; fi
  done <"$DIR/nodes"
  [[ -n "$found" ]] || die "no node '$2' (nodes: $(awk '{printf "%s ", $1}' "$DIR/nodes"))"
  [[ "$found" != "$DIR" ]] || die "$1: $2 holds the control plane"
}

# The networks node K reaches through node 1 (namespace.sh routes them over its veth).
node_routes_out() { echo "$POD_NET $SERVICE_CIDR 10.200.0.0/24"; }

cmd_partition_node() {
  local ip cidr found net
  find_node partition-node "${1:?partition-node needs a node name}"
  [[ ! -e "$found/stopped" ]] || die "partition-node: $1 was stopped (stop-node)"
  # Both ways: node 1 drops what goes to the node, the node drops what goes to node 1 (a request
  # that arrived while its answer was dropped would still be served: a half-open partition).
  in_netns ip route replace blackhole "$ip/32"
  in_netns ip route replace blackhole "$cidr"
  for net in "$NODE_IP/32" $(node_routes_out); do
    nsenter -t "$(cat "$found/holder.pid")" -n -- ip route replace blackhole "$net"
  done
  log "node $1 partitioned: it runs on, and neither it nor node 1 hears the other (heal-node $1 undoes it)"
}

cmd_heal_node() {
  local ip cidr found
  find_node heal-node "${1:?heal-node needs a node name}"
  [[ ! -e "$found/stopped" ]] || die "heal-node: $1 was stopped (stop-node), not partitioned"
  # The routes namespace.sh made: the node's address over its veth, its pods through it.
  local dev="ppu-n${found##*-}" hk net
  in_netns ip route replace "$ip/32" dev "$dev" src "$NODE_IP"
  in_netns ip route replace "$cidr" via "$ip" dev "$dev" onlink src "$NODE_IP"
  hk="$(cat "$found/holder.pid")"
  nsenter -t "$hk" -n -- ip route replace "$NODE_IP/32" dev ppu-n1 src "$ip"
  for net in $(node_routes_out); do
    nsenter -t "$hk" -n -- ip route replace "$net" via "$NODE_IP" dev ppu-n1 onlink src "$ip"
  done
  log "node $1 healed: it and node 1 hear each other again"
}

cmd_stop_node() {
  local ip cidr found
  find_node stop-node "${1:?stop-node needs a node name}"
  local want="$1"
  local cg pids round
  cg="$(cg_root)/${found##*/}"
  # SIGKILL, all at once: a machine that loses power does not shut down its pods.
  for round in $(seq 1 20); do
    mapfile -t pids < <(cg_pids "$cg")
    ((${#pids[@]})) || break
    kill -KILL "${pids[@]}" 2>/dev/null || true
    sleep 0.5
  done
  [[ -z "$(cg_pids "$cg")" ]] || die "processes of $want survive: $(cg_pids "$cg" | tr '\n' ' ')"
  # Its namespaces went with its holder, and the veth pair with them; what node 1 sends to the
  # node or its pods now vanishes, as on a wire to a dead machine.
  in_netns ip route replace blackhole "$ip/32"
  in_netns ip route replace blackhole "$cidr"
  touch "$found/stopped"
  log "node $want stopped: no process of it is left; its address and pods are unreachable"
}

case "${1:-}" in
  deps) cmd_deps ;;
  up)
    shift
    cmd_up "$@"
    ;;
  down) cmd_down ;;
  status) cmd_status ;;
  load-image)
    shift
    cmd_load_image "$@"
    ;;
  stop-node)
    shift
    cmd_stop_node "$@"
    ;;
  partition-node)
    shift
    cmd_partition_node "$@"
    ;;
  heal-node)
    shift
    cmd_heal_node "$@"
    ;;
  kueue-up) cmd_kueue_up ;;
  kueue-down) cmd_kueue_down ;;
  netns)
    shift
    [[ -f "$DIR/holder.pid" ]] || die "no cluster"
    exec nsenter -t "$(holder)" -n -- "$@"
    ;;
  -h | --help | "")
    usage
    [[ -n "${1:-}" ]]
    ;;
  *) die "unknown command '$1' (try --help)" ;;
esac
