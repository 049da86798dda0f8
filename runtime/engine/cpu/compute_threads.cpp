#include "engine/cpu/compute_threads.h"

#include "engine/cpu/blas_kernels.h"

#include <ATen/Version.h>
#include <dlfcn.h>
#include <link.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <torch/torch.h>
#include <torch/version.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "common/thread_priority.h"

namespace ppu {

namespace {

using GetThreads = int (*)();
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
  const BlasKernels& kernels = blas_kernels();
  info.core = kernels.core;
  info.core_detected = kernels.core_detected;
  info.core_source = kernels.core_source;
  info.core_env = kernels.core_env;
  info.cpu_vectors = kernels.cpu_vectors;
  info.cpu_avx512 = __builtin_cpu_supports("avx512f");
  info.libtorch = TORCH_VERSION;
  info.torch_blas = build_setting(at::show_config(), "BLAS_INFO");
  return info;
}

std::string aten_cpu_capability() {
  // at::native::get_cpu_capability() is not exported; show_config() reports the same choice.
  const std::string config = at::show_config();
  const std::string label = "CPU capability usage: ";
  const auto at = config.find(label);
  if (at == std::string::npos) return "";
  const auto start = at + label.size();
  std::string level = config.substr(start, config.find('\n', start) - start);
  for (auto& ch : level) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return level == "no avx" ? "default" : level;
}

std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("model name", 0) != 0) continue;
    const auto colon = line.find(':');
    if (colon == std::string::npos) break;
    const auto start = line.find_first_not_of(" \t", colon + 1);
    return start == std::string::npos ? "" : line.substr(start);
  }
  return "";
}

std::string blas_core_reason(const BlasInfo& blas) {
  if (blas.core_source == "environment") return "(OPENBLAS_CORETYPE=" + blas.core_env + ")";
  if (blas.core_source == "runtime")
    return "(chosen by ppu: OpenBLAS detected " + blas.core_detected + " on a CPU with " + blas.cpu_vectors + ")";
  return "(OpenBLAS's detection)";
}

int yield_cpu_to_control_plane(int steps) {
  if (const auto nice = lower_thread_priority(steps)) return *nice;
  spdlog::warn("could not lower the training thread's priority ({}): on a shared CPU its heartbeat may starve",
               std::strerror(errno));
  errno = 0;
  return getpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)));
}

}  // namespace ppu
