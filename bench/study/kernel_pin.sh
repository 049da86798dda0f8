# shellcheck shell=bash
# The study's one CPU kernel path (docs/REPRODUCTION.md, "One kernel path"), for run.sh and
# owners.sh, which source this file (it defines functions only). OpenBLAS's Haswell kernels, ATen's
# AVX2 kernels, oneDNN off: every x86-64 CPU with AVX2 and FMA runs them, so a run is
# bit-reproducible on any such machine. Each run's summary records the path it took (kernel_path).
#   study_pin_kernels WHO         export the pin; exit 2 (WHO: says who) on a CPU without AVX2/FMA
#   study_check_kernels SUMMARY   after study_pin_kernels: true when the run of rank summary SUMMARY
#                                 took the pinned path; else prints the path it took and returns 1
study_pin_kernels() {
  if ! grep -qw avx2 /proc/cpuinfo || ! grep -qw fma /proc/cpuinfo; then
    echo "$1: the study's kernel path (OpenBLAS Haswell, ATen avx2) needs a CPU with AVX2 and FMA" >&2
    exit 2
  fi
  export OPENBLAS_CORETYPE=Haswell ATEN_CPU_CAPABILITY=avx2 PPU_ONEDNN=off
  unset OPENBLAS_L2_SIZE
}

study_check_kernels() { # against the pin study_pin_kernels exported, so it is spelled once
  python3 "$(dirname "${BASH_SOURCE[0]}")/summaries.py" check-kernels "$1"
}
