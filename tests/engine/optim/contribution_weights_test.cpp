// OuterOptimizer::set_weights (quorum sync, docs/QUORUM_SYNC.md): each element's update is the
// weighted mean of its owners' deltas. Four Gloo ranks (threads) of a K = 4, N = 2 PPU job in
// which rank r's trainable elements moved by r + 1: slice 0 is ranks 0 and 2's, slice 1 ranks 1
// and 3's, unsliced parameters everyone's.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <chrono>
#include <functional>
#include <vector>

#include "../rank_threads.h"
#include "core/slice_plan.h"
#include "core/streaming_schedule.h"
#include "engine/comm/collectives.h"
#include "engine/model/transformer.h"
#include "engine/optim/outer_optimizer.h"

namespace ppu {
namespace {

const Config& job() {
  static const Config c = testing::tiny_job({"slicing.mode=mlp", "slicing.slices=2"});
  return c;
}

// θ after one sync of every fragment with `weights` by job rank (none: the counts), per rank.
std::vector<std::vector<torch::Tensor>> one_sync(const std::vector<double>& weights) {
  const Config& c = job();
  const StreamingSchedule schedule(c, c.model);
  std::vector<std::vector<torch::Tensor>> global(4);
  testing::run_ranks(4, [&](int r, const RunEnv& env) {
    torch::NoGradGuard no_grad;
    Collectives col(env.rendezvous, std::chrono::seconds(60));
    Transformer model(c.model, SlicePlan::from_config(c, 4, r), 0, torch::kCPU);
    OuterOptimizer outer(c.outer, model, schedule, col);
    if (!weights.empty()) {
      std::vector<SlicePlan> plans;
      plans.reserve(4);
      for (int k = 0; k < 4; ++k) plans.push_back(SlicePlan::from_config(c, 4, k));
      outer.set_job_plans(plans);
      outer.set_weights(weights);
    }
    for (const auto& t : model.trainable()) t.add_(static_cast<float>(r + 1));
    for (size_t f = 0; f < schedule.fragments().size(); ++f) outer.sync(static_cast<int>(f));
    for (const auto& g : outer.global()) global[r].push_back(g.clone());
  });
  return global;
}

// θ0 + lr (1 + μ) Δ: the first Nesterov step (zero momentum) on the mean delta Δ.
torch::Tensor first_step(const torch::Tensor& theta0, double mean_delta) {
  const Config& c = job();
  return theta0 + c.outer.lr * (1 + c.outer.momentum) * mean_delta;
}

// Calls check(parameter index, slice plan of rank 0, θ before, θ after) for every parameter.
void each_parameter(const std::vector<torch::Tensor>& after,
                    const std::function<void(const ParamSlice&, const torch::Tensor&, const torch::Tensor&)>& check) {
  const Config& c = job();
  const SlicePlan plan0 = SlicePlan::from_config(c, 4, 0);
  const Transformer fresh(c.model, plan0, 0, torch::kCPU);
  const auto before = fresh.fp32_weights();
  for (size_t i = 0; i < plan0.params().size(); ++i) check(plan0.params()[i], before[i], after[i]);
}

TEST(ContributionWeights, EqualWeightsAreTheCountNormalisationBitForBit) {
  // 0.5, not 1: the weighted path itself runs (every weight 1 takes the counts' path).
  const auto counted = one_sync({});
  const auto weighted = one_sync({0.5, 0.5, 0.5, 0.5});
  for (int r = 0; r < 4; ++r)
    for (size_t i = 0; i < counted[r].size(); ++i)
      EXPECT_TRUE(torch::equal(counted[r][i], weighted[r][i])) << "rank " << r << ", parameter " << i;
}

TEST(ContributionWeights, UnequalWeightsGiveEachElementItsOwnersWeightedMean) {
  const std::vector<double> w = {1.0, 0.25, 0.5, 1.0};
  const auto global = one_sync(w);
  for (int r = 1; r < 4; ++r)
    for (size_t i = 0; i < global[0].size(); ++i) EXPECT_TRUE(torch::equal(global[r][i], global[0][i]));
  const double slice0 = (w[0] * 1 + w[2] * 3) / (w[0] + w[2]);
  const double slice1 = (w[1] * 2 + w[3] * 4) / (w[1] + w[3]);
  const double everyone = (w[0] * 1 + w[1] * 2 + w[2] * 3 + w[3] * 4) / (w[0] + w[1] + w[2] + w[3]);
  each_parameter(global[0], [&](const ParamSlice& sl, const torch::Tensor& before, const torch::Tensor& after) {
    if (!sl.sliced()) {
      EXPECT_TRUE(torch::allclose(after, first_step(before, everyone), 1e-5, 1e-5)) << sl.param.name;
      return;
    }
    const int64_t half = sl.param.shape[sl.dim] / 2;
    EXPECT_TRUE(
        torch::allclose(after.narrow(sl.dim, 0, half), first_step(before.narrow(sl.dim, 0, half), slice0), 1e-5, 1e-5))
        << sl.param.name << " slice 0";
    EXPECT_TRUE(torch::allclose(after.narrow(sl.dim, half, half), first_step(before.narrow(sl.dim, half, half), slice1),
                                1e-5, 1e-5))
        << sl.param.name << " slice 1";
  });
}

TEST(ContributionWeights, ASliceWhoseOwnersAllWeighZeroKeepsItsValue) {
  const auto global = one_sync({0.0, 1.0, 0.0, 1.0});  // slice 0's owners trained nothing
  each_parameter(global[0], [&](const ParamSlice& sl, const torch::Tensor& before, const torch::Tensor& after) {
    if (!sl.sliced()) {
      EXPECT_TRUE(torch::allclose(after, first_step(before, 3.0), 1e-5, 1e-5)) << sl.param.name;
      return;
    }
    const int64_t half = sl.param.shape[sl.dim] / 2;
    EXPECT_TRUE(torch::equal(after.narrow(sl.dim, 0, half), before.narrow(sl.dim, 0, half))) << sl.param.name;
    EXPECT_TRUE(torch::allclose(after.narrow(sl.dim, half, half), first_step(before.narrow(sl.dim, half, half), 3.0),
                                1e-5, 1e-5))
        << sl.param.name;
  });
}

}  // namespace
}  // namespace ppu
