# shellcheck shell=bash
# scripts/cluster.sh, part: helpers every other part uses. Logging; the cluster's cgroup subtree
# (one directory per cgroup v1 hierarchy, found again from $DIR/cgroup after `up`); entering the
# namespaces the holder process keeps (scripts/cluster/namespace.sh); starting a daemon inside
# them, in the cgroup, logged to $DIR/log/NAME.log with its pid in $DIR/run/NAME.pid; polling
# until a daemon answers; kubectl as the cluster admin inside the namespace.
# Which node: node 1 (the control plane's) by default; with NSDIR=$DIR/node-K and
# CG_SUB=/node-K set, holder, in_ns, in_netns and spawn act on node K's namespaces and cgroup.
# Sourced by cluster.sh after it set DIR, SYS_PATH and the addresses, and after scripts/lib.sh
# (ppu_cgroup_roots); defines functions only.

log() { echo "cluster: $*" >&2; }
die() {
  echo "cluster: $*" >&2
  exit 1
}

cg_root() { # the cluster's cgroup path, relative to each hierarchy root
  if [[ -f "$DIR/cgroup" ]]; then
    cat "$DIR/cgroup"
    return
  fi
  local base
  base="$(awk -F: '$2=="memory" {print $3}' /proc/self/cgroup)"
  [[ "$base" == / ]] && base=""
  echo "$base/ppu-cluster.$(echo -n "$DIR" | md5sum | cut -c1-8)"
}
cg_pids() { # every process in the cluster's cgroup subtree (any hierarchy)
  local cg="$1" h
  for h in $(ppu_cgroup_roots); do
    [[ -d "$h$cg" ]] && find "$h$cg" -name cgroup.procs -exec cat {} + 2>/dev/null
  done | sort -un
}
holder() { cat "${NSDIR:-$DIR}/holder.pid" 2>/dev/null; }
in_ns() { # run a command in the cluster's network + mount namespaces, clean environment
  nsenter -t "$(holder)" -n -m -- env -i PATH="$SYS_PATH" HOME=/root "$@"
}
in_netns() { nsenter -t "$(holder)" -n -- "$@"; }
spawn() { # spawn NAME [--host] CMD...: a daemon in the cluster cgroup (and namespaces), logged
  local name="$1"
  shift
  local where=ns
  if [[ "$1" == --host ]]; then
    where=host
    shift
  fi
  local cg
  cg="$(cg_root)${CG_SUB:-}/system"
  (
    for h in $(ppu_cgroup_roots); do echo "$BASHPID" >"$h$cg/cgroup.procs"; done
    if [[ $where == ns ]]; then
      exec nsenter -t "$(holder)" -n -m -- env -i PATH="$SYS_PATH" HOME=/root setsid "$@"
    else
      exec env -i PATH="$SYS_PATH" HOME=/root setsid "$@"
    fi
  ) >>"$DIR/log/$name.log" 2>&1 </dev/null &
  echo $! >"$DIR/run/$name.pid"
}
wait_for() { # wait_for WHAT SECONDS CMD...: poll CMD until it succeeds
  local what="$1" secs="$2"
  shift 2
  local i
  for ((i = 0; i < secs * 5; i++)); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    local name="${what%% *}"
    if [[ -f "$DIR/run/$name.pid" ]] && ! kill -0 "$(cat "$DIR/run/$name.pid")" 2>/dev/null; then
      log "$name exited; last lines of $DIR/log/$name.log:"
      tail -25 "$DIR/log/$name.log" >&2
      return 1
    fi
    sleep 0.2
  done
  log "$what not ready after ${secs}s (logs in $DIR/log/)"
  return 1
}
kubectl_ns() { NSDIR="" in_ns "$TOOLS/kubectl" --kubeconfig "$DIR/pki/admin.kubeconfig" "$@"; } # from node 1
node_ready() {                                                                                  # node_ready [NAME]: node NAME (default $NODE) is Ready
  [[ "$(kubectl_ns get node "${1:-$NODE}" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" == True ]]
}
cg_mkdir() { # cg_mkdir REL: the cgroup REL in every hierarchy, cpusets inherited level by level
  local h d rel parent
  for h in $(ppu_cgroup_roots); do
    rel=""
    for d in $(tr '/' ' ' <<<"$1"); do
      parent="$h$rel"
      rel="$rel/$d"
      [[ -d "$h$rel" ]] && continue
      mkdir "$h$rel"
      if [[ -f "$h$rel/cpuset.cpus" ]]; then
        cat "$parent/cpuset.cpus" >"$h$rel/cpuset.cpus"
        cat "$parent/cpuset.mems" >"$h$rel/cpuset.mems"
      fi
    done
  done
}
