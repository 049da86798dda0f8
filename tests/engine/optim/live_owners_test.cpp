// OuterOptimizer::set_owners (live recovery): with ranks missing, an element's delta is divided
// by its live owners, and an element without any keeps its value and its momentum. Four Gloo
// ranks (threads) of a K = 4, N = 2 PPU job: a first sync with every rank live gives every
// parameter momentum; then ranks 0 and 2 (slice 0's owners) are "lost" — they stay in the
// exchange but add no delta — and the others sync with only {1, 3} as owners.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <chrono>
#include <sstream>
#include <vector>

#include "../rank_threads.h"
#include "core/slice_plan.h"
#include "core/streaming_schedule.h"
#include "engine/comm/collectives.h"
#include "engine/model/transformer.h"
#include "engine/optim/outer_optimizer.h"
#include "engine/state/checkpoint_format.h"

namespace ppu {
namespace {

struct State {
  std::vector<torch::Tensor> global, momentum;
};

// θ and the momentum, read back through the optimiser's own checkpoint section.
State state_of(const OuterOptimizer& outer, const Transformer& model) {
  torch::serialize::OutputArchive out;
  outer.save(out);
  std::ostringstream bytes;
  out.save_to(bytes);
  torch::serialize::InputArchive in;
  std::istringstream read(bytes.str());
  in.load_from(read);
  State s;
  for (const auto& p : model.layout()) {
    torch::Tensor g, m;
    in.read(checkpoint_key::outer_global(p.name), g);
    in.read(checkpoint_key::outer_momentum(p.name), m);
    s.global.push_back(g);
    s.momentum.push_back(m);
  }
  return s;
}

TEST(LiveOwners, DeltasAreDividedByLiveOwnersAndUnownedElementsKeepValueAndMomentum) {
  const Config c = testing::tiny_job({"slicing.mode=mlp", "slicing.slices=2"});
  const StreamingSchedule schedule(c, c.model);
  auto sync_all = [&](OuterOptimizer& outer) {
    for (size_t f = 0; f < schedule.fragments().size(); ++f) outer.sync(static_cast<int>(f));
  };
  std::vector<State> before(4), after(4);
  std::vector<double> coverage(4);
  const SlicePlan plan0 = SlicePlan::from_config(c, 4, 0);
  testing::run_ranks(4, [&](int r, const RunEnv& env) {
    torch::NoGradGuard no_grad;
    Collectives col(env.rendezvous, std::chrono::seconds(60));
    Transformer model(c.model, SlicePlan::from_config(c, 4, r), 0, torch::kCPU);
    OuterOptimizer outer(c.outer, model, schedule, col);
    for (const auto& t : model.trainable()) t.add_(static_cast<float>(r + 1));
    sync_all(outer);  // every rank live: momentum everywhere
    before[r] = state_of(outer, model);
    outer.set_owners({SlicePlan::from_config(c, 4, 1), SlicePlan::from_config(c, 4, 3)}, 4);
    coverage[r] = outer.min_coverage();
    if (r == 1 || r == 3)
      for (const auto& t : model.trainable()) t.add_(static_cast<float>(r + 1));
    sync_all(outer);
    after[r] = state_of(outer, model);
  });
  EXPECT_EQ(coverage[0], 0.0) << "slice 0 has no live owner";
  const double lr = c.outer.lr, mu = c.outer.momentum;
  for (size_t i = 0; i < plan0.params().size(); ++i) {
    const auto& sl = plan0.params()[i];
    for (int r = 1; r < 4; ++r) EXPECT_TRUE(torch::equal(after[r].global[i], after[0].global[i])) << sl.param.name;
    // The live owners' mean delta, (2 + 4) / 2 = 3, wherever an element has one; Nesterov on it.
    const auto m0 = before[0].momentum[i], g0 = before[0].global[i];
    const auto g = torch::full_like(g0, -3.0);
    const auto m1 = m0 * mu + g;
    const auto want_global = g0 - lr * (g + mu * m1);
    if (!sl.sliced()) {
      EXPECT_TRUE(torch::allclose(after[0].global[i], want_global, 1e-5, 1e-5)) << sl.param.name;
      EXPECT_TRUE(torch::allclose(after[0].momentum[i], m1, 1e-5, 1e-5)) << sl.param.name;
      continue;
    }
    const int64_t half = sl.param.shape[sl.dim] / 2;
    // Slice 0 (ranks 0 and 2, lost): exactly as before, momentum included.
    EXPECT_TRUE(torch::equal(after[0].global[i].narrow(sl.dim, 0, half), g0.narrow(sl.dim, 0, half))) << sl.param.name;
    EXPECT_TRUE(torch::equal(after[0].momentum[i].narrow(sl.dim, 0, half), m0.narrow(sl.dim, 0, half)))
        << sl.param.name;
    EXPECT_GT(m0.narrow(sl.dim, 0, half).abs().max().item<double>(), 0) << "the kept momentum is not zero";
    // Slice 1 (ranks 1 and 3, live): the live owners' mean.
    EXPECT_TRUE(torch::allclose(after[0].global[i].narrow(sl.dim, half, half), want_global.narrow(sl.dim, half, half),
                                1e-5, 1e-5))
        << sl.param.name;
  }
}

}  // namespace
}  // namespace ppu
