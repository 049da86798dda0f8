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
  for h in $(cg_hierarchies); do
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
    for h in $(cg_hierarchies); do echo "$BASHPID" >"$h$cg/system/cgroup.procs"; done
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
