#!/usr/bin/env bash
# Installs pytest, which runs the cluster end-to-end tests (tests/cluster/e2e: ctest cluster_e2e
# and cluster_nodes_e2e, label `cluster`, and cluster_e2e_collect, label `unit`), from PyPI at a
# pinned version with its dependencies pinned too, once, into its own virtual environment in a
# cache dir, the way install-ruff.sh installs ruff. The venv is made over Debian's /usr/bin/python3
# with --system-site-packages: the tests import Debian's python3-yaml (install-deps.sh --test),
# as the bash programs they replaced did. A test tool, never product code;
# scripts/install-deps.sh --test runs this script.
#
# Usage: scripts/install-pytest.sh [--print-path] [--force]
#   PPU_PYTEST_VERSION  pytest version (default below; the dependency pins apply to that one only)
#   PPU_TOOLS_DIR       cache root (default: $HOME/.cache/ppu-tools); the venv is
#                       <root>/pytest-<version>, its interpreter <root>/pytest-<version>/bin/python
#   PYTHON              interpreter that creates the venv (default /usr/bin/python3; Debian needs
#                       python3-venv, which install-deps.sh --test installs)
# Prints the venv's python on its last line (run the tests with `PYTHON -m pytest`). Needs the
# network only to install.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

PINNED=8.3.5
VERSION="${PPU_PYTEST_VERSION:-$PINNED}"
# pytest 8.3.5's own dependencies, at the versions current when it was released.
PINNED_DEPS=(iniconfig==2.0.0 packaging==24.2 pluggy==1.5.0)
OUT="$PPU_TOOLS_CACHE/pytest-$VERSION"
PY="$OUT/bin/python"

ppu_tool_flags install-pytest 2,17 --print-path -- "$@"
if [[ $PRINT_ONLY == 1 ]]; then
  echo "$PY"
  exit 0
fi

ppu_lock "$PPU_TOOLS_CACHE/.pytest-$VERSION.lock"
if [[ $FORCE == 1 || ! -f "$OUT/.installed" || ! -x "$PY" ]]; then
  deps=()
  [[ "$VERSION" == "$PINNED" ]] && deps=("${PINNED_DEPS[@]}")
  ppu_venv_install install-pytest "$OUT" "${PYTHON:-/usr/bin/python3}" --system-site-packages -- "${deps[@]}" "pytest==$VERSION"
fi
got="$("$PY" -m pytest --version 2>&1)"
[[ "$got" == "pytest $VERSION" ]] || ppu_die install-pytest "$PY -m pytest reports '$got', expected pytest $VERSION (rerun with --force)"
"$PY" -c 'import yaml' 2>/dev/null \
  || ppu_die install-pytest "$PY cannot import yaml (Debian: apt-get install python3-yaml, then rerun with --force)"
echo "$PY"
