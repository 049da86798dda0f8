#!/usr/bin/env bash
# Builds the whole project against the CUDA LibTorch 2.x inside a PyTorch wheel and runs the
# whole CPU test suite (every ctest label but `cluster`) with that build, on a machine without a
# GPU or CUDA toolkit. A CUDA LibTorch runs without a GPU; it only needs its CUDA
# runtime libraries (cudart, cuDNN, NCCL, nvshmem, cuBLAS...), which come from the nvidia-*
# wheels PyTorch depends on.
#
# Phases (each timed, summary on the last lines and in $LOG_DIR/summary.txt):
#   1. deps     scripts/install-deps.sh --test, kube tools, helm (as scripts/test.sh does)
#   2. torch    venv under $PPU_LIBTORCH2_HOME with torch==$PPU_TORCH_VERSION and its nvidia-* wheels
#               (pip's configured index; skipped when that version is already installed)
#   3. configure  PPU_TORCH_CUDA_STUB=ON (no CUDA toolkit here: PPU_WITH_CUDA is OFF, the
#               binaries still link libtorch_cuda.so), linker told where the nvidia libs are
#   4. build    nice -n 19, -j$PPU_BUILD_JOBS (default 2)
#   5. test     ctest -LE cluster; fails if fewer tests run than the build registers, or if a
#               binary would load a LibTorch other than the wheel's
#
# Usage: bash scripts/libtorch2-suite.sh [BUILD_DIR] [extra ctest args...]
#   BUILD_DIR           default /opt/ppu-libtorch2/build
#   PPU_TORCH_VERSION   default 2.11.0 (the PyTorch of the GPU machines scripts/gpu-run.sh runs on)
#   PPU_LIBTORCH2_HOME  venv and logs (default /opt/ppu-libtorch2: world-readable, because
#                       runtime_process.readonly_root runs ranks as uid 65532 and they load the
#                       wheel's libraries from the venv; a home folder such as /root is not)
#   PPU_SKIP_DEPS=1     skip phase 1 (dependencies already installed)
#   PPU_TEST_JOBS       ctest -j (default 2)
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
TORCH_VERSION=${PPU_TORCH_VERSION:-2.11.0}
HOME_DIR=${PPU_LIBTORCH2_HOME:-/opt/ppu-libtorch2}
BUILD=${1:-$HOME_DIR/build}
shift || true
JOBS=${PPU_BUILD_JOBS:-2}
VENV=$HOME_DIR/venv
LOG_DIR=$HOME_DIR/logs
mkdir -p "$LOG_DIR"
SUMMARY=$LOG_DIR/summary.txt
: >"$SUMMARY"
log() { echo "libtorch2-suite: $*" | tee -a "$SUMMARY"; }
t0=$(date +%s)
phase_start=$t0
phase_done() {
  local now
  now=$(date +%s)
  log "phase $1: $((now - phase_start)) s"
  phase_start=$now
}
fail() {
  log "FAILED: $*"
  exit 1
}

# 1. The project's own dependencies (Debian packages, Go-built kube tools and helm).
if [[ "${PPU_SKIP_DEPS:-0}" != 1 ]]; then
  bash scripts/install-deps.sh --test >"$LOG_DIR/deps.log" 2>&1 || fail "install-deps (see $LOG_DIR/deps.log)"
  bash scripts/build-kube-tools.sh >>"$LOG_DIR/deps.log" 2>&1 || fail "build-kube-tools (see $LOG_DIR/deps.log)"
  bash scripts/build-helm.sh >>"$LOG_DIR/deps.log" 2>&1 || fail "build-helm (see $LOG_DIR/deps.log)"
  phase_done deps
fi

