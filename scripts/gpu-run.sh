#!/usr/bin/env bash
# One call on a bare CUDA machine (PyTorch 2.x with its CUDA LibTorch, nvcc, CMake, ninja; no
# network): unpack the .debs fetched beforehand by scripts/fetch-gpu-debs.sh into a prefix,
# configure against PyTorch's LibTorch, build, run the runtime tests and the GPU benchmark,
# and write logs under $OUT (the device tool's output folder; ./gpu-out elsewhere).
# Usage (device tool, carry [".gpu-debs"]): bash scripts/gpu-run.sh [DEB_DIR]
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
debs=${1:-.gpu-debs}
out=${OUT:-$PWD/gpu-out}
prefix=/tmp/ppu-deps
build=/tmp/ppu-build-cuda
mkdir -p "$out" "$prefix"
log() { echo "gpu-run: $*" | tee -a "$out/summary.txt"; }

# 1. Dependencies: dpkg -x only unpacks (no maintainer scripts, nothing under / touched).
for f in "$debs"/*.deb; do dpkg -x "$f" "$prefix"; done
arch_lib=$prefix/usr/lib/x86_64-linux-gnu
export PATH=$prefix/usr/bin:$PATH
export LD_LIBRARY_PATH=$arch_lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
# The .pc files say prefix=/usr: the sysroot makes pkg-config point into the prefix instead.
export PKG_CONFIG_PATH=$arch_lib/pkgconfig:$prefix/usr/share/pkgconfig
export PKG_CONFIG_SYSROOT_DIR=$prefix
export PKG_CONFIG_LIBDIR=$PKG_CONFIG_PATH

# 2. LibTorch: the one inside the installed PyTorch (CUDA, NCCL, C++11 ABI since 2.7).
torch_cmake=$(python3 -c 'import torch.utils; print(torch.utils.cmake_prefix_path)')
# libtorch_cuda.so needs cuDNN, NCCL, cuBLAS... from the nvidia-* wheels beside torch: the linker
# (-rpath-link) and the loader must find them.
nv_libs=$(python3 -c 'import glob, os, torch; sp = os.path.dirname(os.path.dirname(torch.__file__)); print(":".join(sorted(glob.glob(sp + "/nvidia/*/lib") + glob.glob(sp + "/nvidia/*/*/lib"))))')
export LD_LIBRARY_PATH=$nv_libs:$LD_LIBRARY_PATH
log "torch $(python3 -c 'import torch; print(torch.__version__, torch.version.cuda, torch._C._GLIBCXX_USE_CXX11_ABI)')"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee -a "$out/summary.txt"

# 3. Configure and build (the operator needs Go tools: not here).
cmake -S . -B "$build" -G Ninja -DPPU_BUILD_OPERATOR=OFF -DPPU_WITH_CUDA=ON \
  -DCMAKE_PREFIX_PATH="$prefix/usr;$arch_lib/cmake;$torch_cmake" -DCMAKE_CUDA_ARCHITECTURES=90 \
  -DCMAKE_EXE_LINKER_FLAGS="-Wl,-rpath-link,$nv_libs:$arch_lib" \
  >"$out/configure.log" 2>&1 || {
  log "configure FAILED"
  tail -40 "$out/configure.log"
  exit 1
}
ninja -C "$build" -j"$(nproc)" >"$out/build.log" 2>&1 || {
  log "build FAILED"
  grep -m20 -A5 "error" "$out/build.log"
  exit 1
}
log "build ok"

# 4. Runtime tests (CPU paths, now compiled against LibTorch 2.x), then GPU checks.
(cd "$build" && ctest -L unit --output-on-failure --timeout 600 -j8) >"$out/ctest-unit.log" 2>&1
log "ctest -L unit: rc=$? ($(grep -E 'tests passed|tests failed' "$out/ctest-unit.log"))"
(cd "$build" && ctest -R 'Distributed|runtime_process' --output-on-failure --timeout 900) >"$out/ctest-dist.log" 2>&1
log "ctest Distributed|runtime_process: rc=$? ($(grep -E 'tests passed|tests failed' "$out/ctest-dist.log"))"

# 5. GPU: a short ppu-train on cuda (summary holds cuda_memory_bytes), then the benchmark.
"$build"/bin/ppu-train --config configs/tiny.yaml --set train.device=cuda --set train.steps=20 \
  --summary "$out/train-cuda-summary.json" >"$out/train-cuda.log" 2>&1
log "ppu-train cuda: rc=$?"
# The bench holds all six variants at once: a 350 M model first (fits easily), then the 1.3 B
# shape at batch 2 (~50 GB in fp32 by estimate; may not fit an 80 GB H100: rc says).
"$build"/bench/partial_backward_bench --device cuda --layers 24 --d-model 1024 --heads 16 --vocab 32000 \
  --seq-len 1024 --batch 4 --reps 7 >"$out/bench-cuda.txt" 2>&1
log "partial_backward_bench cuda 350M: rc=$?"
"$build"/bench/partial_backward_bench --device cuda --layers 24 --d-model 2048 --heads 16 --vocab 32000 \
  --seq-len 1024 --batch 2 --reps 5 >>"$out/bench-cuda.txt" 2>&1
log "partial_backward_bench cuda 1.3B: rc=$?"
cat "$out/bench-cuda.txt"
cat "$out/summary.txt"
