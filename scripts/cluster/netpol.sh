# shellcheck shell=bash
# scripts/cluster.sh, part: NetworkPolicy enforcement (on unless `up --no-network-policy` or
# PPU_CLUSTER_NETPOL=0). The implementation is Kubernetes SIG Network's reference one,
# sigs.k8s.io/kube-network-policies (pinned in tests/cluster/netpol/go.mod; its controller, wrapped
# by tests/cluster/netpol/main.go, is built by scripts/build-cluster-tools.sh): the first packet of
# every new connection to or from a pod goes to userspace through an NFQUEUE, the controller looks
# up the source and destination pods and the NetworkPolicies that select them, and accepts or drops
# it; conntrack lets the rest of an accepted connection through in the kernel. Chosen over Calico
# or Cilium because it needs no CNI of its own (the bridge CNI stays), no eBPF and no image: one
# Go binary per node, the reference behaviour the Kubernetes conformance tests are written against.
#
# start_netpol NODE: in the node's network namespace (node NNAME of node_vars),
#   - bridged pod-to-pod traffic must traverse netfilter: net.bridge.bridge-nf-call-iptables=1
#     (br_netfilter; without it two pods on the node's bridge talk past every rule);
#   - the diversion, in table mangle, chain PPU-NETPOL jumped to from POSTROUTING (upstream's
#     hook; it sees bridged, forwarded and locally sent packets): established and related
#     packets pass, packets of root's sockets on the node pass (upstream does the same so that the
#     kubelet's probes are never blocked), and new connections from or to the pod network
#     ($POD_NET) go to NFQUEUE $NETPOL_QUEUE, fail-closed (no --queue-bypass: while no controller
#     reads the queue, new pod connections are dropped, as upstream's default). Written with the
#     xtables NFQUEUE target, not nftables' `queue` statement that the controller's own table
#     uses, because kernels without CONFIG_NFT_QUEUE (this machine's) refuse the latter; the
#     controller logs that its table was refused and serves the queue all the same;
#   - the controller, as the cluster identity system:ppu-netpol (list/watch pods, namespaces and
#     NetworkPolicies, write events), waited for until it has bound the queue.
# netpol_objects: its ClusterRole and binding. Traffic that never reaches POSTROUTING is not
# policed, as upstream: pods to the node itself (the API server and DNS addresses live on the
# node, and the policies here restrict ingress only).
# Sourced by cluster.sh; defines functions only.

NETPOL_QUEUE=100

netpol_objects() {
  cat <<EOF
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: "system:ppu-netpol"}
rules:
- apiGroups: [""]
  resources: [pods, namespaces]
  verbs: [list, watch]
- apiGroups: [networking.k8s.io]
  resources: [networkpolicies]
  verbs: [list, watch]
- apiGroups: ["", events.k8s.io]
  resources: [events]
  verbs: [create, patch, update]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: "system:ppu-netpol"}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "system:ppu-netpol"}
subjects: [{kind: User, name: "system:ppu-netpol", apiGroup: rbac.authorization.k8s.io}]
EOF
}

netpol_queue_bound() { # the controller of the namespace has bound the queue
  local bound
  bound="$(in_netns cat /proc/net/netfilter/nfnetlink_queue 2>/dev/null)" || return 1
  grep -qE "^ *$NETPOL_QUEUE " <<<"$bound"
}

start_netpol() { # start_netpol NODE [KUBECONFIG]: in the namespace in_netns enters (NSDIR)
  local node="$1" kc="${2:-$DIR/pki/netpol.kubeconfig}"
  log "kube-network-policies on $node"
  [[ -x "$TOOLS/kube-network-policies" ]] || die "$TOOLS/kube-network-policies missing (scripts/build-cluster-tools.sh)"
  command -v iptables >/dev/null || die "iptables not found (bash scripts/cluster.sh deps)"
  [[ -e /proc/sys/net/bridge ]] || modprobe br_netfilter 2>/dev/null \
    || die "br_netfilter is not available: bridged pod traffic would bypass every NetworkPolicy"
  in_netns sysctl -qw net.bridge.bridge-nf-call-iptables=1
  [[ "$(in_netns cat /proc/sys/net/bridge/bridge-nf-call-iptables)" == 1 ]] \
    || die "net.bridge.bridge-nf-call-iptables stays 0 in the cluster's network namespace"
  local ipt=(in_netns iptables -w -t mangle)
  "${ipt[@]}" -N PPU-NETPOL
  "${ipt[@]}" -A PPU-NETPOL -m conntrack --ctstate ESTABLISHED,RELATED -j RETURN
  "${ipt[@]}" -A PPU-NETPOL -m owner --uid-owner 0 -j RETURN
  "${ipt[@]}" -A PPU-NETPOL -s "$POD_NET" -j NFQUEUE --queue-num "$NETPOL_QUEUE"
  "${ipt[@]}" -A PPU-NETPOL -d "$POD_NET" -j NFQUEUE --queue-num "$NETPOL_QUEUE"
  "${ipt[@]}" -A POSTROUTING -j PPU-NETPOL
  netpol_objects | kubectl_ns apply -f - >/dev/null
  spawn "kube-network-policies$NSFX" "$TOOLS/kube-network-policies" --kubeconfig="$kc" \
    --hostname-override="$node" --nfqueue-id="$NETPOL_QUEUE" --metrics-bind-address=127.0.0.1:9080 --v=1
  wait_for "kube-network-policies$NSFX" 90 netpol_queue_bound
}