# 2. PyTorch and its CUDA runtime wheels, in a venv of their own (never on PATH: the export
#    test uses Debian's /usr/bin/python3 with python3-torch), readable by every uid (umask 022).
PY=$VENV/bin/python
installed=$("$PY" -c 'import importlib.metadata as m; print(m.version("torch"))' 2>/dev/null || true)
if [[ "$installed" != "$TORCH_VERSION" ]]; then
  umask 022
  if [[ ! -x "$PY" ]]; then python3 -m venv "$VENV" || fail "python3 -m venv $VENV"; fi
  nice -n 19 "$VENV/bin/pip" install --no-cache-dir "torch==$TORCH_VERSION" >"$LOG_DIR/pip.log" 2>&1 \
    || fail "pip install torch==$TORCH_VERSION (see $LOG_DIR/pip.log)"
  mb=$(grep -o 'Downloading [^ ]* ([0-9.]* [kMG]B)' "$LOG_DIR/pip.log" | awk '
    {v=substr($3,2); u=$4; if (u ~ /^kB/) v/=1000; if (u ~ /^GB/) v*=1000; s+=v} END {printf "%.0f", s}')
  log "downloaded ${mb} MB of wheels (torch==$TORCH_VERSION and its dependencies)"
  phase_done torch
else
  log "torch $TORCH_VERSION already in $VENV"
fi
SITE=$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
TORCH_CMAKE=$SITE/torch/share/cmake
TORCH_LIB=$SITE/torch/lib
[[ -f $TORCH_LIB/libtorch_cuda.so ]] || fail "no libtorch_cuda.so in $TORCH_LIB (not a CUDA wheel?)"
# Every lib folder of the nvidia-* wheels (nvidia/<pkg>/lib and nvidia/cu13/lib style layouts).
NV_LIBS=$(find "$SITE/nvidia" -name 'lib*.so*' -printf '%h\n' 2>/dev/null | sort -u | paste -sd:)
[[ -n "$NV_LIBS" ]] || fail "no nvidia-* wheel libraries under $SITE/nvidia"
log "torch $("$PY" -c 'import torch; print(torch.__version__, "cuda", torch.version.cuda, "cxx11abi", torch._C._GLIBCXX_USE_CXX11_ABI)' 2>/dev/null)"

# 3. Configure. -rpath-link lets the linker resolve libtorch_cuda.so's own dependencies
#    (cudart, cuDNN, NCCL, nvshmem...). At run time no LD_LIBRARY_PATH is needed: our binaries'
#    RUNPATH names torch/lib, and libtorch_cuda.so's RPATH names $ORIGIN/../../nvidia/*/lib,
#    i.e. the wheels installed beside it (checked with ldd after the build).
#    TorchConfig's find_library(torch / c10) searches the system folders before the wheel's lib
#    folder, so with Debian's LibTorch 1.13 installed (install-deps.sh) it would link
#    /usr/lib/.../libc10.so too and the binaries would load both c10s (they abort at start):
#    the wheel's libraries are named explicitly.
link="-Wl,-rpath-link,$TORCH_LIB:$NV_LIBS"
nice -n 19 cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DPPU_BUILD_RUNTIME=ON -DPPU_BUILD_OPERATOR=ON -DPPU_BUILD_TESTS=ON \
  -DPPU_TORCH_CUDA_STUB=ON -DCMAKE_PREFIX_PATH="$TORCH_CMAKE" \
  -DTORCH_LIBRARY="$TORCH_LIB/libtorch.so" -Dc10_LIBRARY="$TORCH_LIB/libc10.so" \
  -DC10_CUDA_LIBRARY="$TORCH_LIB/libc10_cuda.so" \
  -DCMAKE_EXE_LINKER_FLAGS="$link" -DCMAKE_SHARED_LINKER_FLAGS="$link" \
  >"$LOG_DIR/configure.log" 2>&1 || fail "configure (see $LOG_DIR/configure.log)"
grep -q "PPU: Torch $TORCH_VERSION" "$LOG_DIR/configure.log" || grep -q "PPU: Torch ${TORCH_VERSION%.*}" "$LOG_DIR/configure.log" \
  || fail "configure did not pick the wheel's LibTorch: $(grep 'PPU: Torch' "$LOG_DIR/configure.log")"
log "$(grep 'PPU: Torch' "$LOG_DIR/configure.log")"
phase_done configure

# 4. Build everything (-k 0: a target that does not build is reported, the rest still builds
#    and the suite still runs; ctest then counts that target's tests as not run, and rc is 1).
build_ok=1
nice -n 19 cmake --build "$BUILD" -j "$JOBS" -- -k 0 >"$LOG_DIR/build.log" 2>&1 || build_ok=0
phase_done build
if [[ $build_ok == 0 ]]; then
  log "build FAILED for: $(grep '^FAILED: ' "$LOG_DIR/build.log" | awk '{print $2}' | paste -sd' ')"
  grep -m10 'error:' "$LOG_DIR/build.log" | tee -a "$SUMMARY"
fi

# The binaries must load the wheel's LibTorch (and its CUDA libraries), never Debian's 1.13.
train=$BUILD/bin/ppu-train
[[ -x $train ]] || fail "no $train"
ldd "$train" >"$LOG_DIR/ldd-ppu-train.txt" 2>&1
if grep -q 'not found' "$LOG_DIR/ldd-ppu-train.txt"; then fail "unresolved libraries: $(grep 'not found' "$LOG_DIR/ldd-ppu-train.txt" | tr -d '\t' | paste -sd' ')"; fi
for lib in libtorch_cpu libtorch_cuda libc10 libcudart libcudnn libnccl; do
  grep -q "$lib.*=> $SITE" "$LOG_DIR/ldd-ppu-train.txt" || fail "ppu-train does not load $lib from the wheels (see $LOG_DIR/ldd-ppu-train.txt)"
done
if grep -E '^\s*lib(c10|torch)[a-z_]*\.so' "$LOG_DIR/ldd-ppu-train.txt" | grep -v "=> $SITE" >"$LOG_DIR/foreign-torch.txt"; then
  fail "ppu-train would also load a LibTorch outside the wheel: $(tr -d '\t' <"$LOG_DIR/foreign-torch.txt" | paste -sd' ')"
fi
"$train" --help >/dev/null 2>&1 || fail "ppu-train --help does not run"
log "ppu-train links libtorch_cuda, cudart, cuDNN, NCCL from the wheels and runs"

# 5. The whole CPU suite (cluster label left out, as in scripts/test.sh / CI).
cd "$BUILD" || fail "no build dir $BUILD"
registered=$(ctest -N -LE cluster "$@" | awk '/^Total Tests:/ {print $3}')
[[ -n "$registered" && "$registered" -gt 0 ]] || fail "ctest registers no tests in $BUILD"
status=0
nice -n 19 ctest --output-on-failure --timeout 900 -j "${PPU_TEST_JOBS:-2}" -LE cluster "$@" \
  >"$LOG_DIR/ctest.log" 2>&1 || status=$?
executed=$(sed -n 's/.*tests passed, [0-9]* tests\{0,1\} failed out of \([0-9]*\).*/\1/p' "$LOG_DIR/ctest.log" | tail -1)
phase_done test
log "$(grep -E 'tests passed' "$LOG_DIR/ctest.log" | tail -1)"
sed -n '/The following tests FAILED/,$p' "$LOG_DIR/ctest.log" | tee -a "$SUMMARY"
[[ $build_ok == 1 ]] || status=1
[[ "${executed:-0}" -eq "$registered" ]] || {
  log "ctest executed ${executed:-0} tests but the build registers $registered"
  status=1
}
log "total $(($(date +%s) - t0)) s; logs in $LOG_DIR; rc=$status"
exit "$status"
