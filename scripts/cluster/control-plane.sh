# shellcheck shell=bash
# scripts/cluster.sh, part: the control plane, each daemon started in the namespaces and cgroup
# (spawn) and waited for until it answers: etcd on 127.0.0.1:2379; kube-apiserver on :443 of
# every address in the namespace (Node and RBAC authorization, service accounts, Services in
# $SERVICE_CIDR), reached from the host through two socat relays (namespace -> a unix socket in
# $DIR/run -> 127.0.0.1:$PORT on the host); kube-controller-manager and kube-scheduler.
# Sourced by cluster.sh; defines functions only. Needs TOOLS (scripts/build-cluster-tools.sh).

start_etcd() {
  log "etcd"
  spawn etcd "$TOOLS/etcd" --name "$NODE" --data-dir "$DIR/etcd" \
    --listen-client-urls http://127.0.0.1:2379 --advertise-client-urls http://127.0.0.1:2379 \
    --listen-peer-urls http://127.0.0.1:2380 --initial-advertise-peer-urls http://127.0.0.1:2380 \
    --initial-cluster "$NODE=http://127.0.0.1:2380" --unsafe-no-fsync
  wait_for "etcd" 30 in_netns curl -sf http://127.0.0.1:2379/health
}

start_apiserver() {
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
}

start_controllers() {
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
}
