// gemm_peak: this machine's fp32 GEMM throughput through the BLAS and thread pool every
// LibTorch binary of the project uses (same link line as ppu-train), the denominator of the
// model-FLOPs utilisation that bench/pytorch_peer/run.py prints.
// Prints one JSON line: the best GFLOP/s over square sizes and repetitions, and each size's best.
#include <torch/torch.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <iostream>

#include "engine/cpu/blas_kernels.h"
#include "engine/cpu/compute_threads.h"

int main(int argc, char** argv) {
  ppu::run_widest_blas_kernels(argv);  // the kernels ppu-train runs; may re-execute this binary
  CLI::App app{"gemm_peak: best fp32 GEMM GFLOP/s with the project's BLAS"};
  int threads = 2, reps = 5;
  std::vector<int64_t> sizes{1024, 2048, 3072};
  app.add_option("--threads", threads, "compute threads (LibTorch and OpenBLAS)");
  app.add_option("--reps", reps, "timed repetitions per size");
  app.add_option("--sizes", sizes, "square matrix sizes");
  CLI11_PARSE(app, argc, argv);
  ppu::configure_compute_threads(threads);
  torch::NoGradGuard no_grad;
  nlohmann::json per_size = nlohmann::json::object();
  double best = 0;
  for (const int64_t n : sizes) {
    auto a = torch::randn({n, n}), b = torch::randn({n, n}), c = torch::empty({n, n});
    torch::mm_out(c, a, b);  // warm-up: page in, pack buffers
    double size_best = 0;
    for (int r = 0; r < reps; ++r) {
      const auto start = std::chrono::steady_clock::now();
      torch::mm_out(c, a, b);
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      size_best = std::max(size_best, 2.0 * n * n * n / s / 1e9);
    }
    per_size[std::to_string(n)] = size_best;
    best = std::max(best, size_best);
  }
  const auto blas = ppu::loaded_blas();
  std::cout << nlohmann::json{{"gflops", best},       {"per_size", per_size}, {"threads", threads},
                              {"blas", blas.library}, {"core", blas.core},    {"core_source", blas.core_source}}
                   .dump()
            << std::endl;
  return 0;
}
