# shellcheck shell=bash
# scripts/cluster.sh, part: the configuration files the daemons read, written under $DIR: per
# node (node_configs; node 1's in $DIR, node K's in $DIR/node-K) the bridge CNI network (the
# node's pods in its pod CIDR on bridge ppucni0, host-local IPAM), containerd's config (its own
# root and sockets in the node's dir, the local pause image as sandbox image, runc with cgroupfs)
# and the kubelet's configuration (cgroupfs in the node's cgroup subtree, CoreDNS as cluster DNS,
# webhook authentication and authorization); once, a resolv.conf with no upstream resolver, the
# scheduler's configuration, and CoreDNS's Corefile (tests/cluster/tools_pin_test.sh reads the
# plugins it names from this file).
# Sourced by cluster.sh; defines functions only.

# shellcheck disable=SC2034,SC2153 # globals the other parts read; DIR is cluster.sh's
node_vars() { # node_vars K: NNAME NIP NCIDR NDIR NCG NSFX of node K (1 = the control plane's)
  local k="$1"
  if ((k == 1)); then
    NNAME="$NODE" NIP="$NODE_IP" NCIDR="$POD_CIDR" NDIR="$DIR" NCG="" NSFX=""
  else
    NNAME="$NODE-$k" NIP="10.200.0.$k" NCIDR="10.244.$((k - 1)).0/24" NDIR="$DIR/node-$k" NCG="/node-$k" NSFX="-$k"
  fi
}

configs() {
  local c="$DIR/config"
  mkdir -p "$c"
  node_vars 1
  node_configs
  # No upstream resolvers: pod DNS is CoreDNS only (the machine has no network but registries).
  echo "options ndots:5" >"$c/resolv.conf"
  cat >"$c/scheduler.yaml" <<EOF
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection: {kubeconfig: $DIR/pki/scheduler.kubeconfig}
leaderElection: {leaderElect: false}
EOF
  cat >"$c/Corefile" <<EOF
cluster.local:53 in-addr.arpa:53 ip6.arpa:53 {
    bind $DNS_IP
    errors
    health 127.0.0.1:8180
    ready 127.0.0.1:8181
    prometheus 127.0.0.1:9153
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        kubeconfig $DIR/pki/coredns.kubeconfig ppu
        pods insecure
        ttl 5
    }
    loadbalance
}
EOF
}

node_configs() { # the CNI network, containerd's and the kubelet's configuration of node NNAME (node_vars)
  mkdir -p "$NDIR/config" "$NDIR/cni/net.d" "$NDIR/cni/ipam"
  cat >"$NDIR/cni/net.d/10-ppu-bridge.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "ppu-pods",
  "plugins": [
    {"type": "bridge", "bridge": "ppucni0", "isGateway": true, "ipMasq": false, "hairpinMode": true,
     "ipam": {"type": "host-local", "dataDir": "$NDIR/cni/ipam", "ranges": [[{"subnet": "$NCIDR"}]],
              "routes": [{"dst": "0.0.0.0/0"}]}},
    {"type": "loopback"}
  ]
}
EOF
  cat >"$NDIR/config/containerd.toml" <<EOF
version = 2
root = "$NDIR/containerd/root"
state = "/run/containerd"
oom_score = 0
[grpc]
  address = "$NDIR/run/containerd.sock"
[ttrpc]
  address = "$NDIR/run/containerd-ttrpc.sock"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  restrict_oom_score_adj = true
  enable_selinux = false
  disable_apparmor = true
  max_container_log_line_size = 16384
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        BinaryName = "$(command -v runc)"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$NDIR/cni/net.d"
    max_conf_num = 1
EOF
  local nofile
  nofile="$(ulimit -Hn)"
  [[ "$nofile" == unlimited ]] && nofile=1048576
  cat >"$NDIR/config/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $NIP
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $DIR/pki/ca.crt}
authorization: {mode: Webhook}
tlsCertFile: $DIR/pki/kubelet-serving$NSFX.crt
tlsPrivateKeyFile: $DIR/pki/kubelet-serving$NSFX.key
cgroupDriver: cgroupfs
cgroupRoot: $(cg_root)$NCG
cgroupsPerQOS: true
enforceNodeAllocatable: [pods]
clusterDNS: [$DNS_IP]
clusterDomain: cluster.local
resolvConf: $DIR/config/resolv.conf
containerRuntimeEndpoint: unix://$NDIR/run/containerd.sock
failSwapOn: false
protectKernelDefaults: false
makeIPTablesUtilChains: false
maxOpenFiles: $nofile
serializeImagePulls: false
imageGCHighThresholdPercent: 95
imageGCLowThresholdPercent: 90
evictionHard: {memory.available: 200Mi, nodefs.available: 2%, imagefs.available: 2%, nodefs.inodesFree: 1%}
maxPods: 64
podPidsLimit: 4096
EOF
}
