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

log() { echo "cluster: $*" >&2; }
die() { echo "cluster: $*" >&2; exit 1; }
usage() { sed -n '2,30p' "$0"; }

# ---- helpers ---------------------------------------------------------------------------------
cg_hierarchies() {  # every mounted cgroup v1 hierarchy root
  awk '$3=="cgroup" {print $2}' /proc/mounts
}
cg_root() {  # the cluster's cgroup path, relative to each hierarchy root
  if [[ -f "$DIR/cgroup" ]]; then cat "$DIR/cgroup"; return; fi
  local base; base="$(awk -F: '$2=="memory" {print $3}' /proc/self/cgroup)"
  [[ "$base" == / ]] && base=""
  echo "$base/ppu-cluster.$(echo -n "$DIR" | md5sum | cut -c1-8)"
}
cg_pids() {  # every process in the cluster's cgroup subtree (any hierarchy)
  local cg="$1" h
  for h in $(cg_hierarchies); do
    [[ -d "$h$cg" ]] && find "$h$cg" -name cgroup.procs -exec cat {} + 2>/dev/null
  done | sort -un
}
holder() { cat "$DIR/holder.pid" 2>/dev/null; }
in_ns() {  # run a command in the cluster's network + mount namespaces, clean environment
  nsenter -t "$(holder)" -n -m -- env -i PATH="$SYS_PATH" HOME=/root "$@"
}
in_netns() { nsenter -t "$(holder)" -n -- "$@"; }
spawn() {  # spawn NAME [--host] CMD...: a daemon in the cluster cgroup (and namespaces), logged
  local name="$1"; shift
  local where=ns; if [[ "$1" == --host ]]; then where=host; shift; fi
  local cg; cg="$(cg_root)/system"
  (
    for h in $(cg_hierarchies); do echo "$BASHPID" >"$h$cg/cgroup.procs"; done
    if [[ $where == ns ]]; then
      exec nsenter -t "$(holder)" -n -m -- env -i PATH="$SYS_PATH" HOME=/root setsid "$@"
    else
      exec env -i PATH="$SYS_PATH" HOME=/root setsid "$@"
    fi
  ) >>"$DIR/log/$name.log" 2>&1 </dev/null &
  echo $! >"$DIR/run/$name.pid"
}
wait_for() {  # wait_for WHAT SECONDS CMD...: poll CMD until it succeeds
  local what="$1" secs="$2"; shift 2
  local i
  for ((i = 0; i < secs * 5; i++)); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    local name="${what%% *}"
    if [[ -f "$DIR/run/$name.pid" ]] && ! kill -0 "$(cat "$DIR/run/$name.pid")" 2>/dev/null; then
      log "$name exited; last lines of $DIR/log/$name.log:"; tail -25 "$DIR/log/$name.log" >&2; return 1
    fi
    sleep 0.2
  done
  log "$what not ready after ${secs}s (logs in $DIR/log/)"; return 1
}
kubectl_ns() { in_ns "$TOOLS/kubectl" --kubeconfig "$DIR/pki/admin.kubeconfig" "$@"; }

