#!/usr/bin/env bash
# Issue 24 in one call on a bare CUDA machine (PyTorch 2.x with its CUDA LibTorch, nvcc, CMake,
# ninja; no network): unpack the .debs fetched beforehand by scripts/fetch-gpu-debs.sh, build the
# runtime against PyTorch's LibTorch, run `ctest -L gpu` (CUDA correctness), then
# bench/gpu/run.py (Table 1's memory, the inner step's time per configuration, MFU, the PyTorch
# reference). Every phase has a deadline, so the script ends by itself within PPU_GPU_BUDGET_S
# (default 570 s) and always packs what it has. Output under $OUT (the device tool's output
# folder; ./gpu-out elsewhere): summary.txt, table.md, results.json, table1.png, logs.tar.gz,
# with PPU_GPU_BENCH_ARGS=--profile profile.md and traces/ (gzipped profiler traces), and when the
# study's corpus travels too, study.md/json/png (bench/gpu/study.py, if time is left).
#
# Usage (device tool, carry [".gpu-debs", "out/study/corpus/data"]): bash scripts/gpu-run.sh [--dry-run]
#   PPU_GPU_BUDGET_S: seconds the whole script may take; PPU_GPU_BENCH_ARGS: flags for bench/gpu/run.py;
#   PPU_GPU_SKIP_TESTS=1 / PPU_GPU_SKIP_BENCH=1: no `ctest -L gpu` / no bench/gpu/run.py;
#   PPU_GPU_STUDY_DATA (default out/study/corpus/data), PPU_GPU_STUDY_MIN_S (default 200),
#   PPU_GPU_STUDY_ARGS: the study phase's corpus, the time it needs left, flags for it.
#   --dry-run: on a machine with a CUDA PyTorch (PPU_PYTHON, default python3) but no GPU and no
#   CUDA toolkit: the same steps, configured with PPU_TORCH_CUDA_STUB and CMake's search confined
#   to the unpacked prefix and the wheel (as bare as the GPU machine); the GPU steps run and fail.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
dry_run=0
[[ "${1:-}" == --dry-run ]] && dry_run=1
debs=${PPU_GPU_DEBS:-.gpu-debs}
out=${OUT:-$PWD/gpu-out}
py=${PPU_PYTHON:-python3}
prefix=/tmp/ppu-deps
build=${PPU_GPU_BUILD:-/tmp/ppu-build-cuda}
logs=/tmp/ppu-gpu-logs
start=$(date +%s)
budget=${PPU_GPU_BUDGET_S:-570}
deadline=$((start + budget))
mkdir -p "$out" "$prefix" "$logs"
: >"$out/summary.txt"
log() { echo "gpu-run [$(($(date +%s) - start)) s]: $*" | tee -a "$out/summary.txt"; }
left() { echo $((deadline - $(date +%s) - ${1:-0})); }
pack() {
  cp "$out/summary.txt" "$logs/" 2>/dev/null
  # The raw profiler traces stay out: bench/gpu/run.py copies them, gzipped, into $out/traces.
  tar -czf "$out/logs.tar.gz" --exclude='profile-*' --exclude='traces' -C "$logs" . 2>/dev/null
  log "logs packed: $(du -h "$out/logs.tar.gz" | cut -f1)"
}
die() {
  log "$*"
  pack
  exit 1
}

# 1. Dependencies: dpkg -x only unpacks (no maintainer scripts, nothing under / touched).
# libssl3 goes aside: the machine's own libssl.so.3 (its Python may need a newer one) wins.
for f in "$debs"/*.deb; do
  case $f in
    */libssl3_*) dpkg -x "$f" "$prefix/fallback" ;;
    *) dpkg -x "$f" "$prefix" ;;
  esac || die "dpkg -x $f failed"
done
arch_lib=$prefix/usr/lib/x86_64-linux-gnu
export PATH=$prefix/usr/bin:$PATH
export LD_LIBRARY_PATH=$arch_lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
if ! ldconfig -p | grep -q 'libssl.so.3 '; then
  export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$prefix/fallback/usr/lib/x86_64-linux-gnu
  log "no libssl.so.3 on this machine: Debian's libssl3 used"
