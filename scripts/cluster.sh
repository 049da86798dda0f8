#!/usr/bin/env bash
# A single-node Kubernetes cluster from source, as plain processes, for the PPU end-to-end test
# (scripts/cluster-e2e.sh) and for trying the operator by hand (docs/DEPLOY.md, "A local cluster").
#
#   scripts/cluster.sh deps                 install the Debian packages it needs (root)
#   scripts/cluster.sh up                   start it; prints `export KUBECONFIG=...`
#   scripts/cluster.sh down                 stop every process, remove every mount, interface,
#                                           cgroup and file it made
#   scripts/cluster.sh status               exit 0 when the API server answers and the node is Ready
#   scripts/cluster.sh load-image NAME [--as NAME2]...
#                                           copy a podman image into the node's containerd, also
#                                           named NAME2 (e.g. the samples' image, so they run as shipped)
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
# `ppu-local` with hostPath PersistentVolumes under $PPU_CLUSTER_DIR/volumes.
#
# Isolation: every process lives in one network namespace and one private mount namespace that
# `up` creates (a holder process keeps them), and in one cgroup subtree (<memory cgroup of the
# caller>/ppu-cluster.<hash of the dir> in every v1 hierarchy). Inside the namespace: loopback, the node address
# 10.200.0.1, the `kubernetes` Service address 10.96.0.1 (the API server listens on :443 there,
# so in-cluster clients need no kube-proxy) and the cluster DNS address 10.96.0.10 (CoreDNS),
# all on `lo`, and the CNI bridge with pods in 10.244.0.0/24. No iptables rule is written.
# The host sees only 127.0.0.1:$PPU_CLUSTER_PORT, a socat relay to the API server.
# Not included: kube-proxy, so ClusterIP Services other than those two have no traffic;
# headless Services (what PPUJobs use) resolve to pod addresses through CoreDNS.
#
# Environment: PPU_CLUSTER_DIR (default /var/lib/ppu-cluster), PPU_CLUSTER_PORT (16443),
#              PPU_CLUSTER_PVS (number of hostPath PersistentVolumes, 8).
#
# The parts, sourced from scripts/cluster/ (each file's header says what it does): common.sh
# (logging, cgroups, entering the namespaces, spawn, wait_for), pki.sh, config.sh, namespace.sh
# (the holder process), images.sh (pause image, load-image), control-plane.sh, node.sh,
# addons.sh (CoreDNS, storage), kueue.sh (kueue-up, kueue-down) and down.sh. This file keeps
# the settings, deps, up, status and the commands.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DIR="${PPU_CLUSTER_DIR:-/var/lib/ppu-cluster}"
PORT="${PPU_CLUSTER_PORT:-16443}"
NPVS="${PPU_CLUSTER_PVS:-8}"
NODE=ppu-node
NODE_IP=10.200.0.1
API_IP=10.96.0.1
DNS_IP=10.96.0.10
SERVICE_CIDR=10.96.0.0/24
POD_CIDR=10.244.0.0/24
PAUSE_IMAGE=localhost/ppu-pause:1
DEBS=(containerd runc containernetworking-plugins podman buildah debootstrap socat openssl etcd-server
  iproute2 util-linux curl)
SYS_PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

usage() { sed -n '2,33p' "$0"; }

source "$ROOT/scripts/lib.sh"
source "$ROOT/scripts/cluster/common.sh"
source "$ROOT/scripts/cluster/pki.sh"
source "$ROOT/scripts/cluster/config.sh"
source "$ROOT/scripts/cluster/namespace.sh"
source "$ROOT/scripts/cluster/images.sh"
source "$ROOT/scripts/cluster/control-plane.sh"
source "$ROOT/scripts/cluster/node.sh"
source "$ROOT/scripts/cluster/addons.sh"
source "$ROOT/scripts/cluster/kueue.sh"
source "$ROOT/scripts/cluster/down.sh"

cmd_deps() {
  ppu_apt_install cluster "${DEBS[@]}"
}

cmd_up() {
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
  echo "TOOLS=$TOOLS" >"$DIR/env"
  pki
  configs
  build_pause_image

  make_holder
  start_etcd
  start_apiserver
  start_controllers
  start_containerd
  start_kubelet
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
  node_ready || {
    log "node not Ready"
    return 1
  }
  log "running; export KUBECONFIG=$DIR/kubeconfig"
}

case "${1:-}" in
  deps) cmd_deps ;;
  up) cmd_up ;;
  down) cmd_down ;;
  status) cmd_status ;;
  load-image)
    shift
    cmd_load_image "$@"
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
