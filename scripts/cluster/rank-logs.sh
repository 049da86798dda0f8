# shellcheck shell=bash
# rank-logs.sh: every rank pod's log kept on this machine while a cluster e2e runs (sourced by
# the bash that tests/cluster/e2e/rank_logs.py starts), so that a failure shows what each rank saw
# of its group even when its pod was replaced, its container restarted, or the whole gang
# restarted before the failure was noticed: `kubectl logs` reads only pods that still exist, and a
# container's last run only.
#   rank_logs_start DIR NS  every 3 s, copy the log of each pod of namespace NS labelled
#                           ppu.dev/job into DIR/<pod>.<uid>.log (a finished pod's once), and
#                           its previous container's, once it restarted, into
#                           DIR/<pod>.<uid>.previous.log (copies outlive their pods)
#   rank_logs_show DIR      print, per copy, its lines about faults, fencing, re-formations and
#                           exits (the last 25)
#   rank_logs_stop          end the copying (on SIGTERM to that bash; harmless when not started)
# Needs a kubectl command (function or binary) that reaches the cluster.
RANK_LOGS_PID=""

rank_logs_start() {
  local dir="$1" ns="$2"
  mkdir -p "$dir"
  (
    local pod uid phase restarts
    while :; do
      while read -r pod uid phase restarts; do
        [[ -n "$uid" ]] || continue
        # A finished pod's log no longer changes: copied once (kubectl costs CPU the job needs).
        [[ "$phase" =~ ^(Succeeded|Failed)$ && -f "$dir/$pod.$uid.log" ]] && continue
        kubectl -n "$ns" logs "$pod" >"$dir/.$pod.tmp" 2>/dev/null && mv "$dir/.$pod.tmp" "$dir/$pod.$uid.log"
        [[ "${restarts:-0}" =~ ^[1-9] ]] || continue
        kubectl -n "$ns" logs --previous "$pod" >"$dir/.$pod.tmp" 2>/dev/null \
          && mv "$dir/.$pod.tmp" "$dir/$pod.$uid.previous.log"
      done < <(kubectl -n "$ns" get pods -l ppu.dev/job -o jsonpath='{range .items[*]}{.metadata.name} {.metadata.uid} {.status.phase} {.status.containerStatuses[0].restartCount}{"\n"}{end}' 2>/dev/null || true)
      sleep 3
    done
  ) &
  RANK_LOGS_PID=$!
}

rank_logs_show() {
  local copy
  for copy in "$1"/*.log; do
    [[ -f "$copy" ]] || continue
    echo "--- ${copy##*/}: its group, as it logged it" >&2
    grep -E 'lost|fenc|silent|group|rejoin|re-form|generation|store|out of|exit|abandon|PPU_TEST' "$copy" | tail -25 >&2 || true
  done
}

rank_logs_stop() {
  [[ -n "$RANK_LOGS_PID" ]] || return 0
  kill "$RANK_LOGS_PID" 2>/dev/null || true
  wait "$RANK_LOGS_PID" 2>/dev/null || true
  RANK_LOGS_PID=""
}
