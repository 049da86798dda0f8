// Test helper: count-vector normalisation across K ranks (Gloo, one thread per rank). Each rank
// moves every element it trains by k + 1 and runs one exchange of the outer optimiser; the
// applied update must then be the mean over each element's owners. Shared by the CPU
// equivalences (distributed_test.cpp) and the GPU suite (gpu/cuda_test.cpp), which builds the
// models on a CUDA device and in bf16.
#pragma once

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <chrono>
#include <functional>
#include <vector>

#include "core/config.h"
#include "core/slice_plan.h"
#include "core/streaming_schedule.h"
#include "engine/comm/collectives.h"
#include "engine/model/transformer.h"
#include "engine/optim/outer_optimizer.h"
#include "rank_threads.h"

namespace ppu::testing {

// What move_by_rank_then recorded, per rank: θ before, the global θ after and θ_k after, each
// as fp32 host tensors in layout order (bf16 models: their fp32 values, masters where trainable),
// and the device of every working weight and master (on the model's device, whatever θ lives on).
struct MovedByRank {
  using PerRank = std::vector<std::vector<torch::Tensor>>;
  explicit MovedByRank(int ranks) : world(ranks), before(ranks), after(ranks), local(ranks), devices(ranks) {}
  int world;
  PerRank before, after, local;
  std::vector<std::vector<torch::Device>> devices;
};

// K ranks of `model_config` (its slicing.slices = N) with one fragment, their models on `device`
// in `dtype`. Rank k moves every element it trains by k + 1 (bf16: its fp32 masters, which the
// deltas are taken from), then `exchange` (the outer sync or the final average) runs on the outer
// optimiser of `outer_config`; `inspect` sees each rank's outer optimiser afterwards.
inline MovedByRank move_by_rank_then(const Config& model_config, const OuterConfig& outer_config,
                                     const std::function<void(OuterOptimizer&)>& exchange,
                                     const std::function<void(int, OuterOptimizer&)>& inspect = {}, int world = 4,
                                     torch::Device device = torch::kCPU, torch::ScalarType dtype = torch::kFloat32) {
  const StreamingSchedule schedule(model_config, model_config.model);
  MovedByRank run(world);
  auto on_host = [](const std::vector<torch::Tensor>& tensors) {
    std::vector<torch::Tensor> out;
    for (const auto& t : tensors) out.push_back(t.detach().cpu().clone());
    return out;
  };
  run_ranks(world, [&](int r, const RunEnv& env) {
    torch::NoGradGuard no_grad;
    Collectives col(env.rendezvous, std::chrono::seconds(60));
    Transformer model(model_config.model, SlicePlan::from_config(model_config, world, r), 0, device, dtype);
    OuterOptimizer outer(outer_config, model, schedule, col);
    run.before[r] = on_host(model.fp32_weights());
    for (const auto& t : model.mixed_precision() ? model.masters() : model.trainable())
      t.add_(static_cast<float>(r + 1));
    exchange(outer);
    for (const auto& g : outer.global()) run.after[r].push_back(g.clone());
    run.local[r] = on_host(model.fp32_weights());
    for (const auto& w : model.weights()) run.devices[r].push_back(w.device());
    for (const auto& m : model.masters()) run.devices[r].push_back(m.device());
    if (inspect) inspect(r, outer);
  });
  return run;
}

// The applied update is the mean over each element's owners: slice n is owned by ranks
// {n, n + N, ..., n + K − N}, which moved it by n + 1, n + N + 1, ..., so it moves by
// n + 1 + (K − N) / 2 (K = 4, N = 2: slice 0 by 2, slice 1 by 3); unsliced elements by the mean
// over all ranks, (K + 1) / 2. Every rank holds the same global θ.
//
// Derived tolerance: θ + (k + 1), the delta θ_k − θ, the owners' fp32 sum, the exact division by
// m (a power of two here), θ + Δ and "after − before" are each rounded once (plain fp32 adds, no
// kernel choice involved; on a GPU the same IEEE fp32 adds). At K = 8 the values are below 16
// (|θ| ≤ 1: LayerNorm weights; ½ulp ≤ 4.8e-7) and the sum of eight below 64 (≤ 7 additions,
// ½ulp ≤ 1.9e-6): at most 4·4.8e-7 + 7·1.9e-6 ≈ 1.5e-5 on any CPU; K = 4 stays below 2.4e-6.
// 5e-5 is 3× the K = 8 bound.
constexpr double kOwnerMeanAtol = 5e-5;

inline void expect_owner_mean(const Config& model_config, const MovedByRank& run) {
  const int k = run.world, n_slices = model_config.slicing.slices;
  const SlicePlan plan0 = SlicePlan::from_config(model_config, k, 0);
  for (size_t i = 0; i < plan0.params().size(); ++i) {
    const auto& sl = plan0.params()[i];
    const auto moved = run.after[0][i] - run.before[0][i];
    for (int r = 1; r < k; ++r)
      EXPECT_TRUE(torch::equal(run.after[r][i], run.after[0][i])) << "ranks disagree on " << sl.param.name;
    if (!sl.sliced()) {
      EXPECT_TRUE(torch::allclose(moved, torch::full_like(moved, (k + 1) / 2.0), 0, kOwnerMeanAtol)) << sl.param.name;
      continue;
    }
    const int64_t extent = sl.param.shape[sl.dim];
    for (int n = 0; n < n_slices; ++n) {
      const auto part = moved.narrow(sl.dim, n * extent / n_slices, extent / n_slices);
      const double owners_mean = n + 1 + (k - n_slices) / 2.0;
      EXPECT_TRUE(torch::allclose(part, torch::full_like(part, owners_mean), 0, kOwnerMeanAtol))
          << sl.param.name << " slice " << n << " of " << n_slices << " at K = " << k;
    }
  }
}

}  // namespace ppu::testing
