# shellcheck shell=bash
# Helpers shared by the scripts that build or install a pinned tool once into a cache dir
# (go-toolchain.sh, build-helm.sh, build-kube-tools.sh, build-cluster-tools.sh, build-shfmt.sh,
# build-base-image.sh, install-checkov.sh, install-ruff.sh, install-hf-venv.sh) and by
# cluster.sh deps, and the facts about this host that the image and cluster scripts share (which
# rlimits root may give a container, where the cgroup v1 hierarchies are mounted).
# install-deps.sh stays self-contained (the Dockerfile copies it alone). Not the
# packaging tests' helpers: those are tests/packaging/lib.sh.
#
# Contract: source it after `set -euo pipefail`; sourcing defines the two variables and the
# functions below and does nothing else (no output, no shell option changed). Every function
# writes its messages to stderr, so a caller's stdout stays what it prints itself (callers of
# these scripts read their last line). Failures exit the script, not just the function.
#
#   PPU_REPO         the repository's root, absolute
#   PPU_TOOLS_CACHE  cache root of the pinned tools: $PPU_TOOLS_DIR, else $HOME/.cache/ppu-tools
#
#   ppu_die NAME MESSAGE...
#   ppu_tool_flags NAME HELP PRINT_FLAG [--FLAG=VAR]... -- ARGS...
#   ppu_lock FILE
#   ppu_go NAME
#   ppu_go_install DEST PACKAGE@VERSION [GO_INSTALL_FLAGS]...
#   ppu_modver DIR MODULE
#   ppu_kube_ldflags VERSION
#   ppu_venv_install NAME DIR PYTHON [VENV_FLAGS]... -- PIP_INSTALL_ARGS...
#   ppu_apt_install NAME PACKAGE...
#   ppu_rlimit FLAG CAP
#   ppu_cgroup_roots [CONTROLLER]

PPU_REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck disable=SC2034 # used by the scripts that source this file
PPU_TOOLS_CACHE="${PPU_TOOLS_DIR:-${HOME:-/root}/.cache/ppu-tools}"

# ppu_die NAME MESSAGE...: prints "NAME: MESSAGE" on stderr and exits 1.
ppu_die() {
  local name="$1"
  shift
  echo "$name: $*" >&2
  exit 1
}