# ---- certificates ----------------------------------------------------------------------------
pki() {
  local p="$DIR/pki"
  mkdir -p "$p"
  openssl req -x509 -newkey rsa:2048 -nodes -keyout "$p/ca.key" -out "$p/ca.crt" -days 30 \
    -subj "/CN=ppu-cluster-ca" 2>/dev/null
  cert() {  # cert NAME SUBJECT [SANs]
    local name="$1" subj="$2" sans="${3:-}"
    openssl req -newkey rsa:2048 -nodes -keyout "$p/$name.key" -out "$p/$name.csr" -subj "$subj" 2>/dev/null
    local ext="$p/$name.ext"
    { echo "basicConstraints=CA:FALSE"; echo "keyUsage=digitalSignature,keyEncipherment"
      if [[ -n "$sans" ]]; then echo "extendedKeyUsage=serverAuth,clientAuth"; echo "subjectAltName=$sans"
      else echo "extendedKeyUsage=clientAuth"; fi; } >"$ext"
    openssl x509 -req -in "$p/$name.csr" -CA "$p/ca.crt" -CAkey "$p/ca.key" -CAcreateserial \
      -out "$p/$name.crt" -days 30 -extfile "$ext" 2>/dev/null
    rm -f "$p/$name.csr" "$ext"
  }
  cert apiserver "/CN=kube-apiserver" \
    "DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,DNS:localhost,IP:127.0.0.1,IP:$API_IP,IP:$NODE_IP"
  cert kubelet-serving "/CN=$NODE" "DNS:$NODE,IP:$NODE_IP,IP:127.0.0.1"
  cert admin "/O=system:masters/CN=ppu-cluster-admin"
  cert apiserver-kubelet "/O=system:masters/CN=kube-apiserver-kubelet-client"
  cert controller-manager "/CN=system:kube-controller-manager"
  cert scheduler "/CN=system:kube-scheduler"
  cert kubelet "/O=system:nodes/CN=system:node:$NODE"
  cert coredns "/CN=system:ppu-coredns"
  openssl genrsa -out "$p/sa.key" 2048 2>/dev/null
  openssl rsa -in "$p/sa.key" -pubout -out "$p/sa.pub" 2>/dev/null
  local who server
  for who in admin controller-manager scheduler kubelet coredns; do
    server="https://127.0.0.1:443"
    kubeconfig "$p/$who.kubeconfig" "$server" "$p/$who.crt" "$p/$who.key"
  done
  kubeconfig "$DIR/kubeconfig" "https://127.0.0.1:$PORT" "$p/admin.crt" "$p/admin.key"
}
kubeconfig() {  # kubeconfig FILE SERVER CERT KEY (certificates embedded)
  cat >"$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: ppu
  cluster:
    server: $2
    certificate-authority-data: $(base64 -w0 "$DIR/pki/ca.crt")
users:
- name: user
  user:
    client-certificate-data: $(base64 -w0 "$3")
    client-key-data: $(base64 -w0 "$4")
contexts:
- name: ppu
  context: {cluster: ppu, user: user, namespace: default}
current-context: ppu
EOF
  chmod 600 "$1"
}

# ---- configuration files ---------------------------------------------------------------------
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
  local nofile; nofile="$(ulimit -Hn)"; [[ "$nofile" == unlimited ]] && nofile=1048576
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

# Objects the control plane needs before pods: CoreDNS's RBAC and Service, storage.
bootstrap_objects() {
  cat <<EOF
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: "system:ppu-coredns"}
rules:
- apiGroups: [""]
  resources: [endpoints, services, pods, namespaces]
  verbs: [list, watch]
- apiGroups: [discovery.k8s.io]
  resources: [endpointslices]
  verbs: [list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: "system:ppu-coredns"}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "system:ppu-coredns"}
subjects: [{kind: User, name: "system:ppu-coredns", apiGroup: rbac.authorization.k8s.io}]
---
apiVersion: v1
kind: Service
metadata:
  name: kube-dns
  namespace: kube-system
  labels: {k8s-app: kube-dns}
spec:
  clusterIP: $DNS_IP
  ports:
  - {name: dns, port: 53, protocol: UDP}
  - {name: dns-tcp, port: 53, protocol: TCP}
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: ppu-local
  annotations: {storageclass.kubernetes.io/is-default-class: "true"}
provisioner: kubernetes.io/no-provisioner
volumeBindingMode: Immediate
reclaimPolicy: Retain
EOF
  local i
  for ((i = 0; i < NPVS; i++)); do
    mkdir -p "$DIR/volumes/pv-$i"
    chmod 0777 "$DIR/volumes/pv-$i"
    cat <<EOF
---
apiVersion: v1
kind: PersistentVolume
metadata:
  name: ppu-local-$i
  labels: {ppu.dev/storage: local}
