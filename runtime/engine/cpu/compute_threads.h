// Compute threads and the BLAS this process runs on.
// configure_compute_threads(n) sizes LibTorch's intra-op pool and OpenBLAS's own pool to n
// (results are bit-reproducible only when both have the configured size, whatever
// OMP_NUM_THREADS says). loaded_blas() reports the BLAS shared library the process actually
// mapped and the thread count it will use, so a run can prove it is on the OpenMP OpenBLAS
// that shares LibTorch's thread pool (cmake/openblas_openmp.cmake) and not on another variant.
// It also reports the LibTorch version and the BLAS that LibTorch was built against
// (at::show_config's BLAS_INFO): "generic" for Debian's 1.13, which calls libblas.so.3 (the
// OpenBLAS above), "mkl" for PyTorch's 2.x wheels, which link MKL statically and map no BLAS.
// And it reports which kernels OpenBLAS runs (its core name) and whether OPENBLAS_CORETYPE in
// the environment chose them: on a CPU with AVX-512, a forced AVX2 core (Haswell, Zen) runs
// GEMMs at about half the rate OpenBLAS's own choice reaches (docs/BENCHMARKS.md), and
// blas_core_warning() says so.
#pragma once

#include <string>

namespace ppu {

struct BlasInfo {
  std::string library;      // resolved path of the loaded libblas.so.3 (or libopenblas), "" if none
  std::string variant;      // "openmp", "pthread", "serial" or "unknown" (from the path)
  int threads = 0;          // openblas_get_num_threads(), 0 when the BLAS is not OpenBLAS
  std::string libtorch;     // TORCH_VERSION of the headers built against, e.g. "1.13.0"
  std::string torch_blas;   // BLAS_INFO of at::show_config(): "generic", "mkl", "open"..., "" if absent
  std::string core;         // openblas_get_corename(), e.g. "Cooperlake", "" when not OpenBLAS
  std::string core_env;     // OPENBLAS_CORETYPE as the process found it, "" if unset
  bool cpu_avx512 = false;  // the CPU executes AVX-512F
};

void configure_compute_threads(int threads);
BlasInfo loaded_blas();

// A warning for the log when OPENBLAS_CORETYPE pins an OpenBLAS core without AVX-512 kernels on
// a CPU that has them; "" otherwise.
std::string blas_core_warning(const BlasInfo& blas);

}  // namespace ppu
