#!/usr/bin/env bash
# A throw-away Kubernetes control plane for tests: etcd + kube-apiserver on loopback with
# random free ports, a temp cert dir, a service-account key, RBAC authorization, an admin
# client certificate (O=system:masters), a kubeconfig, and the PPUJob CRD installed.
# No scheduler, controller-manager or kubelet: tests drive pod phases via the status subresource.
#
# Usage:
#   scripts/kube-test-env.sh start DIR            start; writes DIR/kubeconfig and DIR/env
#   scripts/kube-test-env.sh stop DIR             stop both, remove DIR
#   scripts/kube-test-env.sh restart-apiserver DIR  kill and restart kube-apiserver (etcd keeps data)
#   scripts/kube-test-env.sh kill-apiserver DIR / start-apiserver DIR
# Tools come from scripts/build-kube-tools.sh (built on first use), or PPU_TOOLS_DIR.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cmd="${1:-}"
DIR="${2:-}"
[[ -n "$cmd" && -n "$DIR" ]] || {
  sed -n '2,12p' "$0"
  exit 2
}

tools() {
  local d
  d="$("$ROOT/scripts/build-kube-tools.sh" --print-dir)"
  if [[ ! -x "$d/kube-apiserver" || ! -x "$d/kubectl" || ! -e "$d/etcd" ]]; then
    "$ROOT/scripts/build-kube-tools.sh" >&2
  fi
  echo "$d"
}

# Ports come from below the kernel's ephemeral range, so no outgoing connection of a test
# running beside this one (ctest -j) can hold them as its source port.
PORT_LO=20000
PORT_HI=$(($(awk '{print $1}' /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768) - 1))
free_port() { # a random port nothing listens on (pure bash: connecting must fail)
  local p
  while true; do
    p=$((PORT_LO + RANDOM % (PORT_HI - PORT_LO)))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
      echo "$p"
      return
    fi
  done
}

wait_ready() { # url, what, pidfile
  for _ in $(seq 1 300); do
    if curl -sf --cacert "$DIR/certs/apiserver.crt" --cert "$DIR/pki/admin.crt" --key "$DIR/pki/admin.key" \
      "$1" >/dev/null 2>&1; then return 0; fi
    if ! kill -0 "$(cat "$3")" 2>/dev/null; then
      echo "kube-test-env: $2 exited; last log lines:" >&2
      tail -20 "$DIR/$2.log" >&2
      return 1
    fi
    sleep 0.2
  done
  echo "kube-test-env: $2 not ready after 60 s; see $DIR/$2.log" >&2
  return 1
}

write_env() { # the ports this control plane uses, for start_apiserver and the tests
  cat >"$DIR/env" <<ENV
TOOLS=$TOOLS
ETCD_PORT=$ETCD_PORT
ETCD_PEER_PORT=$ETCD_PEER_PORT
APISERVER_PORT=$APISERVER_PORT
KUBECONFIG=$DIR/kubeconfig
KUBECTL=$TOOLS/kubectl
ENV
}

start_etcd() { # etcd on fresh ports; a port lost to a race between probe and bind means a retry
  local attempt pid
  for attempt in 1 2 3 4 5; do
    ETCD_PORT=$(free_port)
    ETCD_PEER_PORT=$(free_port)
    APISERVER_PORT=$(free_port)
    [[ $ETCD_PORT != "$ETCD_PEER_PORT" && $ETCD_PORT != "$APISERVER_PORT" &&
      $ETCD_PEER_PORT != "$APISERVER_PORT" ]] || continue
    write_env
    rm -rf "$DIR/etcd"
    mkdir -p "$DIR/etcd"
    "$TOOLS/etcd" --data-dir "$DIR/etcd" --name ppu-test \
      --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
      --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
      --initial-cluster "ppu-test=http://127.0.0.1:$ETCD_PEER_PORT" \
      --unsafe-no-fsync >"$DIR/etcd.log" 2>&1 &
    pid=$!
    echo "$pid" >"$DIR/etcd.pid"
    for _ in $(seq 1 300); do
      curl -sf "http://127.0.0.1:$ETCD_PORT/health" >/dev/null 2>&1 && return 0
      alive "$pid" || break
      sleep 0.1
    done
    echo "kube-test-env: etcd attempt $attempt failed (ports $ETCD_PORT/$ETCD_PEER_PORT); last log lines:" >&2
    tail -5 "$DIR/etcd.log" >&2
    kill -9 "$pid" 2>/dev/null || true
  done
  echo "kube-test-env: etcd did not become healthy in 5 attempts; see $DIR/etcd.log" >&2
  exit 1
}