spec:
  storageClassName: ppu-local
  capacity: {storage: 4Gi}
  accessModes: [ReadWriteOnce, ReadWriteMany]
  persistentVolumeReclaimPolicy: Retain
  hostPath: {path: $DIR/volumes/pv-$i, type: Directory}
EOF
  done
}

# ---- up --------------------------------------------------------------------------------------
cmd_deps() {
  local missing=() p
  for p in "${DEBS[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if ((${#missing[@]})); then
    log "installing ${missing[*]}"
    DEBIAN_FRONTEND=noninteractive apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
  fi
}

make_holder() {
  local cg; cg="$(cg_root)"
  echo "$cg" >"$DIR/cgroup"
  # The path is the caller's memory cgroup + ppu-cluster.<hash>, so the cluster's memory is
  # accounted where the caller's is; in the other hierarchies the missing parents are created
  # (and recorded, for `down` to remove).
  : >"$DIR/created-cgroups"
  local h d rel
  for h in $(cg_hierarchies); do
    rel=""
    for d in $(tr '/' ' ' <<<"$cg/system"); do
      local parent="$h$rel"; rel="$rel/$d"
      if [[ ! -d "$h$rel" ]]; then
        mkdir "$h$rel"
        [[ "$rel" == "$cg"* ]] || echo "$h$rel" >>"$DIR/created-cgroups"
        if [[ -f "$h$rel/cpuset.cpus" ]]; then  # cpuset children start empty: inherit the parent's
          cat "$parent/cpuset.cpus" >"$h$rel/cpuset.cpus"; cat "$parent/cpuset.mems" >"$h$rel/cpuset.mems"
        fi
      fi
    done
  done
  # Host paths that must exist as mount points inside the private mount namespace; the ones
  # created here are removed by `down`.
  : >"$DIR/created-paths"
  local mp
  for mp in /run/containerd /run/netns /var/lib/cni /var/log/pods /var/log/containers; do
    if [[ ! -e "$mp" ]]; then mkdir -p "$mp"; echo "$mp" >>"$DIR/created-paths"; fi
    mkdir -p "$DIR/mnt$mp"
  done
  cat >"$DIR/run/holder.sh" <<EOF
set -e
for mp in /run/containerd /run/netns /var/lib/cni /var/log/pods /var/log/containers; do
  mount --bind "$DIR/mnt\$mp" "\$mp"
done
mount --make-rshared /
ip link set lo up
ip addr add $NODE_IP/32 dev lo
ip addr add $API_IP/32 dev lo
ip addr add $DNS_IP/32 dev lo
sysctl -qw net.ipv4.ip_forward=1
echo \$\$ >"$DIR/holder.pid"
exec sleep infinity
EOF
  (
    for h in $(cg_hierarchies); do echo "$BASHPID" >"$h$cg/system/cgroup.procs"; done
    exec unshare --net --mount --propagation private setsid sh "$DIR/run/holder.sh"
  ) >>"$DIR/log/holder.log" 2>&1 </dev/null &
  local i
  for ((i = 0; i < 50; i++)); do [[ -s "$DIR/holder.pid" ]] && break; sleep 0.1; done
  [[ -s "$DIR/holder.pid" ]] || { cat "$DIR/log/holder.log" >&2; die "namespace holder did not start"; }
  readlink "/proc/$(holder)/ns/net" >"$DIR/netns-id"
}

