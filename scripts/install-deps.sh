#!/usr/bin/env bash
# Installs the Debian packages the build, the demo and the test suite need (docs/TESTING.md lists what each part needs).
# Idempotent: packages already present are left alone; needs root (or sudo) on Debian bookworm.
# Self-contained, unlike the tool scripts (scripts/lib.sh): the Dockerfile copies it alone.
set -euo pipefail
PKGS=(
  build-essential cmake ninja-build pkg-config git curl ca-certificates
  libtorch-dev libopenblas0-openmp libopenblas-dev
  prometheus-cpp-dev libyaml-cpp-dev libspdlog-dev libfmt-dev
  libsentencepiece-dev sentencepiece libprotobuf-dev nlohmann-json3-dev libcurl4-openssl-dev libssl-dev libpugixml-dev
  libgtest-dev libgmock-dev libcli11-dev libgloo-dev libcpp-httplib-dev libcivetweb-dev libjemalloc-dev
)
# --test: what the suite adds. --bench: the PyTorch reference of bench/pytorch_peer (Debian's
# python3-torch is the same LibTorch 1.13 the build links) and linux-perf for profiling.
# gnuplot-nox draws the study plots (bench/study/report.py), python3-scipy and python3-yaml run
# its statistics (bench/study/stats.py, with Debian's /usr/bin/python3); python3-torch also runs the
# independent evaluation of ppu-export's output in the suite (scripts/ppu_export_eval.py).
# iproute2 (ip, tc): the network-blip test and bench/chaos put ranks in network namespaces.
# python3-venv: --test also installs checkov, the chart's policy scanner (tests/packaging/
# checkov_test.sh), pinned, from PyPI into a venv of its own (scripts/install-checkov.sh), and
# the Hugging Face stack the export tests load models with (scripts/install-hf-venv.sh).
# --test also installs the lint tools of scripts/check-scripts.sh: Debian's shellcheck, ruff
# pinned from PyPI into a venv (scripts/install-ruff.sh) and shfmt built from its pinned Go
# module (scripts/build-shfmt.sh, which installs a Go toolchain if the machine has none new
# enough). --no-go (with --test) leaves shfmt out: the unit lane, scripts/test.sh --unit, runs
# no Go-built tool. --test also installs pytest, pinned, from PyPI into a venv
# (scripts/install-pytest.sh): it runs the cluster end-to-end tests (tests/cluster/e2e).
TEST=0
GO_TOOLS=1
for a in "$@"; do
  case "$a" in
    --test)
      TEST=1
      PKGS+=(etcd-server prometheus openssl python3 python3-venv python3-torch python3-scipy python3-yaml gnuplot-nox
        clang-format clang-tidy shellcheck iproute2)
      ;;
    --no-go) GO_TOOLS=0 ;;
    --bench) PKGS+=(python3 python3-torch linux-perf) ;;
    *)
      echo "install-deps.sh: unknown flag '$a' (use --test, --no-go, --bench)" >&2
      exit 2
      ;;
  esac
done
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  SUDO=""
  [[ $(id -u) -ne 0 ]] && SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
if ((TEST)); then
  bash "$(dirname "${BASH_SOURCE[0]}")/install-checkov.sh" >/dev/null
  bash "$(dirname "${BASH_SOURCE[0]}")/install-hf-venv.sh" >/dev/null
  bash "$(dirname "${BASH_SOURCE[0]}")/install-ruff.sh" >/dev/null
  bash "$(dirname "${BASH_SOURCE[0]}")/install-pytest.sh" >/dev/null
  if ((GO_TOOLS)); then bash "$(dirname "${BASH_SOURCE[0]}")/build-shfmt.sh" >/dev/null; fi
fi
