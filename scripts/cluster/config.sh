# shellcheck shell=bash
# scripts/cluster.sh, part: the configuration files the daemons read, written under $DIR: the
# bridge CNI network (pods in $POD_CIDR on bridge ppucni0, host-local IPAM), containerd's config
# (its own root and sockets in $DIR, the local pause image as sandbox image, runc with cgroupfs),
# a resolv.conf with no upstream resolver, the kubelet's configuration (cgroupfs in the cluster's
# cgroup subtree, CoreDNS as cluster DNS, webhook authentication and authorization), the
# scheduler's, and CoreDNS's Corefile (tests/cluster/tools_pin_test.sh reads the plugins it
# names from this file).
# Sourced by cluster.sh; defines functions only.

configs() {
  local c="$DIR/config"
  mkdir -p "$c" "$DIR/cni/net.d" "$DIR/cni/ipam"
  cat >"$DIR/cni/net.d/10-ppu-bridge.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "ppu-pods",
  "plugins": [
    {"type": "bridge", "bridge": "ppucni0", "isGateway": true, "ipMasq": false, "hairpinMode": true,
     "ipam": {"type": "host-local", "dataDir": "$DIR/cni/ipam", "ranges": [[{"subnet": "$POD_CIDR"}]],
              "routes": [{"dst": "0.0.0.0/0"}]}},
    {"type": "loopback"}
  ]
}
EOF
  cat >"$c/containerd.toml" <<EOF
version = 2
root = "$DIR/containerd/root"
state = "/run/containerd"
oom_score = 0
[grpc]
  address = "$DIR/run/containerd.sock"
[ttrpc]
  address = "$DIR/run/containerd-ttrpc.sock"
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
    conf_dir = "$DIR/cni/net.d"
    max_conf_num = 1
EOF
  # No upstream resolvers: pod DNS is CoreDNS only (the machine has no network but registries).
  echo "options ndots:5" >"$c/resolv.conf"
  local nofile
  nofile="$(ulimit -Hn)"
  [[ "$nofile" == unlimited ]] && nofile=1048576
  cat >"$c/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $NODE_IP
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $DIR/pki/ca.crt}
authorization: {mode: Webhook}
tlsCertFile: $DIR/pki/kubelet-serving.crt
tlsPrivateKeyFile: $DIR/pki/kubelet-serving.key
cgroupDriver: cgroupfs
cgroupRoot: $(cg_root)
cgroupsPerQOS: true
enforceNodeAllocatable: [pods]
clusterDNS: [$DNS_IP]
clusterDomain: cluster.local
resolvConf: $c/resolv.conf
containerRuntimeEndpoint: unix://$DIR/run/containerd.sock
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
