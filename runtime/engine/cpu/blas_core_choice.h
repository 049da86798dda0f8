// Which OpenBLAS kernels ("core") a process should run, as pure logic: the CPU's vector features,
// the core OpenBLAS detected when it loaded and OPENBLAS_CORETYPE in, one decision out.
//   - OPENBLAS_CORETYPE set by the user: obeyed (source "environment"), whatever its width.
//   - OpenBLAS's detection at least as wide as the CPU's widest vectors: kept ("detected").
//   - Otherwise OpenBLAS fell back (a CPU model its table does not know runs its SSE3 Prescott
//     kernels): the runtime names the widest core this CPU executes ("runtime"), which the caller
//     applies by re-executing itself with OPENBLAS_CORETYPE set (blas_kernels.h).
// Widths: AVX-512 cores (SkylakeX, Cooperlake, SapphireRapids), AVX2 + FMA cores (Haswell, Zen),
// and everything older. The AVX-512 choice is Cooperlake on a CPU with AVX-512 BF16 (it adds the
// bf16 GEMM kernels to SkylakeX's), else SkylakeX; SapphireRapids is never chosen because
// Debian's OpenBLAS 0.3.21 lacks it (an unknown name makes OpenBLAS detect again). The AVX2 choice
// is Haswell on Intel and AMD alike (Zen runs the same kernels with other blocking).
#pragma once

#include <string>
#include <string_view>

namespace ppu {

// What OpenBLAS's x86-64 kernels need from the CPU (and the OS: AVX-512 state enabled).
struct CpuVectorFeatures {
  bool avx2 = false, fma = false;
  bool avx512_core = false;  // AVX-512 F, CD, BW, DQ and VL: what SkylakeX's kernels use
  bool avx512_bf16 = false;
};

enum class VectorWidth { Older = 0, Avx2 = 1, Avx512 = 2 };

CpuVectorFeatures this_cpu_vector_features();
VectorWidth widest_vectors(const CpuVectorFeatures& cpu);
VectorWidth kernel_width(std::string_view openblas_core);  // Older for a name it does not know
const char* vector_width_name(VectorWidth width);          // "avx512", "avx2", "older"

struct BlasCoreDecision {
  std::string source;  // "detected", "runtime" or "environment"
  std::string core;    // the core to run: the loaded one, or the one the runtime chose
  // A forced core narrower than the CPU's widest vectors: the warning for the log ("" otherwise).
  std::string warning;
};

// `loaded`: openblas_get_corename() of this process, as OpenBLAS chose it when it loaded (its own
// detection, or what `forced` made it run); `forced`: OPENBLAS_CORETYPE as the user set it, ""
// when unset. A decision with source "runtime" asks the caller to run `core` instead of `loaded`.
BlasCoreDecision decide_blas_core(const CpuVectorFeatures& cpu, std::string_view loaded, std::string_view forced);

}  // namespace ppu
