# shellcheck shell=bash
# scripts/cluster.sh, part: the node. containerd (config from scripts/cluster/config.sh) with the
# pause image imported, and the kubelet registering node $NODE at $NODE_IP; waits until the node
# is Ready.
# Sourced by cluster.sh; defines functions only. Needs TOOLS (scripts/build-cluster-tools.sh).

start_containerd() {
  log "containerd"
  spawn containerd containerd --config "$DIR/config/containerd.toml"
  wait_for "containerd" 30 ctr -a "$DIR/run/containerd.sock" version
  # The kubelet's cAdvisor looks for containerd at its default address (for container stats).
  ln -sfn "$DIR/run/containerd.sock" "$DIR/mnt/run/containerd/containerd.sock"
  in_ns ctr -a "$DIR/run/containerd.sock" -n k8s.io images import "$DIR/images/pause.tar" >/dev/null
}

start_kubelet() {
  log "kubelet"
  spawn kubelet "$TOOLS/kubelet" --config="$DIR/config/kubelet.yaml" \
    --kubeconfig="$DIR/pki/kubelet.kubeconfig" --root-dir="$DIR/kubelet" --cert-dir="$DIR/kubelet/pki" \
    --hostname-override="$NODE" --node-ip="$NODE_IP" --v=1
  wait_for "kubelet" 120 node_ready
}
