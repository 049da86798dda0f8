// Compute threads and the BLAS this process runs on.
// configure_compute_threads(n) sizes LibTorch's intra-op pool and OpenBLAS's own pool to n
// (results are bit-reproducible only when both have the configured size, whatever
// OMP_NUM_THREADS says). loaded_blas() reports the BLAS shared library the process actually
// mapped and the thread count it will use, so a run can prove it is on the OpenMP OpenBLAS
// that shares LibTorch's thread pool (cmake/openblas_openmp.cmake) and not on another variant.
// It also reports the LibTorch version and the BLAS that LibTorch was built against
// (at::show_config's BLAS_INFO): "generic" for Debian's 1.13, which calls libblas.so.3 (the
// OpenBLAS above), "mkl" for PyTorch's 2.x wheels, which link MKL statically and map no BLAS.
// And it reports which kernels OpenBLAS runs (its core name) and who chose them: OpenBLAS's
// detection, the runtime (blas_kernels.h, when the detection fell back to narrower kernels than
// the CPU runs) or OPENBLAS_CORETYPE in the user's environment.
#pragma once

#include <string>

namespace ppu {

struct BlasInfo {
  std::string library;        // resolved path of the loaded libblas.so.3 (or libopenblas), "" if none
  std::string variant;        // "openmp", "pthread", "serial" or "unknown" (from the path)
  int threads = 0;            // openblas_get_num_threads(), 0 when the BLAS is not OpenBLAS
  std::string libtorch;       // TORCH_VERSION of the headers built against, e.g. "1.13.0"
  std::string torch_blas;     // BLAS_INFO of at::show_config(): "generic", "mkl", "open"..., "" if absent
  std::string core;           // openblas_get_corename(), e.g. "Cooperlake", "" when not OpenBLAS
  std::string core_detected;  // OpenBLAS's own detection ("" when the user forced a core)
  std::string core_source;    // "detected", "runtime" or "environment" (blas_kernels.h)
  std::string core_env;       // OPENBLAS_CORETYPE as the user set it, "" if unset
  std::string cpu_vectors;    // the CPU's widest vectors with OpenBLAS kernels: avx512, avx2, older
  bool cpu_avx512 = false;    // the CPU executes AVX-512F
};

void configure_compute_threads(int threads);

// On a CPU shared by more ranks than cores, a rank's control plane (its heartbeat's threads, the
// rendezvous store) must not starve behind compute: 32 ranks of the tiny model on 2 cores with
// heartbeat_s 1 reported live ranks silent for 1.0-1.3 s. The calling thread (the training
// thread, once the heartbeat's threads exist) and every thread it creates from now on (Gloo's,
// OpenMP's) run `steps` nice levels lower. It only lowers (no privilege needed); a failure is
// logged and changes nothing else. Returns the nice value now in force.
int yield_cpu_to_control_plane(int steps);
// The steps the training thread yields to the heartbeat's threads: about 9x less CPU weight than
// theirs when the two contend; nothing when the CPU is free.
constexpr int kComputeNice = 10;
BlasInfo loaded_blas();
// ATen's CPU kernel level in this process, as at::show_config() reports it: "default", "avx2" or
// "avx512" (the best the CPU and the build have, or lower where ATEN_CPU_CAPABILITY says so).
std::string aten_cpu_capability();
// /proc/cpuinfo's first "model name", "" where there is none.
std::string cpu_model_name();
// Why this core runs, for the log: "(OpenBLAS's detection)", "(chosen by ppu: OpenBLAS detected
// Prescott on a CPU with avx512)" or "(OPENBLAS_CORETYPE=Haswell)".
std::string blas_core_reason(const BlasInfo& blas);

}  // namespace ppu
