# shellcheck shell=bash
# scripts/cluster.sh, part: certificates and kubeconfigs. A throw-away CA (30 days) in $DIR/pki
# signs the API server's and the kubelet's serving certificates and one client certificate per
# component (admin in system:masters, the kubelet in system:nodes, controller-manager, scheduler,
# CoreDNS, the NetworkPolicy controller); a service-account key pair; a kubeconfig per component for https://127.0.0.1:443
# inside the namespace, and $DIR/kubeconfig for the host's relay on 127.0.0.1:$PORT; node_pki, for
# every node but the first, its kubelet's certificates and kubeconfigs.
# Sourced by cluster.sh; defines functions only.

pki() {
  local p="$DIR/pki"
  mkdir -p "$p"
  openssl req -x509 -newkey rsa:2048 -nodes -keyout "$p/ca.key" -out "$p/ca.crt" -days 30 \
    -subj "/CN=ppu-cluster-ca" 2>/dev/null
  pki_cert apiserver "/CN=kube-apiserver" \
    "DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,DNS:localhost,IP:127.0.0.1,IP:$API_IP,IP:$NODE_IP"
  pki_cert kubelet-serving "/CN=$NODE" "DNS:$NODE,IP:$NODE_IP,IP:127.0.0.1"
  pki_cert admin "/O=system:masters/CN=ppu-cluster-admin"
  pki_cert apiserver-kubelet "/O=system:masters/CN=kube-apiserver-kubelet-client"
  pki_cert controller-manager "/CN=system:kube-controller-manager"
  pki_cert scheduler "/CN=system:kube-scheduler"
  pki_cert kubelet "/O=system:nodes/CN=system:node:$NODE"
  pki_cert coredns "/CN=system:ppu-coredns"
  pki_cert netpol "/CN=system:ppu-netpol"
  openssl genrsa -out "$p/sa.key" 2048 2>/dev/null
  openssl rsa -in "$p/sa.key" -pubout -out "$p/sa.pub" 2>/dev/null
  local who server
  for who in admin controller-manager scheduler kubelet coredns netpol; do
    server="https://127.0.0.1:443"
    kubeconfig "$p/$who.kubeconfig" "$server" "$p/$who.crt" "$p/$who.key"
  done
  kubeconfig "$DIR/kubeconfig" "https://127.0.0.1:$PORT" "$p/admin.crt" "$p/admin.key"
}
pki_cert() { # pki_cert NAME SUBJECT [SANs]: $DIR/pki/NAME.{crt,key}, signed by the cluster's CA
  local p="$DIR/pki" name="$1" subj="$2" sans="${3:-}"
  openssl req -newkey rsa:2048 -nodes -keyout "$p/$name.key" -out "$p/$name.csr" -subj "$subj" 2>/dev/null
  local ext="$p/$name.ext"
  {
    echo "basicConstraints=CA:FALSE"
    echo "keyUsage=digitalSignature,keyEncipherment"
    if [[ -n "$sans" ]]; then
      echo "extendedKeyUsage=serverAuth,clientAuth"
      echo "subjectAltName=$sans"
    else echo "extendedKeyUsage=clientAuth"; fi
  } >"$ext"
  openssl x509 -req -in "$p/$name.csr" -CA "$p/ca.crt" -CAkey "$p/ca.key" -CAcreateserial \
    -out "$p/$name.crt" -days 30 -extfile "$ext" 2>/dev/null
  rm -f "$p/$name.csr" "$ext"
}
kubeconfig() { # kubeconfig FILE SERVER CERT KEY (certificates embedded)
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
node_pki() { # node_pki: node NNAME's (node_vars; not node 1's) serving and client certificates,
  # and kubeconfigs for its kubelet and NetworkPolicy controller, which reach the API server
  # through node 1's address (other nodes' namespaces do not have the API Service address)
  local p="$DIR/pki"
  pki_cert "kubelet-serving$NSFX" "/CN=$NNAME" "DNS:$NNAME,IP:$NIP,IP:127.0.0.1"
  pki_cert "kubelet$NSFX" "/O=system:nodes/CN=system:node:$NNAME"
  kubeconfig "$p/kubelet$NSFX.kubeconfig" "https://$NODE_IP:443" "$p/kubelet$NSFX.crt" "$p/kubelet$NSFX.key"
  kubeconfig "$p/netpol$NSFX.kubeconfig" "https://$NODE_IP:443" "$p/netpol.crt" "$p/netpol.key"
}
