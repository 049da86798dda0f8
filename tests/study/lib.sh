#!/usr/bin/env bash
# Sourced by the study's test scripts: `source lib.sh BUILD_DIR SOURCE_DIR SHARED_DIR PREFIX`.
# Sets BUILD, SRC, SHARED; OUT, a fresh folder under /tmp named after PREFIX (removed on exit,
# with any process still running from it); exports PPU_BUILD and PPU_SHAKESPEARE for
# bench/study's scripts; defines fail MESSAGE (prints "FAIL: MESSAGE" and exits 1).
set -uo pipefail
BUILD=$1
# shellcheck disable=SC2034 # used by the scripts that source this file
SRC=$2
SHARED=$3
fail() {
  echo "FAIL: $*"
  exit 1
}
OUT=$(mktemp -d "/tmp/$4.XXXXXX")
trap 'pkill -f "$OUT/" 2>/dev/null; rm -rf "$OUT"' EXIT
export PPU_BUILD=$BUILD PPU_SHAKESPEARE=$SHARED/data/tinyshakespeare.txt