fi
# The .pc files say prefix=/usr: the sysroot makes pkg-config point into the prefix instead.
export PKG_CONFIG_PATH=$arch_lib/pkgconfig:$prefix/usr/share/pkgconfig
export PKG_CONFIG_SYSROOT_DIR=$prefix
export PKG_CONFIG_LIBDIR=$PKG_CONFIG_PATH

# 2. LibTorch: the one inside the installed PyTorch (CUDA, NCCL, C++11 ABI since 2.7). Its
# libraries are named explicitly: find_library would prefer a system LibTorch if one existed.
site=$("$py" -c 'import os, torch; print(os.path.dirname(os.path.dirname(torch.__file__)))') || die "no torch in $py"
torch_dir=$site/torch
# libtorch_cuda.so needs cuDNN, NCCL, cuBLAS... from the nvidia-* wheels beside torch: the linker
# (-rpath-link) and, for the tests' discovery and the binaries, the loader must find them.
nv_libs=$(find "$site/nvidia" -name 'lib*.so*' -printf '%h\n' 2>/dev/null | sort -u | paste -sd:)
export LD_LIBRARY_PATH=$nv_libs:$LD_LIBRARY_PATH
log "torch $("$py" -c 'import torch; print(torch.__version__, "cuda", torch.version.cuda, "cxx11abi", torch._C._GLIBCXX_USE_CXX11_ABI)')"
log "gpu $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1 | head -1)"
log "cmake $(cmake --version | head -1), nvcc $(nvcc --version 2>/dev/null | tail -1), $(nproc) cores"

# 3. Configure and build what the GPU checks need (the operator needs Go tools: not here).
link="-Wl,-rpath-link,$torch_dir/lib:$nv_libs:$arch_lib"
args=(-S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPPU_BUILD_OPERATOR=OFF
  -DCMAKE_POLICY_VERSION_MINIMUM=3.5
  -DCMAKE_PREFIX_PATH="$prefix/usr;$arch_lib/cmake;$torch_dir/share/cmake"
  -DTORCH_LIBRARY="$torch_dir/lib/libtorch.so" -Dc10_LIBRARY="$torch_dir/lib/libc10.so"
  -DC10_CUDA_LIBRARY="$torch_dir/lib/libc10_cuda.so"
  -DCMAKE_EXE_LINKER_FLAGS="$link" -DCMAKE_SHARED_LINKER_FLAGS="$link")
if ((dry_run)); then
  # No toolkit here: the stub, the CUDA paths compiled anyway (headers from the nvidia-* wheels),
  # and CMake's search confined to the prefix and the wheel, so nothing of this machine's /usr
  # stands in for a missing .deb.
  # libc's own development files (libdl, librt, headers) are the machine's: mirrored as links.
  libc_root=/tmp/ppu-libc-root
  for p in libc6-dev linux-libc-dev libc6; do dpkg -L "$p"; done | while read -r f; do
    if [[ -f $f ]]; then mkdir -p "$libc_root$(dirname "$f")" && ln -sf "$f" "$libc_root$f"; fi
  done
  args+=(-DPPU_TORCH_CUDA_STUB=ON -DPPU_WITH_CUDA=ON -DCMAKE_CXX_FLAGS="-isystem $site/nvidia/cu13/include"
    -DCMAKE_FIND_ROOT_PATH="$prefix;$site;$libc_root" -DCMAKE_FIND_ROOT_PATH_MODE_LIBRARY=ONLY
    -DCMAKE_FIND_ROOT_PATH_MODE_INCLUDE=ONLY -DCMAKE_FIND_ROOT_PATH_MODE_PACKAGE=ONLY)