cmd_up() {
  [[ $(id -u) == 0 ]] || die "up needs root"
  if [[ -f "$DIR/holder.pid" ]]; then die "a cluster already runs in $DIR (scripts/cluster.sh down first)"; fi
  for t in nsenter unshare containerd runc socat openssl podman ctr; do
    command -v "$t" >/dev/null || die "$t not found (bash scripts/cluster.sh deps)"
  done
  [[ -x /usr/lib/cni/bridge && -x /usr/lib/cni/host-local ]] || die "CNI plugins missing (bash scripts/cluster.sh deps)"
  local t0; t0=$(date +%s)
  TOOLS="$("$ROOT/scripts/build-cluster-tools.sh" | tail -1)"
  local t_tools=$(( $(date +%s) - t0 ))
  mkdir -p "$DIR"/{log,run,etcd,kubelet,containerd,images,volumes}
  echo "TOOLS=$TOOLS" >"$DIR/env"
  pki
  configs
  log "pause image"
  podman build -q --pull=never -t "$PAUSE_IMAGE" -f "$ROOT/tests/cluster/pause.Containerfile" "$TOOLS" >/dev/null
  podman save --format docker-archive -o "$DIR/images/pause.tar" "$PAUSE_IMAGE" 2>/dev/null

  make_holder
  log "etcd"
  spawn etcd "$TOOLS/etcd" --name "$NODE" --data-dir "$DIR/etcd" \
    --listen-client-urls http://127.0.0.1:2379 --advertise-client-urls http://127.0.0.1:2379 \
    --listen-peer-urls http://127.0.0.1:2380 --initial-advertise-peer-urls http://127.0.0.1:2380 \
    --initial-cluster "$NODE=http://127.0.0.1:2380" --unsafe-no-fsync
  wait_for "etcd" 30 in_netns curl -sf http://127.0.0.1:2379/health

  log "kube-apiserver"
  spawn kube-apiserver "$TOOLS/kube-apiserver" \
    --etcd-servers=http://127.0.0.1:2379 \
    --bind-address=0.0.0.0 --secure-port=443 --advertise-address="$NODE_IP" \
    --tls-cert-file="$DIR/pki/apiserver.crt" --tls-private-key-file="$DIR/pki/apiserver.key" \
    --client-ca-file="$DIR/pki/ca.crt" \
    --kubelet-client-certificate="$DIR/pki/apiserver-kubelet.crt" --kubelet-client-key="$DIR/pki/apiserver-kubelet.key" \
    --kubelet-preferred-address-types=InternalIP \
    --service-account-key-file="$DIR/pki/sa.pub" --service-account-signing-key-file="$DIR/pki/sa.key" \
    --service-account-issuer=https://kubernetes.default.svc.cluster.local \
    --authorization-mode=Node,RBAC --enable-admission-plugins=NodeRestriction \
    --service-cluster-ip-range="$SERVICE_CIDR" --allow-privileged=false \
    --endpoint-reconciler-type=lease --v=1
  wait_for "kube-apiserver" 90 in_netns curl -sf --cacert "$DIR/pki/ca.crt" \
    --cert "$DIR/pki/admin.crt" --key "$DIR/pki/admin.key" https://127.0.0.1:443/readyz
  spawn apiserver-relay-ns socat "UNIX-LISTEN:$DIR/run/apiserver.sock,fork,mode=600,unlink-early" TCP:127.0.0.1:443
  wait_for "apiserver-relay-ns" 10 test -S "$DIR/run/apiserver.sock"
  spawn apiserver-relay --host socat "TCP-LISTEN:$PORT,bind=127.0.0.1,reuseaddr,fork" "UNIX-CONNECT:$DIR/run/apiserver.sock"

  log "kube-controller-manager, kube-scheduler"
  spawn kube-controller-manager "$TOOLS/kube-controller-manager" \
    --kubeconfig="$DIR/pki/controller-manager.kubeconfig" \
    --authentication-kubeconfig="$DIR/pki/controller-manager.kubeconfig" \
    --authorization-kubeconfig="$DIR/pki/controller-manager.kubeconfig" \
    --bind-address=127.0.0.1 --leader-elect=false \
    --service-account-private-key-file="$DIR/pki/sa.key" --root-ca-file="$DIR/pki/ca.crt" \
    --cluster-signing-cert-file="$DIR/pki/ca.crt" --cluster-signing-key-file="$DIR/pki/ca.key" \
    --use-service-account-credentials=true --controllers='*,-nodeipam,-cloud-node-lifecycle,-service-lb-controller,-node-route-controller' \
    --service-cluster-ip-range="$SERVICE_CIDR" --v=1
  spawn kube-scheduler "$TOOLS/kube-scheduler" --config="$DIR/config/scheduler.yaml" \
    --authentication-kubeconfig="$DIR/pki/scheduler.kubeconfig" \
    --authorization-kubeconfig="$DIR/pki/scheduler.kubeconfig" --bind-address=127.0.0.1 --v=1
  wait_for "kube-controller-manager" 60 in_netns curl -sfk https://127.0.0.1:10257/healthz
  wait_for "kube-scheduler" 60 in_netns curl -sfk https://127.0.0.1:10259/healthz

  log "containerd"
  spawn containerd containerd --config "$DIR/config/containerd.toml"
  wait_for "containerd" 30 ctr -a "$DIR/run/containerd.sock" version
  # The kubelet's cAdvisor looks for containerd at its default address (for container stats).
  ln -sfn "$DIR/run/containerd.sock" "$DIR/mnt/run/containerd/containerd.sock"
  in_ns ctr -a "$DIR/run/containerd.sock" -n k8s.io images import "$DIR/images/pause.tar" >/dev/null

  log "kubelet"
  spawn kubelet "$TOOLS/kubelet" --config="$DIR/config/kubelet.yaml" \
    --kubeconfig="$DIR/pki/kubelet.kubeconfig" --root-dir="$DIR/kubelet" --cert-dir="$DIR/kubelet/pki" \
    --hostname-override="$NODE" --node-ip="$NODE_IP" --v=1
  wait_for "kubelet" 120 node_ready

  log "CoreDNS, storage"
  bootstrap_objects | kubectl_ns apply -f - >/dev/null
  spawn coredns "$TOOLS/coredns" -conf "$DIR/config/Corefile" -dns.port 53
  wait_for "coredns" 60 in_netns curl -sf http://127.0.0.1:8181/ready
  kubectl_ns wait --for=jsonpath='{.status.phase}'=Available pv/ppu-local-0 --timeout=30s >/dev/null
  log "ready in $(( $(date +%s) - t0 )) s (tools ${t_tools} s); logs in $DIR/log"
  echo "export KUBECONFIG=$DIR/kubeconfig"
}
node_ready() {
  [[ "$(kubectl_ns get node "$NODE" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" == True ]]
}

