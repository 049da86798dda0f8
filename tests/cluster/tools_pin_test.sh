#!/usr/bin/env bash
# The cluster's binaries are pinned and consistent, without building them:
# - tests/cluster/tools/go.mod pins the same k8s.io/kubernetes as tests/operator/kube-tools/go.mod
#   (kubelet, scheduler and controller-manager match the kube-apiserver the operator tests use),
#   and replaces every k8s.io staging module with the matching v0.<minor>.<patch>;
# - tools.go names the three commands scripts/build-cluster-tools.sh builds;
# - CoreDNS is an exact release, and main.go compiles in every plugin the Corefile that
#   scripts/cluster.sh writes (scripts/cluster/config.sh) uses;
# - Kueue (scripts/cluster.sh kueue-up) is an exact release, tools.go names the manager that
#   build-cluster-tools.sh --kueue builds, and the Go it asks scripts/go-toolchain.sh for is at
#   least tests/cluster/kueue/go.mod's `go` line;
# - kube-network-policies (NetworkPolicy enforcement) is an exact release, run through its upstream
#   controller package, built by build-cluster-tools.sh and fed by netpol.sh's NFQUEUE rules;
# - the pause program (tests/cluster/pause.c) builds statically, sleeps, and exits 0 on SIGTERM.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
fail() {
  echo "FAIL: $*" >&2
  exit 1
}
ok() { echo "ok: $*"; }
ver() { awk -v m="$2" '($1=="require" && $2==m) {print $3} ($1==m) {print $2}' "$1" | head -1; }
k8s="$(ver "$ROOT/tests/cluster/tools/go.mod" k8s.io/kubernetes)"
api="$(ver "$ROOT/tests/operator/kube-tools/go.mod" k8s.io/kubernetes)"
[[ -n "$k8s" && "$k8s" == "$api" ]] || fail "cluster tools pin k8s.io/kubernetes '$k8s', operator test tools '$api'"
ok "kubelet/scheduler/controller-manager and kube-apiserver share k8s.io/kubernetes $k8s"
staging="v0.${k8s#v1.}"
bad="$(awk '$1 ~ /^k8s\.io\// && $2=="=>" && $4 != "'"$staging"'" {print $1, $4}' "$ROOT/tests/cluster/tools/go.mod")"
[[ -z "$bad" ]] || fail "staging replaces not at $staging: $bad"
n="$(grep -c "=> k8s.io/.* $staging\$" "$ROOT/tests/cluster/tools/go.mod")"
((n >= 20)) || fail "only $n staging modules replaced at $staging"
ok "$n staging modules replaced at $staging"
for c in kubelet kube-scheduler kube-controller-manager; do
  grep -q "\"k8s.io/kubernetes/cmd/$c\"" "$ROOT/tests/cluster/tools/tools.go" || fail "tools.go does not import cmd/$c"
  grep -q "kubelet kube-scheduler kube-controller-manager" "$ROOT/scripts/build-cluster-tools.sh" || fail "build script does not build $c"
done
ok "tools.go and build-cluster-tools.sh name kubelet, kube-scheduler, kube-controller-manager"
dns="$(ver "$ROOT/tests/cluster/coredns/go.mod" github.com/coredns/coredns)"
[[ "$dns" =~ ^v[0-9]+\.[0-9]+\.[0-9]+$ ]] || fail "CoreDNS pin '$dns' is not an exact release"
corefile="$(sed -n '/cat >"$c\/Corefile" <<EOF/,/^EOF/p' "$ROOT/scripts/cluster/config.sh")"
[[ -n "$corefile" ]] || fail "no Corefile heredoc in scripts/cluster/config.sh"
while read -r plugin; do
  pkg="$plugin"
  [[ "$plugin" == prometheus ]] && pkg=metrics # directive name != package name
  grep -q "\"github.com/coredns/coredns/plugin/$pkg\"" "$ROOT/tests/cluster/coredns/main.go" \
    || fail "the Corefile uses plugin '$plugin', which tests/cluster/coredns/main.go does not compile in"
