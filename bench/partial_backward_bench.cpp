// partial_backward_bench: measures, side by side in one process, the backward time of PPU
// slicings against a full backward on the same model and batch, and prints each ratio next to
// the one Appendix C predicts (backward FLOPs with rho_attn, rho_mlp over a full backward).
// Repetitions of all configurations are interleaved so that machine noise hits them alike;
// the median of each is reported. A second, separate pass (--breakdown) times every matmul
// kernel of each backward through ATen's RecordFunction, splitting the backward into GEMM time
// and everything else (its observer overhead stays out of the ratios above).
#include <ATen/record_function.h>
#include <torch/torch.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "core/cost_model.h"
#include "core/model_spec.h"
#include "core/slice_plan.h"
#include "engine/cpu/blas_kernels.h"
#include "engine/cpu/compute_threads.h"
#include "engine/model/transformer.h"

using namespace ppu;

namespace {

// Wall time spent inside mm / addmm / bmm / baddbmm (these never nest inside each other).
struct GemmTimer {
  struct Start : at::ObserverContext {
    std::chrono::steady_clock::time_point at;
  };
  static inline double seconds = 0;
  static bool is_gemm(const char* name) {
    return std::strcmp(name, "aten::mm") == 0 || std::strcmp(name, "aten::addmm") == 0 ||
           std::strcmp(name, "aten::bmm") == 0 || std::strcmp(name, "aten::baddbmm") == 0;
  }
  static std::unique_ptr<at::ObserverContext> enter(const at::RecordFunction& fn) {
    if (!is_gemm(fn.name())) return nullptr;
    auto ctx = std::make_unique<Start>();
    ctx->at = std::chrono::steady_clock::now();
    return ctx;
  }
  static void leave(const at::RecordFunction&, at::ObserverContext* ctx) {
    if (ctx)
      seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - static_cast<Start*>(ctx)->at).count();
  }
  GemmTimer()
      : handle(at::addGlobalCallback(at::RecordFunctionCallback(&enter, &leave).scopes({at::RecordScope::FUNCTION}))) {}
  ~GemmTimer() { at::removeCallback(handle); }
  at::CallbackHandle handle;
};

}  // namespace

