// Compute threads and the BLAS this process runs on.
// configure_compute_threads(n) sizes LibTorch's intra-op pool and OpenBLAS's own pool to n
// (results are bit-reproducible only when both have the configured size, whatever
// OMP_NUM_THREADS says). loaded_blas() reports the BLAS shared library the process actually
// mapped and the thread count it will use, so a run can prove it is on the OpenMP OpenBLAS
// that shares LibTorch's thread pool (cmake/openblas_openmp.cmake) and not on another variant.
#pragma once

#include <string>

namespace ppu {

struct BlasInfo {
  std::string library;  // resolved path of the loaded libblas.so.3 (or libopenblas), "" if none
  std::string variant;  // "openmp", "pthread", "serial" or "unknown" (from the path)
  int threads = 0;      // openblas_get_num_threads(), 0 when the BLAS is not OpenBLAS
};

void configure_compute_threads(int threads);
BlasInfo loaded_blas();

}  // namespace ppu
