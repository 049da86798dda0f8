#include "engine/cpu/blas_kernels.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <optional>

#include "engine/cpu/blas_core_choice.h"

namespace ppu {

namespace {

constexpr const char* kCoreType = "OPENBLAS_CORETYPE";
// Set only across the runtime's own re-execution: OpenBLAS's detection before it.
constexpr const char* kDetectedAcrossExec = "PPU_BLAS_DETECTED_CORE";
constexpr const char* kTestLoadedCore = "PPU_BLAS_TEST_LOADED_CORE";

std::optional<std::string> openblas_core() {
  using GetCoreName = char* (*)();
  auto get = reinterpret_cast<GetCoreName>(dlsym(RTLD_DEFAULT, "openblas_get_corename"));
  if (!get) return std::nullopt;
  return std::string(get());
}

std::string env_or_empty(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

std::optional<BlasKernels>& state() {
  static std::optional<BlasKernels> kernels;
  return kernels;
}

BlasKernels decide(char** argv) {
  const CpuVectorFeatures cpu = this_cpu_vector_features();
  BlasKernels k;
  k.cpu_vectors = vector_width_name(widest_vectors(cpu));
  const auto loaded = openblas_core();
  if (!loaded) {
    k.core_source = "detected";
    return k;
  }
  k.core = *loaded;
  const std::string detected_before_exec = env_or_empty(kDetectedAcrossExec);
  if (!detected_before_exec.empty()) {  // the re-executed process: check, then restore the environment
    const std::string asked = env_or_empty(kCoreType);
    ::unsetenv(kDetectedAcrossExec);
    ::unsetenv(kCoreType);
    k.core_detected = detected_before_exec;
    k.core_source = k.core == asked ? "runtime" : "detected";
    if (k.core != asked)
      k.warning = "the runtime asked OpenBLAS for its " + asked + " kernels (OpenBLAS detected " +
                  detected_before_exec + "), but it runs " + k.core;
    return k;
  }
  k.core_env = env_or_empty(kCoreType);
  const std::string test_loaded = env_or_empty(kTestLoadedCore);
  const std::string as_detected = k.core_env.empty() && !test_loaded.empty() ? test_loaded : k.core;
  const BlasCoreDecision decision = decide_blas_core(cpu, as_detected, k.core_env);
  k.core_detected = k.core_env.empty() ? as_detected : "";
  k.core_source = decision.source;
  k.warning = decision.warning;
  if (decision.source != "runtime") return k;
  std::string why = "this binary does not choose its kernels (run_widest_blas_kernels)";
  if (argv) {
    ::unsetenv(kTestLoadedCore);
    ::setenv(kDetectedAcrossExec, as_detected.c_str(), 1);
    ::setenv(kCoreType, decision.core.c_str(), 1);
    ::execv("/proc/self/exe", argv);
    why = "re-executing with OPENBLAS_CORETYPE=" + decision.core + " failed";  // still here
    ::unsetenv(kDetectedAcrossExec);
    ::unsetenv(kCoreType);
  }
  k.core_source = "detected";
  k.warning = "OpenBLAS runs its " + as_detected + " kernels (" + vector_width_name(kernel_width(as_detected)) +
              ") on a CPU with " + k.cpu_vectors + ": " + why;
  return k;
}

}  // namespace

void run_widest_blas_kernels(char** argv) {
  if (!state()) state() = decide(argv);
}

const BlasKernels& blas_kernels() {
  if (!state()) state() = decide(nullptr);
  return *state();
}

}  // namespace ppu
