#include "engine/cpu/blas_core_choice.h"

#include <array>

namespace ppu {

namespace {

struct CoreWidth {
  std::string_view core;
  VectorWidth width;
};

// OpenBLAS 0.3.21's x86-64 DYNAMIC_ARCH names with AVX2 kernels or wider (later versions add to
// the list; every other name runs older kernels).
constexpr std::array<CoreWidth, 5> kWideCores{{{"SkylakeX", VectorWidth::Avx512},
                                               {"Cooperlake", VectorWidth::Avx512},
                                               {"SapphireRapids", VectorWidth::Avx512},
                                               {"Haswell", VectorWidth::Avx2},
                                               {"Zen", VectorWidth::Avx2}}};

// The widest core this CPU executes, "" when it has neither AVX2 + FMA nor AVX-512.
std::string widest_core(const CpuVectorFeatures& cpu) {
  switch (widest_vectors(cpu)) {
    case VectorWidth::Avx512: return cpu.avx512_bf16 ? "Cooperlake" : "SkylakeX";
    case VectorWidth::Avx2: return "Haswell";
    case VectorWidth::Older: break;
  }
  return "";
}

}  // namespace

CpuVectorFeatures this_cpu_vector_features() {
  CpuVectorFeatures cpu;
  // GCC's checks read XCR0 too: a feature the OS does not enable counts as absent.
  cpu.avx2 = __builtin_cpu_supports("avx2");
  cpu.fma = __builtin_cpu_supports("fma");
  cpu.avx512_core = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512cd") &&
                    __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
                    __builtin_cpu_supports("avx512vl");
  cpu.avx512_bf16 = cpu.avx512_core && __builtin_cpu_supports("avx512bf16");
  return cpu;
}

VectorWidth widest_vectors(const CpuVectorFeatures& cpu) {
  if (cpu.avx512_core && cpu.avx2 && cpu.fma) return VectorWidth::Avx512;
  if (cpu.avx2 && cpu.fma) return VectorWidth::Avx2;
  return VectorWidth::Older;
}

VectorWidth kernel_width(std::string_view openblas_core) {
  for (const auto& known : kWideCores)
    if (known.core == openblas_core) return known.width;
  return VectorWidth::Older;
}

const char* vector_width_name(VectorWidth width) {
  switch (width) {
    case VectorWidth::Avx512: return "avx512";
    case VectorWidth::Avx2: return "avx2";
    case VectorWidth::Older: break;
  }
  return "older";
}

BlasCoreDecision decide_blas_core(const CpuVectorFeatures& cpu, std::string_view loaded, std::string_view forced) {
  const VectorWidth widest = widest_vectors(cpu);
  if (!forced.empty()) {
    BlasCoreDecision decision{"environment", std::string(loaded), ""};
    if (kernel_width(loaded) < widest)
      decision.warning = "OPENBLAS_CORETYPE=" + std::string(forced) + " in the environment makes OpenBLAS run its " +
                         std::string(loaded) + " kernels (" + vector_width_name(kernel_width(loaded)) +
                         ") on a CPU with " + vector_width_name(widest) + "; unset it and ppu runs " +
                         widest_core(cpu) + "'s (2-3x the GEMM rate, docs/BENCHMARKS.md)";
    return decision;
  }
  if (kernel_width(loaded) >= widest) return {"detected", std::string(loaded), ""};
  return {"runtime", widest_core(cpu), ""};
}

}  // namespace ppu
