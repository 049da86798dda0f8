# shellcheck shell=bash
# scripts/cluster.sh, part: what runs after the node is Ready: the API objects the control plane
# needs before pods (CoreDNS's RBAC and kube-dns Service at $DNS_IP; the default StorageClass
# ppu-local and $NPVS hostPath PersistentVolumes under $DIR/volumes), and CoreDNS itself.
# Sourced by cluster.sh; defines functions only.

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

start_addons() {
  log "CoreDNS, storage"
  bootstrap_objects | kubectl_ns apply -f - >/dev/null
  spawn coredns "$TOOLS/coredns" -conf "$DIR/config/Corefile" -dns.port 53
  wait_for "coredns" 60 in_netns curl -sf http://127.0.0.1:8181/ready
  kubectl_ns wait --for=jsonpath='{.status.phase}'=Available pv/ppu-local-0 --timeout=30s >/dev/null
}
