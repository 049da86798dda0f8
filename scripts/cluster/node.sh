# shellcheck shell=bash
# scripts/cluster.sh, part: the nodes. containerd (config from scripts/cluster/config.sh) with the
# pause image imported, and the kubelet registering the node; waits until the node is Ready. Both
# act on node NNAME (node_vars; node 1 unless the caller chose another, with NSDIR and CG_SUB
# set to that node's namespaces and cgroup). start_node K brings up node K > 1: its namespaces
# and the link to node 1 (make_node_holder, scripts/cluster/namespace.sh), its certificates,
# configuration, NetworkPolicy controller, containerd and kubelet.
# Sourced by cluster.sh; defines functions only. Needs TOOLS (scripts/build-cluster-tools.sh).

# shellcheck disable=SC2153 # NDIR, NNAME, NSFX: set by node_vars (scripts/cluster/config.sh)
start_containerd() {
  log "containerd on $NNAME"
  spawn "containerd$NSFX" containerd --config "$NDIR/config/containerd.toml"
  wait_for "containerd$NSFX" 30 ctr -a "$NDIR/run/containerd.sock" version
  # The kubelet's cAdvisor looks for containerd at its default address (for container stats).
  ln -sfn "$NDIR/run/containerd.sock" "$NDIR/mnt/run/containerd/containerd.sock"
  in_ns ctr -a "$NDIR/run/containerd.sock" -n k8s.io images import "$DIR/images/pause.tar" >/dev/null
}

start_kubelet() {
  log "kubelet on $NNAME"
  spawn "kubelet$NSFX" "$TOOLS/kubelet" --config="$NDIR/config/kubelet.yaml" \
    --kubeconfig="$DIR/pki/kubelet$NSFX.kubeconfig" --root-dir="$NDIR/kubelet" --cert-dir="$NDIR/kubelet/pki" \
    --hostname-override="$NNAME" --node-ip="$NIP" --v=1
  wait_for "kubelet$NSFX" 120 node_ready "$NNAME"
}

start_node() { # start_node K: node K > 1, after node 1 is Ready
  node_vars "$1"
  echo "$NNAME $NIP $NCIDR $NDIR" >>"$DIR/nodes"
  make_node_holder "$1"
  node_pki
  node_configs
  # shellcheck disable=SC2034 # read by holder and spawn (scripts/cluster/common.sh)
  NSDIR="$NDIR" CG_SUB="$NCG"
  if [[ $NETPOL == 1 ]]; then start_netpol "$NNAME" "$DIR/pki/netpol$NSFX.kubeconfig"; fi
  start_containerd
  start_kubelet
  # shellcheck disable=SC2034 # as above
  NSDIR="" CG_SUB=""
}
