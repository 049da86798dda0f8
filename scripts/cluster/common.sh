# shellcheck shell=bash
# scripts/cluster.sh, part: helpers every other part uses. Logging; the cluster's cgroup subtree
# (one directory per cgroup v1 hierarchy, found again from $DIR/cgroup after `up`); entering the
# namespaces the holder process keeps (scripts/cluster/namespace.sh); starting a daemon inside
# them, in the cgroup, logged to $DIR/log/NAME.log with its pid in $DIR/run/NAME.pid; polling
# until a daemon answers; kubectl as the cluster admin inside the namespace.
# Sourced by cluster.sh after it set DIR, SYS_PATH and the addresses; defines functions only.

log() { echo "cluster: $*" >&2; }
die() {
  echo "cluster: $*" >&2
  exit 1
}

cg_hierarchies() { # every mounted cgroup v1 hierarchy root
  awk '$3=="cgroup" {print $2}' /proc/mounts
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
  for h in $(cg_hierarchies); do
    [[ -d "$h$cg" ]] && find "$h$cg" -name cgroup.procs -exec cat {} + 2>/dev/null
  done | sort -un
}
holder() { cat "$DIR/holder.pid" 2>/dev/null; }
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
  cg="$(cg_root)/system"
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
kubectl_ns() { in_ns "$TOOLS/kubectl" --kubeconfig "$DIR/pki/admin.kubeconfig" "$@"; }
node_ready() {
  [[ "$(kubectl_ns get node "$NODE" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" == True ]]
}
