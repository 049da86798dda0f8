// run_widest_blas_kernels(argv): the first call in main() of every binary that runs GEMMs
// (ppu-train, ppu-export, the benches). OpenBLAS picks its kernels when it loads, before main,
// and falls back to its oldest x86-64 kernels on a CPU model its table does not know (0.3.21 on
// Emerald Rapids: SSE3 "Prescott", a third of the GEMM rate). When decide_blas_core
// (blas_core_choice.h) says so, this re-executes the binary once, with the same argv, with
// OPENBLAS_CORETYPE naming the widest core the CPU runs; the re-executed process restores the
// caller's environment (OPENBLAS_CORETYPE unset again, so processes it starts decide for
// themselves). Nothing in the user's environment or a PPUJob is needed; a core the user forces
// with OPENBLAS_CORETYPE is obeyed. Does nothing when the loaded BLAS is not OpenBLAS.
// blas_kernels() says what runs and why, for the log line and the summary's `blas` block.
// Test-only: PPU_BLAS_TEST_LOADED_CORE stands in for the core OpenBLAS detected, so a test can
// drive the fallback path on a CPU whose model OpenBLAS knows.
#pragma once

#include <string>

namespace ppu {

struct BlasKernels {
  std::string core;           // openblas_get_corename() now; "" when the BLAS is not OpenBLAS
  std::string core_detected;  // what OpenBLAS's own detection chose (before the runtime's choice)
  std::string core_source;    // "detected", "runtime" (re-executed with its choice), "environment"
  std::string core_env;       // OPENBLAS_CORETYPE as the user set it, "" if unset
  std::string cpu_vectors;    // the CPU's widest vectors OpenBLAS has kernels for: avx512, avx2, older
  std::string warning;        // for the log: a narrower forced core, or a choice OpenBLAS refused
};

// May not return: it re-executes /proc/self/exe. Call before anything starts a thread.
void run_widest_blas_kernels(char** argv);
// What runs in this process (computed without re-executing when run_widest_blas_kernels was not called).
const BlasKernels& blas_kernels();

}  // namespace ppu
