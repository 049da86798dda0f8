# shellcheck shell=bash
# scripts/cluster.sh, part: the isolation every daemon runs in. make_holder creates the cluster's
# cgroup subtree in every v1 hierarchy (recording the parents it had to create, for `down`), the
# host paths that become mount points, and the holder: a process in a new network namespace and
# a private mount namespace that bind-mounts those paths from $DIR/mnt, puts the node, API
# Service and DNS addresses on `lo`, and sleeps, keeping both namespaces alive until `down`.
# Sourced by cluster.sh; defines functions only.

make_holder() {
  local cg
  cg="$(cg_root)"
  echo "$cg" >"$DIR/cgroup"
  # The path is the caller's memory cgroup + ppu-cluster.<hash>, so the cluster's memory is
  # accounted where the caller's is; in the other hierarchies the missing parents are created
  # (and recorded, for `down` to remove).
  : >"$DIR/created-cgroups"
  local h d rel
  for h in $(ppu_cgroup_roots); do
    rel=""
    for d in $(tr '/' ' ' <<<"$cg/system"); do
      local parent="$h$rel"
      rel="$rel/$d"
      if [[ ! -d "$h$rel" ]]; then
        mkdir "$h$rel"
        [[ "$rel" == "$cg"* ]] || echo "$h$rel" >>"$DIR/created-cgroups"
        if [[ -f "$h$rel/cpuset.cpus" ]]; then # cpuset children start empty: inherit the parent's
          cat "$parent/cpuset.cpus" >"$h$rel/cpuset.cpus"
          cat "$parent/cpuset.mems" >"$h$rel/cpuset.mems"
        fi
      fi
    done
  done
  # Host paths that must exist as mount points inside the private mount namespace; the ones
  # created here are removed by `down`.
  : >"$DIR/created-paths"
  local mp
  for mp in /run/containerd /run/netns /var/lib/cni /var/log/pods /var/log/containers; do
    if [[ ! -e "$mp" ]]; then
      mkdir -p "$mp"
      echo "$mp" >>"$DIR/created-paths"
    fi
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
    for h in $(ppu_cgroup_roots); do echo "$BASHPID" >"$h$cg/system/cgroup.procs"; done
    exec unshare --net --mount --propagation private setsid sh "$DIR/run/holder.sh"
  ) >>"$DIR/log/holder.log" 2>&1 </dev/null &
  local i
  for ((i = 0; i < 50; i++)); do
    [[ -s "$DIR/holder.pid" ]] && break
    sleep 0.1
  done
  [[ -s "$DIR/holder.pid" ]] || {
    cat "$DIR/log/holder.log" >&2
    die "namespace holder did not start"
  }
  readlink "/proc/$(holder)/ns/net" >"$DIR/netns-id"
}

# make_node_holder K: node K's namespaces (node_vars K set NNAME, NIP, NCIDR, NDIR, NCG): a
# network namespace, and a mount namespace copied from node 1's in which the paths a node keeps
# for itself (/run/containerd, /run/netns, /var/lib/cni, /var/log/pods, /var/log/containers) are
# bind mounts of $NDIR/mnt (two kubelets sharing /var/log/pods would delete each other's logs),
# kept by a holder process in the cgroup $(cg_root)/node-K/system. The nodes are linked by a veth
# pair (ppu-nK in node 1's namespace, ppu-n1 in node K's), with routes: node 1 reaches $NIP and
# $NCIDR through it; node K reaches node 1, the other nodes and their pods, and the API and DNS
# Service addresses (on node 1's lo) through node 1. Everything node K has is under $NDIR and
# that cgroup, so `down` removes it with the rest, and `stop-node` can take it away alone.
make_node_holder() {
  local k="$1" cg mp
  cg="$(cg_root)"
  cg_mkdir "$cg$NCG/system"
  mkdir -p "$NDIR/run"
  for mp in /run/containerd /run/netns /var/lib/cni /var/log/pods /var/log/containers; do mkdir -p "$NDIR/mnt$mp"; done
  cat >"$NDIR/run/holder.sh" <<EOS
set -e
for mp in /run/containerd /run/netns /var/lib/cni /var/log/pods /var/log/containers; do
  mount --bind "$NDIR/mnt\$mp" "\$mp"
done
mount --make-rshared /
ip link set lo up
ip addr add $NIP/32 dev lo
sysctl -qw net.ipv4.ip_forward=1
echo \$\$ >"$NDIR/holder.pid"
exec sleep infinity
EOS
  local h1
  h1="$(cat "$DIR/holder.pid")"
  (
    for h in $(ppu_cgroup_roots); do echo "$BASHPID" >"$h$cg$NCG/system/cgroup.procs"; done
    exec nsenter -t "$h1" -m -- unshare --net --mount --propagation private setsid sh "$NDIR/run/holder.sh"
  ) >>"$DIR/log/holder$NSFX.log" 2>&1 </dev/null &
  local i
  for ((i = 0; i < 50; i++)); do
    [[ -s "$NDIR/holder.pid" ]] && break
    sleep 0.1
  done
  [[ -s "$NDIR/holder.pid" ]] || {
    cat "$DIR/log/holder$NSFX.log" >&2
    die "namespace holder of $NNAME did not start"
  }
  local hk
  hk="$(cat "$NDIR/holder.pid")"
  nsenter -t "$h1" -n -- ip link add "ppu-n$k" type veth peer name ppu-n1 netns "$hk"
  nsenter -t "$h1" -n -- ip link set "ppu-n$k" up
  nsenter -t "$h1" -n -- ip route add "$NIP/32" dev "ppu-n$k" src "$NODE_IP"
  nsenter -t "$h1" -n -- ip route add "$NCIDR" via "$NIP" dev "ppu-n$k" onlink src "$NODE_IP"
  nsenter -t "$hk" -n -- ip link set ppu-n1 up
  nsenter -t "$hk" -n -- ip route add "$NODE_IP/32" dev ppu-n1 src "$NIP"
  local net
  for net in "$POD_NET" "$SERVICE_CIDR" 10.200.0.0/24; do
    nsenter -t "$hk" -n -- ip route add "$net" via "$NODE_IP" dev ppu-n1 onlink src "$NIP"
  done
}