# ---- down ------------------------------------------------------------------------------------
cmd_down() {
  [[ -d "$DIR" ]] || { log "nothing to stop ($DIR does not exist)"; return 0; }
  local cg; cg="$(cg_root)"
  local sig pids round
  # Processes started with `netns` (e.g. a Prometheus) are outside the cgroup but would keep the
  # network namespace, and the bridge in it, alive: stop them while the holder proves the
  # namespace is still ours (a freed namespace's inode number can be reused by another one).
  local id pid p
  id="$(cat "$DIR/netns-id" 2>/dev/null || true)"; pid="$(holder || true)"
  if [[ -n "$id" && -n "$pid" && "$(readlink "/proc/$pid/ns/net" 2>/dev/null)" == "$id" ]]; then
    for round in $(seq 1 20); do
      pids=""
      for p in /proc/[0-9]*; do
        [[ "$(readlink "$p/ns/net" 2>/dev/null)" == "$id" ]] || continue
        grep -qF ":$cg" "$p/cgroup" 2>/dev/null || pids="$pids ${p#/proc/}"
      done
      [[ -z "$pids" ]] && break
      if ((round <= 10)); then sig=TERM; else sig=KILL; fi
      # shellcheck disable=SC2086
      kill -"$sig" $pids 2>/dev/null || true
      sleep 0.5
    done
  fi
  # kubelet first, so it does not restart containers while they are being killed.
  [[ -f "$DIR/run/kubelet.pid" ]] && kill "$(cat "$DIR/run/kubelet.pid")" 2>/dev/null || true
  for round in $(seq 1 60); do
    pids="$(cg_pids "$cg")"
    [[ -z "$pids" ]] && break
    if ((round <= 10)); then sig=TERM; else sig=KILL; fi
    kill -"$sig" $pids 2>/dev/null || true
    sleep 0.5
  done
  [[ -z "$(cg_pids "$cg")" ]] || die "processes survive in cgroup $cg: $(cg_pids "$cg" | tr '\n' ' ')"
  local h
  for h in $(cg_hierarchies); do
    [[ -d "$h$cg" ]] && find "$h$cg" -depth -type d -exec rmdir {} + 2>/dev/null || true
    [[ -d "$h$cg" ]] && die "cannot remove cgroup $h$cg"
  done
  if [[ -f "$DIR/created-cgroups" ]]; then
    tac "$DIR/created-cgroups" | while read -r d; do rmdir "$d" 2>/dev/null || log "left cgroup $d (not empty)"; done
  fi
  # cgroup v2 paths runc may have created in the hybrid "unified" hierarchy.
  if [[ -d "/sys/fs/cgroup/unified$cg" ]]; then find "/sys/fs/cgroup/unified$cg" -depth -type d -exec rmdir {} +; fi
  # Mounts are in the private mount namespace, which died with its last process; check anyway.
  if grep -q " $DIR" /proc/self/mounts; then
    grep " $DIR" /proc/self/mounts | awk '{print $2}' | sort -r | xargs -r umount -l
  fi
  if [[ -f "$DIR/created-paths" ]]; then
    local p
    while read -r p; do rmdir "$p" 2>/dev/null || log "left $p (not empty)"; done <"$DIR/created-paths"
  fi
  rm -rf --one-file-system "$DIR"
  log "down: no process, cgroup, mount or file of the cluster is left"
}