start_apiserver() {
  # shellcheck source=/dev/null # written by write_env
  source "$DIR/env"
  "$TOOLS/kube-apiserver" \
    --etcd-servers="http://127.0.0.1:$ETCD_PORT" \
    --bind-address=127.0.0.1 --secure-port="$APISERVER_PORT" \
    --cert-dir="$DIR/certs" \
    --client-ca-file="$DIR/pki/ca.crt" \
    --service-account-key-file="$DIR/pki/sa.pub" \
    --service-account-signing-key-file="$DIR/pki/sa.key" \
    --service-account-issuer=https://kubernetes.default.svc \
    --authorization-mode=RBAC \
    --service-cluster-ip-range=10.96.0.0/16 \
    --allow-privileged=true \
    --disable-admission-plugins=ServiceAccount \
    --advertise-address=127.0.0.1 \
    --v=1 >>"$DIR/kube-apiserver.log" 2>&1 &
  echo $! >"$DIR/kube-apiserver.pid"
  # The serving certificate is generated on first start; wait for it before curl can verify.
  for _ in $(seq 1 150); do
    [[ -s "$DIR/certs/apiserver.crt" ]] && break
    sleep 0.2
  done
  wait_ready "https://127.0.0.1:$APISERVER_PORT/readyz" kube-apiserver "$DIR/kube-apiserver.pid"
}

alive() { # a killed child of an exited shell can linger as a zombie: that counts as gone
  [[ -r "/proc/$1/stat" ]] && [[ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" != Z ]]
}

kill_pidfile() {
  local f="$DIR/$1.pid"
  [[ -f "$f" ]] || return 0
  local pid
  pid="$(cat "$f")"
  kill ${KILL_SIGNAL:+"$KILL_SIGNAL"} "$pid" 2>/dev/null || true
  for _ in $(seq 1 100); do
    alive "$pid" || break
    sleep 0.1
  done
  kill -9 "$pid" 2>/dev/null || true
  rm -f "$f"
}

case "$cmd" in
  start)
    TOOLS="$(tools)"
    mkdir -p "$DIR/pki" "$DIR/certs" # start_etcd makes a fresh $DIR/etcd per attempt
    echo "TOOLS=$TOOLS" >"$DIR/env"
    # Client CA + admin certificate (system:masters bypasses RBAC) + service-account key pair.
    (
      cd "$DIR/pki"
      openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 2 -subj "/CN=ppu-test-ca" 2>/dev/null
      openssl req -newkey rsa:2048 -nodes -keyout admin.key -out admin.csr -subj "/O=system:masters/CN=ppu-admin" 2>/dev/null
      openssl x509 -req -in admin.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out admin.crt -days 2 2>/dev/null
      openssl genrsa -out sa.key 2048 2>/dev/null
      openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
    )
    start_etcd
    for attempt in 1 2 3 4 5; do # the apiserver's port can be lost the same way as etcd's
      : >"$DIR/kube-apiserver.log"
      start_apiserver && break
      grep -q "address already in use" "$DIR/kube-apiserver.log" && ((attempt < 5)) || exit 1
      APISERVER_PORT=$(free_port)
      write_env
    done
    "$TOOLS/kubectl" config --kubeconfig="$DIR/kubeconfig" set-cluster test \
      --server="https://127.0.0.1:$APISERVER_PORT" --certificate-authority="$DIR/certs/apiserver.crt" --embed-certs >/dev/null
    "$TOOLS/kubectl" config --kubeconfig="$DIR/kubeconfig" set-credentials admin \
      --client-certificate="$DIR/pki/admin.crt" --client-key="$DIR/pki/admin.key" --embed-certs >/dev/null
    "$TOOLS/kubectl" config --kubeconfig="$DIR/kubeconfig" set-context test --cluster=test --user=admin --namespace=default >/dev/null
    "$TOOLS/kubectl" config --kubeconfig="$DIR/kubeconfig" use-context test >/dev/null
    for _ in $(seq 1 100); do
      "$TOOLS/kubectl" --kubeconfig="$DIR/kubeconfig" get namespace default >/dev/null 2>&1 && break
      sleep 0.2
    done
    "$TOOLS/kubectl" --kubeconfig="$DIR/kubeconfig" apply -f "$ROOT/manifests/crd/ppu.dev_ppujobs.yaml" >/dev/null
    # `kubectl wait` itself can fail (not only time out) while the CRD has no status yet, so it is
    # retried until the CRD is Established or 60 s have passed.
    established=0
    for _ in $(seq 1 30); do
      if "$TOOLS/kubectl" --kubeconfig="$DIR/kubeconfig" wait --for=condition=Established --timeout=2s \
        crd/ppujobs.ppu.dev >/dev/null 2>&1; then
        established=1
        break
      fi
    done
    if ((!established)); then
      echo "kube-test-env: crd/ppujobs.ppu.dev not Established after 60 s" >&2
      "$TOOLS/kubectl" --kubeconfig="$DIR/kubeconfig" get crd ppujobs.ppu.dev -o yaml >&2 || true
      exit 1
    fi
    echo "$DIR/kubeconfig"
    ;;
  restart-apiserver)
    kill_pidfile kube-apiserver
    start_apiserver
    ;;
  kill-apiserver)
    kill_pidfile kube-apiserver
    ;;
  start-apiserver)
    start_apiserver
    ;;
  stop)
    KILL_SIGNAL=-9 kill_pidfile kube-apiserver
    KILL_SIGNAL=-9 kill_pidfile etcd
    [[ -f "$DIR/env" ]] && rm -rf "$DIR"
    ;;
  *)
    echo "kube-test-env: unknown command '$cmd'" >&2
    exit 2
    ;;
esac