# ppu_tool_flags NAME HELP PRINT_FLAG [--FLAG=VAR]... -- ARGS...
# Parses the flags every tool script takes. Sets PRINT_ONLY=1 for PRINT_FLAG (--print-path,
# --print-dir, ...) and FORCE=1 for --force, both 0 otherwise; each --FLAG=VAR named before the
# `--` sets VAR=1 when ARGS has --FLAG (the caller sets VAR's default first). -h/--help prints
# lines HELP (a sed range, e.g. 2,11: the usage in the calling script's header) and exits 0; any
# other argument prints "NAME: unknown flag 'ARG' (try --help)" and exits 2.
# shellcheck disable=SC2034 # PRINT_ONLY and FORCE are its results, read by the caller
ppu_tool_flags() {
  local name="$1" help="$2" print_flag="$3" arg spec
  shift 3
  local extra=()
  while (($#)) && [[ "$1" != -- ]]; do
    extra+=("$1")
    shift
  done
  (($#)) && shift
  PRINT_ONLY=0
  FORCE=0
  for arg in "$@"; do
    case "$arg" in
      "$print_flag")
        PRINT_ONLY=1
        continue
        ;;
      --force)
        FORCE=1
        continue
        ;;
      -h | --help)
        sed -n "${help}p" "$0"
        exit 0
        ;;
    esac
    for spec in "${extra[@]}"; do
      if [[ "$arg" == "${spec%%=*}" ]]; then
        printf -v "${spec#*=}" 1
        continue 2
      fi
    done
    echo "$name: unknown flag '$arg' (try --help)" >&2
    exit 2
  done
}

# ppu_lock FILE: creates FILE's directory, opens FILE on descriptor 9 and waits for an exclusive
# lock on it, held until the script exits. Serialises concurrent callers (parallel ctest
# fixtures, two engineers on one machine) so that a tool is built or installed once.
ppu_lock() {
  mkdir -p "$(dirname "$1")"
  exec 9>"$1"
  flock 9
}

# ppu_go NAME: sets GO to a Go toolchain new enough for the pinned tools (scripts/go-toolchain.sh,
# which tries $GO first and installs the pinned release if the machine has none); exits naming
# NAME when there is none.
ppu_go() {
  GO="$("$PPU_REPO/scripts/go-toolchain.sh" | tail -1)"
  [[ -x "$GO" ]] || ppu_die "$1" "no Go toolchain (set GO=/path/to/go)"
}

# ppu_go_install DEST PACKAGE@VERSION [GO_INSTALL_FLAGS]...: builds one Go command from its
# module at VERSION with $GO (ppu_go) at low priority and moves the binary to DEST. Outside any
# module of the caller (GOFLAGS=-mod=mod ignores a go.work or vendor dir), with the toolchain it
# is given (GOTOOLCHAIN=local) and without cgo (a static binary); -trimpath.
ppu_go_install() {
  local dest="$1" pkg="$2" tmp
  shift 2
  tmp="$(mktemp -d "$(dirname "$dest")/gobin.XXXXXX")"
  GOBIN="$tmp" GOFLAGS=-mod=mod GOTOOLCHAIN=local CGO_ENABLED=0 \
    nice "$GO" install -trimpath "$@" "$pkg"
  mv "$tmp/$(basename "${pkg%@*}")" "$dest"
  rm -rf "$tmp"
}

# ppu_modver DIR MODULE: prints the version of MODULE that DIR/go.mod requires (a one-line
# `require MODULE vX` or a line of a require block); nothing when it requires none.
ppu_modver() {
  awk -v m="$2" '($1=="require" && $2==m) {print $3} ($1==m) {print $2}' "$1/go.mod" | head -1
}

# ppu_kube_ldflags VERSION: prints the -ldflags value for a k8s.io/kubernetes command at VERSION
# (vMAJOR.MINOR.PATCH): stripped, and stamped with the version that `kubectl version` and the
# API server report (Go module builds have no git tree to read it from).
ppu_kube_ldflags() {
  local version="$1" major minor
  major="${version#v}"
  major="${major%%.*}"
  minor="${version#v*.}"
  minor="${minor%%.*}"
  echo "-s -w -X k8s.io/component-base/version.gitVersion=$version \
 -X k8s.io/component-base/version.gitMajor=$major -X k8s.io/component-base/version.gitMinor=$minor \
 -X k8s.io/client-go/pkg/version.gitVersion=$version \
 -X k8s.io/client-go/pkg/version.gitMajor=$major -X k8s.io/client-go/pkg/version.gitMinor=$minor"
}

# ppu_venv_install NAME DIR PYTHON [VENV_FLAGS]... -- PIP_INSTALL_ARGS...
# (Re)creates the virtual environment DIR with `PYTHON -m venv VENV_FLAGS`, runs its
# `pip install PIP_INSTALL_ARGS` (quiet, no cache, no pip version check) and marks it complete
# with DIR/.installed: a venv cannot be moved once made, so it is built in place and only the
# mark says that pip finished. Exits naming NAME when the venv cannot be made (Debian's python3
# needs python3-venv, which install-deps.sh --test installs).
ppu_venv_install() {
  local name="$1" dir="$2" python="$3" start
  shift 3
  local venv_flags=()
  while (($#)) && [[ "$1" != -- ]]; do
    venv_flags+=("$1")
    shift
  done
  (($#)) && shift
  start=$(date +%s)
  echo "$name: installing into $dir" >&2
  rm -rf "$dir"
  "$python" -m venv "${venv_flags[@]}" "$dir" \
    || ppu_die "$name" "'$python -m venv' failed (Debian: apt-get install python3-venv)"
  PIP_DISABLE_PIP_VERSION_CHECK=1 "$dir/bin/pip" install --quiet --no-cache-dir "$@"
  touch "$dir/.installed"
  echo "$name: installed in $(($(date +%s) - start)) s" >&2
}

# ppu_apt_install NAME PACKAGE...: installs those of the Debian packages that are not installed
# yet (apt-get update first; through sudo when not root), apt's output on stderr; nothing when
# all are there.
ppu_apt_install() {
  local name="$1" p sudo=()
  shift
  local missing=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  ((${#missing[@]})) || return 0
  [[ $(id -u) -eq 0 ]] || sudo=(sudo)
  echo "$name: installing ${missing[*]}" >&2
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
}

# ppu_rlimit FLAG CAP: a value for `ulimit FLAG` (-n, -u) that root can certainly give a container
# or daemon: this shell's hard limit, at most CAP (some VMs forbid raising it, even to root).
ppu_rlimit() {
  local h
  h="$(ulimit -H "$1")"
  [[ "$h" == unlimited ]] && h="$2"
  ((h > $2)) && h="$2"
  echo "$h"
}

# ppu_cgroup_roots [CONTROLLER]: where the cgroup v1 hierarchies are mounted, one per line; with
# CONTROLLER, only the one that has it (cpu, memory, ...).
ppu_cgroup_roots() {
  awk -v c="${1:-}" '$3 == "cgroup" && (c == "" || $4 ~ "(^|,)" c "(,|$)") {print $2}' /proc/mounts
}