cmd_status() {
  [[ -f "$DIR/holder.pid" ]] && kill -0 "$(holder)" 2>/dev/null || { log "not running"; return 1; }
  source "$DIR/env"
  node_ready || { log "node not Ready"; return 1; }
  log "running; export KUBECONFIG=$DIR/kubeconfig"
}

cmd_load_image() {
  local image="${1:?load-image needs an image name}" aliases=() a
  shift
  while [[ $# -gt 0 ]]; do
    [[ $1 == --as && $# -ge 2 ]] || die "load-image: expected '--as NAME', got '$*'"
    aliases+=("$2")
    shift 2
  done
  [[ -f "$DIR/holder.pid" ]] || die "no cluster (scripts/cluster.sh up)"
  podman image exists "$image" || die "podman has no image '$image' (scripts/build-image.sh)"
  local tar="$DIR/images/$(echo "$image" | tr '/:' '__').tar"
  rm -f "$tar"
  podman save --format docker-archive -o "$tar" "$image" 2>/dev/null
  in_ns ctr -a "$DIR/run/containerd.sock" -n k8s.io images import "$tar" >&2
  rm -f "$tar"
  # podman names a local image localhost/NAME; containerd keeps that name.
  local ref="$image"
  [[ $ref == */* ]] || ref="localhost/$ref"
  [[ $ref == *:* ]] || ref="$ref:latest"
  for a in "${aliases[@]}"; do
    in_ns ctr -a "$DIR/run/containerd.sock" -n k8s.io images tag --force "$ref" "$a" >&2
  done
}

case "${1:-}" in
  deps) cmd_deps ;;
  up) cmd_up ;;
  down) cmd_down ;;
  status) cmd_status ;;
  load-image) shift; cmd_load_image "$@" ;;
  netns) shift; [[ -f "$DIR/holder.pid" ]] || die "no cluster"; exec nsenter -t "$(holder)" -n -- "$@" ;;
  -h|--help|"") usage; [[ -n "${1:-}" ]] ;;
  *) die "unknown command '$1' (try --help)" ;;
esac