int main(int argc, char** argv) {
  ppu::run_widest_blas_kernels(argv);  // the kernels ppu-train runs; may re-execute this binary
  CLI::App app{"partial_backward_bench: PPU backward time vs full backward, next to Appendix C"};
  ModelSpec m = *model_preset("small");
  int batch = 8, reps = 7, threads = 0;
  bool breakdown = false;
  std::string device_name = "cpu";
  m.vocab = 4096;
  app.add_option("--layers", m.layers);
  app.add_option("--d-model", m.d_model);
  app.add_option("--heads", m.heads);
  app.add_option("--vocab", m.vocab);
  app.add_option("--seq-len", m.seq_len);
  app.add_option("--batch", batch);
  app.add_option("--reps", reps);
  app.add_option("--threads", threads, "intra-op threads (0: LibTorch default)");
  app.add_option("--device", device_name, "cpu | cuda (CUDA models use fused attention on LibTorch 2.x)");
  app.add_flag("--breakdown", breakdown, "also split each backward into GEMM and other time (separate pass)");
  CLI11_PARSE(app, argc, argv);
  const torch::Device device(device_name);
  if (threads > 0) configure_compute_threads(threads);

  struct Variant {
    const char* name;
    SliceMode mode;
    int slices;
    std::vector<double> backward, step;
  };
  std::vector<Variant> variants = {{"full backward", SliceMode::None, 1, {}, {}},
                                   {"1/2 MLPs", SliceMode::Mlp, 2, {}, {}},
                                   {"1/4 MLPs", SliceMode::Mlp, 4, {}, {}},
                                   {"1/8 MLPs", SliceMode::Mlp, 8, {}, {}},
                                   {"1/2 MLPs + 1/2 heads", SliceMode::MlpHeads, 2, {}, {}},
                                   {"1/4 MLPs + 1/4 heads", SliceMode::MlpHeads, 4, {}, {}}};
  variants.erase(
      std::remove_if(variants.begin(), variants.end(),
                     [&](const Variant& v) { return m.heads % v.slices != 0 && v.mode == SliceMode::MlpHeads; }),
      variants.end());

  auto gen = at::detail::createCPUGenerator(0);
  const auto tokens = at::randint(0, m.vocab, {batch, m.seq_len + 1}, gen, torch::kLong).to(device);
  std::vector<Transformer> models;
  models.reserve(variants.size());
  for (const auto& v : variants) models.emplace_back(m, SlicePlan(m, v.mode, v.slices, v.slices, 0), 0, device);
  // CUDA runs asynchronously: wait for the device before reading the clock (no-op on CPU).
  auto sync = [&](const torch::Tensor& t) {
    if (device.is_cuda()) (void)t.sum().item<double>();
  };

  using Clock = std::chrono::steady_clock;
  for (int rep = -1; rep < reps; ++rep) {  // rep -1 warms up
    for (size_t i = 0; i < variants.size(); ++i) {
      const auto t0 = Clock::now();
      auto loss = models[i].loss(tokens);
      sync(loss);
      const auto t1 = Clock::now();
      loss.backward();
      sync(models[i].trainable().back().grad());
      const auto t2 = Clock::now();
      for (const auto& p : models[i].trainable()) p.mutable_grad() = torch::Tensor();
      if (rep < 0) continue;
      variants[i].backward.push_back(std::chrono::duration<double>(t2 - t1).count());
      variants[i].step.push_back(std::chrono::duration<double>(t2 - t0).count());
    }
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  std::printf(
      "model: %d layers, d=%d, %d heads, vocab %d, seq %d, batch %d; %d interleaved reps, %d threads, device %s\n",
      m.layers, m.d_model, m.heads, m.vocab, m.seq_len, batch, reps, torch::get_num_threads(), device.str().c_str());
  std::printf("%-24s %12s %14s %16s %14s %16s\n", "configuration", "backward s", "bwd / full", "Appendix C bwd",
              "step / full", "Appendix C step");
  const double full_bwd = median(variants[0].backward), full_step = median(variants[0].step);
  for (size_t i = 0; i < variants.size(); ++i) {
    const auto& plan = models[i].plan();
    const StepFlops f = step_flops(m, batch, m.seq_len, plan.rho_attn(), plan.rho_mlp());
    std::printf("%-24s %12.4f %14.3f %16.3f %14.3f %16.3f\n", variants[i].name, median(variants[i].backward),
                median(variants[i].backward) / full_bwd, f.backward / f.backward_full,
                median(variants[i].step) / full_step, f.executed() / f.full());
  }
  if (!breakdown || device.is_cuda()) return 0;

  // Per-op split of the backward: GEMM kernels vs the rest (softmax, norms, activations, copies,
  // embedding and loss backward, autograd bookkeeping). Medians over the same number of reps.
  std::vector<std::vector<double>> gemm(variants.size()), other(variants.size());
  for (int rep = -1; rep < reps; ++rep) {
    for (size_t i = 0; i < variants.size(); ++i) {
      auto loss = models[i].loss(tokens);
      GemmTimer timer;
      GemmTimer::seconds = 0;
      const auto t0 = Clock::now();
      loss.backward();
      const double total = std::chrono::duration<double>(Clock::now() - t0).count();
      for (const auto& p : models[i].trainable()) p.mutable_grad() = torch::Tensor();
      if (rep < 0) continue;
      gemm[i].push_back(GemmTimer::seconds);
      other[i].push_back(total - GemmTimer::seconds);
    }
  }
  std::printf("\nbackward breakdown (separate pass, op timing on):\n%-24s %10s %10s %12s %12s %14s\n", "configuration",
              "GEMM s", "other s", "GEMM GFLOP/s", "other / full", "GEMM / full");
  const double full_gemm = median(gemm[0]), full_other = median(other[0]);
  for (size_t i = 0; i < variants.size(); ++i) {
    const auto& plan = models[i].plan();
    const StepFlops f = step_flops(m, batch, m.seq_len, plan.rho_attn(), plan.rho_mlp());
    std::printf("%-24s %10.4f %10.4f %12.1f %12.3f %14.3f\n", variants[i].name, median(gemm[i]), median(other[i]),
                f.backward / median(gemm[i]) / 1e9, median(other[i]) / full_other, median(gemm[i]) / full_gemm);
  }
  return 0;
}