done < <(grep -oE '^    [a-z]+' <<<"$corefile" | sed 's/^ *//' | sort -u)
ok "CoreDNS $dns with every plugin the Corefile uses"
kueue="$(ver "$ROOT/tests/cluster/kueue/go.mod" sigs.k8s.io/kueue)"
[[ "$kueue" =~ ^v[0-9]+\.[0-9]+\.[0-9]+$ ]] || fail "Kueue pin '$kueue' is not an exact release"
grep -q '"sigs.k8s.io/kueue/cmd/kueue"' "$ROOT/tests/cluster/kueue/tools.go" || fail "kueue/tools.go does not import cmd/kueue"
# shellcheck disable=SC2016 # the build script's line, literally
grep -qF 'build kueue "$KUEUEMOD" sigs.k8s.io/kueue/cmd/kueue' "$ROOT/scripts/build-cluster-tools.sh" \
  || fail "build-cluster-tools.sh does not build sigs.k8s.io/kueue/cmd/kueue"
gomod="$(awk '$1=="go" {print $2}' "$ROOT/tests/cluster/kueue/go.mod")"
# shellcheck disable=SC2016 # the build script's default, literally
gomin="$(sed -n 's/.*PPU_GO_MIN="${PPU_GO_MIN:-\([0-9.]*\)}".*/\1/p' "$ROOT/scripts/build-cluster-tools.sh")"
[[ -n "$gomod" && -n "$gomin" && "$(printf '%s\n%s\n' "$gomod" "$gomin" | sort -V | head -1)" == "$gomod" ]] \
  || fail "build-cluster-tools.sh --kueue asks for Go '$gomin', tests/cluster/kueue/go.mod needs '$gomod'"
ok "Kueue $kueue (cmd/kueue), built with Go >= $gomin (its go.mod: $gomod)"
knp="$(ver "$ROOT/tests/cluster/netpol/go.mod" sigs.k8s.io/kube-network-policies)"
[[ "$knp" =~ ^v[0-9]+\.[0-9]+\.[0-9]+$ ]] || fail "kube-network-policies pin '$knp' is not an exact release"
grep -q '"sigs.k8s.io/kube-network-policies/pkg/networkpolicy"' "$ROOT/tests/cluster/netpol/main.go" \
  || fail "tests/cluster/netpol/main.go does not run the upstream controller (pkg/networkpolicy)"
# shellcheck disable=SC2016 # the build script's line, literally
grep -q 'build kube-network-policies "$NETPOLMOD"' "$ROOT/scripts/build-cluster-tools.sh" \
  || fail "build-cluster-tools.sh does not build kube-network-policies"
# shellcheck disable=SC2016 # netpol.sh's line, literally
grep -q 'NFQUEUE --queue-num "$NETPOL_QUEUE"' "$ROOT/scripts/cluster/netpol.sh" \
  || fail "scripts/cluster/netpol.sh does not divert new connections to the controller's queue"
ok "kube-network-policies $knp (pkg/networkpolicy), fed by the NFQUEUE rules of scripts/cluster/netpol.sh"

W="$(mktemp -d)"
trap 'rm -rf "$W"' EXIT
cc -Os -static -Wall -Werror -o "$W/pause" "$ROOT/tests/cluster/pause.c"
file "$W/pause" 2>/dev/null | grep -q 'statically linked' || ! ldd "$W/pause" >/dev/null 2>&1 || fail "pause is not static"
[[ "$("$W/pause" --version)" == "ppu-pause 1" ]] || fail "pause --version"
"$W/pause" 2>/dev/null &
pid=$!
sleep 0.3
kill -0 "$pid" 2>/dev/null || fail "pause exited by itself"
kill -TERM "$pid"
rc=0
wait "$pid" || rc=$?
[[ $rc == 0 ]] || fail "pause exited $rc on SIGTERM, want 0"
ok "pause: static, sleeps, exits 0 on SIGTERM"
echo "tools_pin_test: all checks passed"
