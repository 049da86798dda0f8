# shellcheck shell=bash
# Shared helpers of the packaging tests (sourced). Every check prints what it checked and
# aborts the test on the first failure with the reason.
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"

fail() {
  echo "FAIL: $*" >&2
  exit 1
}
pass() { echo "ok: $*"; }

# expect_grep PATTERN FILE WHAT: FILE must contain a line matching the extended regex.
expect_grep() {
  grep -Eq -- "$1" "$2" || fail "$3 (no line matching '$1' in $2)"
  pass "$3"
}
expect_no_grep() {
  ! grep -Eq -- "$1" "$2" || fail "$3 (unexpected line matching '$1' in $2)"
  pass "$3"
}

helm_bin() { "$ROOT/scripts/build-helm.sh" | tail -1; }

# Starts a throw-away kube-apiserver + etcd (the operator's scripts/kube-test-env.sh) under $1,
# stops it on exit; sets KUBECONFIG and KUBECTL.
start_kube() {
  KUBE_DIR="$1"
  "$ROOT/scripts/kube-test-env.sh" start "$KUBE_DIR" >/dev/null || fail "kube-test-env did not start"
  trap '"$ROOT/scripts/kube-test-env.sh" stop "$KUBE_DIR" >/dev/null 2>&1 || true' EXIT
  # shellcheck source=/dev/null # written by kube-test-env.sh start
  source "$KUBE_DIR/env"
  export KUBECONFIG KUBECTL
}
