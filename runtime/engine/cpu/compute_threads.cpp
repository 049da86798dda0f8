#include "engine/cpu/compute_threads.h"

#include <ATen/Version.h>
#include <dlfcn.h>
#include <link.h>
#include <torch/torch.h>
#include <torch/version.h>

#include <cstdlib>
#include <filesystem>

namespace ppu {

namespace {

using GetThreads = int (*)();
using GetCoreName = char* (*)();
using SetThreads = void (*)(int);

int collect_blas(struct dl_phdr_info* info, size_t, void* data) {
  auto* found = static_cast<std::string*>(data);
  const std::string name = info->dlpi_name ? info->dlpi_name : "";
  const auto base = std::filesystem::path(name).filename().string();
  // libblas.so.3 is what LibTorch links; libopenblas.so.0 is what it forwards to.
  if (found->empty() && (base.rfind("libblas.so", 0) == 0 || base.rfind("libopenblas", 0) == 0)) *found = name;
  return 0;
}

// The value of `key=` in at::show_config()'s comma-separated build settings, "" if absent.
std::string build_setting(const std::string& config, const std::string& key) {
  const auto at = config.find(key + "=");
  if (at == std::string::npos) return "";
  const auto start = at + key.size() + 1;
  return config.substr(start, config.find_first_of(", \n", start) - start);
}

}  // namespace

void configure_compute_threads(int threads) {
  torch::set_num_threads(threads);
  if (auto set_blas = reinterpret_cast<SetThreads>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"))) set_blas(threads);
}

BlasInfo loaded_blas() {
  BlasInfo info;
  std::string path;
  dl_iterate_phdr(collect_blas, &path);
  if (!path.empty()) {
    std::error_code ec;
    const auto resolved = std::filesystem::canonical(path, ec);
    info.library = ec ? path : resolved.string();
  }
  info.variant = "unknown";
  for (const char* v : {"openmp", "pthread", "serial"})
    if (info.library.find(std::string("openblas-") + v) != std::string::npos) info.variant = v;
  if (auto get = reinterpret_cast<GetThreads>(dlsym(RTLD_DEFAULT, "openblas_get_num_threads"))) info.threads = get();
  if (auto get = reinterpret_cast<GetCoreName>(dlsym(RTLD_DEFAULT, "openblas_get_corename"))) info.core = get();
  if (const char* forced = std::getenv("OPENBLAS_CORETYPE")) info.core_env = forced;
  info.cpu_avx512 = __builtin_cpu_supports("avx512f");
  info.libtorch = TORCH_VERSION;
  info.torch_blas = build_setting(at::show_config(), "BLAS_INFO");
  return info;
}

std::string blas_core_warning(const BlasInfo& blas) {
  if (blas.core_env.empty() || blas.core.empty() || !blas.cpu_avx512) return "";
  // OpenBLAS's x86-64 cores with AVX-512 kernels (0.3.21 names; later ones add to the list).
  for (const char* wide : {"SkylakeX", "Cooperlake", "SapphireRapids"})
    if (blas.core == wide) return "";
  return "OPENBLAS_CORETYPE=" + blas.core_env + " in the environment makes OpenBLAS run its " + blas.core +
         " kernels on a CPU with AVX-512; unset it to let OpenBLAS choose (about 2x the GEMM rate on "
         "the project's dev machine, docs/BENCHMARKS.md)";
}

}  // namespace ppu
