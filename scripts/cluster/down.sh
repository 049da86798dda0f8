# shellcheck shell=bash
# scripts/cluster.sh, part: cmd_down, which stops everything `up` started and removes what it
# made: Kueue, if `kueue-up` started it (kueue_down, scripts/cluster/kueue.sh: its process, its
# mount and the host directories it created); processes started with `cluster.sh netns` (found
# by their network namespace while the holder still proves it is the cluster's), then the
# kubelet, then every process in the cgroup subtree (TERM, then KILL); the cgroups and the
# parents `up` created; any mount left; the host paths `up` created; and $DIR.
# Sourced by cluster.sh; defines functions only.

cmd_down() {
  [[ -d "$DIR" ]] || {
    log "nothing to stop ($DIR does not exist)"
    return 0
  }
  kueue_down
  local cg
  cg="$(cg_root)"
  local sig round pids=()
  # Processes started with `netns` (e.g. a Prometheus) are outside the cgroup but would keep the
  # network namespace, and the bridge in it, alive: stop them while the holder proves the
  # namespace is still ours (a freed namespace's inode number can be reused by another one).
  local id pid p
  id="$(cat "$DIR/netns-id" 2>/dev/null || true)"
  pid="$(holder || true)"
  if [[ -n "$id" && -n "$pid" && "$(readlink "/proc/$pid/ns/net" 2>/dev/null)" == "$id" ]]; then
    for round in $(seq 1 20); do
      pids=()
      for p in /proc/[0-9]*; do
        [[ "$(readlink "$p/ns/net" 2>/dev/null)" == "$id" ]] || continue
        grep -qF ":$cg" "$p/cgroup" 2>/dev/null || pids+=("${p#/proc/}")
      done
      ((${#pids[@]})) || break
      if ((round <= 10)); then sig=TERM; else sig=KILL; fi
      kill -"$sig" "${pids[@]}" 2>/dev/null || true
      sleep 0.5
    done
  fi
  # kubelets first, so they do not restart containers while they are being killed.
  for p in "$DIR"/run/kubelet*.pid; do
    if [[ -f "$p" ]]; then kill "$(cat "$p")" 2>/dev/null || true; fi
  done
  for round in $(seq 1 60); do
    mapfile -t pids < <(cg_pids "$cg")
    ((${#pids[@]})) || break
    if ((round <= 10)); then sig=TERM; else sig=KILL; fi
    kill -"$sig" "${pids[@]}" 2>/dev/null || true
    sleep 0.5
  done
  [[ -z "$(cg_pids "$cg")" ]] || die "processes survive in cgroup $cg: $(cg_pids "$cg" | tr '\n' ' ')"
  local h
  for h in $(ppu_cgroup_roots); do
    if [[ -d "$h$cg" ]]; then find "$h$cg" -depth -type d -exec rmdir {} + 2>/dev/null || true; fi
    if [[ -d "$h$cg" ]]; then die "cannot remove cgroup $h$cg"; fi
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
