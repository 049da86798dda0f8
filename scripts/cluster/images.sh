# shellcheck shell=bash
# scripts/cluster.sh, part: container images without a registry. The sandbox (pause) image is
# built with podman from tests/cluster/pause.Containerfile and the pause binary
# scripts/build-cluster-tools.sh compiled, and imported into each node's containerd; cmd_load_image
# copies a podman image into every running node's containerd (`cluster.sh load-image NAME
# [--as NAME2]...`).
# Sourced by cluster.sh; defines functions only.

# The pause image, saved for containerd's import in start_containerd (scripts/cluster/node.sh).
build_pause_image() {
  log "pause image"
  podman build -q --pull=never -t "$PAUSE_IMAGE" -f "$ROOT/tests/cluster/pause.Containerfile" "$TOOLS" >/dev/null
  podman save --format docker-archive -o "$DIR/images/pause.tar" "$PAUSE_IMAGE" 2>/dev/null
}

cmd_load_image() {
  local image="${1:?load-image needs an image name}" aliases=() a
  shift
  while [[ $# -gt 0 ]]; do
    [[ $1 == --as && $# -ge 2 ]] || die "load-image: expected '--as NAME', got '$*'"
    aliases+=("$2")
    shift 2
  done
  [[ -f "$DIR/holder.pid" ]] || die "no cluster (scripts/cluster.sh up)"
  podman image exists "$image" || die "podman has no image '$image' (scripts/build-image.sh)"
  local tar
  tar="$DIR/images/$(echo "$image" | tr '/:' '__').tar"
  rm -f "$tar"
  podman save --format docker-archive -o "$tar" "$image" 2>/dev/null
  # podman names a local image localhost/NAME; containerd keeps that name.
  local ref="$image"
  [[ $ref == */* ]] || ref="localhost/$ref"
  [[ $ref == *:* ]] || ref="$ref:latest"
  local ndir
  while read -r _ _ _ ndir; do
    [[ -e "$ndir/stopped" ]] && continue
    in_ns ctr -a "$ndir/run/containerd.sock" -n k8s.io images import "$tar" >&2
    for a in "${aliases[@]}"; do
      in_ns ctr -a "$ndir/run/containerd.sock" -n k8s.io images tag --force "$ref" "$a" >&2
    done
  done <"$DIR/nodes"
  rm -f "$tar"
}