else
  # The toolkit LibTorch's config looks for (find_package(CUDAToolkit)): nvcc on PATH, or /usr/local/cuda.
  [[ -x /usr/local/cuda/bin/nvcc ]] && export PATH=$PATH:/usr/local/cuda/bin
  cuda_root=$(dirname "$(dirname "$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)")")
  args+=(-DPPU_WITH_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DCUDAToolkit_ROOT="$cuda_root")
fi
cmake "${args[@]}" >"$logs/configure.log" 2>&1 || {
  tail -30 "$logs/configure.log"
  die "configure FAILED (logs.tar.gz: configure.log)"
}
log "$(grep -E 'PPU: (Torch|NCCL)' "$logs/configure.log" | paste -sd' ')"
targets=(ppu-train ppu-plan ppu-launch runtime_gpu_tests)
# Build, then the tests, must leave about half the budget to the benchmark (it needs ~270 s in
# full), unless there is none.
bench_share=$([[ ${PPU_GPU_SKIP_BENCH:-0} == 1 ]] && echo 0 || echo 1)
timeout "$(left $((bench_share * budget * 52 / 100)))" ninja -C "$build" -j"$(nproc)" "${targets[@]}" >"$logs/build.log" 2>&1 || {
  grep -m10 -B2 -A8 "error" "$logs/build.log"
  die "build FAILED or over its deadline (logs.tar.gz: build.log)"
}
log "build ok"

# 4. CUDA correctness: the gtests and the 4-ranks-on-one-GPU process tests (label gpu).
if [[ ${PPU_GPU_SKIP_TESTS:-0} != 1 ]]; then
  (cd "$build" && timeout "$(left $((bench_share * budget * 46 / 100)))" ctest -L gpu --output-on-failure --timeout 240) >"$logs/ctest-gpu.log" 2>&1
  log "ctest -L gpu: rc=$? ($(grep -E 'tests passed|tests failed' "$logs/ctest-gpu.log"))"
  grep -E '^\s*[0-9]+/[0-9]+ Test' "$logs/ctest-gpu.log" | tee -a "$out/summary.txt"
fi

# 5. Table 1's memory, speed, MFU and the PyTorch reference (its own deadline: what finished is kept).
if [[ ${PPU_GPU_SKIP_BENCH:-0} != 1 ]]; then
  # shellcheck disable=SC2086 # PPU_GPU_BENCH_ARGS: extra flags, e.g. --speed-only
  timeout "$(left 15)" "$py" bench/gpu/run.py "$build" --out "$logs/bench" ${PPU_GPU_BENCH_ARGS:-} >"$logs/bench.log" 2>&1
  log "bench/gpu/run.py: rc=$?"
  cat "$logs/bench.log"
  for f in table.md results.json table1.png profile.md traces; do [[ -e $logs/bench/$f ]] && cp -r "$logs/bench/$f" "$out/"; done
fi

# 6. The optional first look at ~86 M parameters (bench/gpu/study.py), when the study's corpus was
# carried (PPU_GPU_STUDY_DATA) and enough of the budget is left; otherwise said and skipped.
study_data=${PPU_GPU_STUDY_DATA:-out/study/corpus/data}
if [[ ! -f $study_data/meta.json ]]; then
  log "study: no corpus at $study_data (carry it to run bench/gpu/study.py)"
elif (($(left 15) < ${PPU_GPU_STUDY_MIN_S:-200})); then
  log "study: $(left 15) s left, under PPU_GPU_STUDY_MIN_S (${PPU_GPU_STUDY_MIN_S:-200}); not run"
else
  # shellcheck disable=SC2086 # PPU_GPU_STUDY_ARGS: extra flags, e.g. --steps 200
  timeout "$(left 15)" "$py" bench/gpu/study.py "$build" "$study_data" --out "$logs/study" ${PPU_GPU_STUDY_ARGS:-} >"$logs/study.log" 2>&1
  log "bench/gpu/study.py: rc=$?"
  tail -20 "$logs/study.log"
  for f in study.md study.json study.png; do [[ -e $logs/study/$f ]] && cp "$logs/study/$f" "$out/"; done
fi
pack
