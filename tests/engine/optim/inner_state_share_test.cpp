// InnerOptimizer::share_state (network.replacement_inner_state coowner) and save_fresh, on
// three Gloo ranks (threads): rank 0 has stepped three times, rank 1 (a co-owner of its slice,
// same shapes) once with other gradients, rank 2 trains tensors of other shapes. After rank 0's
// state is shared with rank 1 adopting it, rank 1's state has rank 0's digest, and one more
// step from equal weights and gradients gives both the same bits (moments and step count, the
// bias correction's, were taken); rank 2 took part without matching shapes and kept its own.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <chrono>
#include <sstream>
#include <vector>

#include "../rank_threads.h"
#include "engine/comm/collectives.h"
#include "engine/optim/inner_optimizer.h"

namespace ppu {
namespace {

InnerConfig adamw() {
  InnerConfig c;
  c.lr = 1e-2;
  c.warmup_steps = 0;
  c.grad_clip = 0;
  return c;
}

std::vector<torch::Tensor> leaves(const std::vector<std::vector<int64_t>>& shapes, double value) {
  std::vector<torch::Tensor> out;
  out.reserve(shapes.size());
  for (const auto& s : shapes) out.push_back(torch::full(s, value).requires_grad_(true));
  return out;
}

void step_with(InnerOptimizer& opt, std::vector<torch::Tensor>& params, int64_t t, double seed) {
  for (size_t i = 0; i < params.size(); ++i)
    params[i].mutable_grad() =
        torch::linspace(seed, seed + 1 + static_cast<double>(i), params[i].numel()).view(params[i].sizes());
  opt.step(t);
}

TEST(InnerStateShare, ACoownerAdoptsTheSourcesMomentsAndStep) {
  std::vector<uint64_t> before(3), after(3);
  std::vector<torch::Tensor> final0, final1;
  testing::run_ranks(3, [&](int r, const RunEnv& env) {
    Collectives col(env.rendezvous, std::chrono::seconds(60));
    auto params = r == 2 ? leaves({{7}}, 0.5) : leaves({{4, 3}, {5}}, 0.5);
    InnerOptimizer opt(adamw(), 100, params);
    const int steps = r == 0 ? 3 : 1;
    for (int t = 0; t < steps; ++t) step_with(opt, params, t, r == 0 ? 0.1 * (t + 1) : -2.0);
    before[r] = opt.state_digest();
    opt.share_state(col, /*root=*/0, /*adopt=*/r == 1);
    after[r] = opt.state_digest();
    if (r == 2) return;
    torch::NoGradGuard no_grad;
    for (auto& p : params) p.fill_(0.25);  // equal weights: only the state can make them differ
    step_with(opt, params, 3, 0.7);
    (r == 0 ? final0 : final1) = params;
  });
  EXPECT_NE(before[1], before[0]);
  EXPECT_EQ(after[0], before[0]);
  EXPECT_EQ(after[1], before[0]);
  EXPECT_EQ(after[2], before[2]);
  ASSERT_EQ(final0.size(), final1.size());
  for (size_t i = 0; i < final0.size(); ++i) EXPECT_TRUE(torch::equal(final0[i], final1[i])) << "tensor " << i;
}

TEST(InnerStateShare, WithoutAdoptingNobodysStateChanges) {
  std::vector<uint64_t> before(2), after(2);
  testing::run_ranks(2, [&](int r, const RunEnv& env) {
    Collectives col(env.rendezvous, std::chrono::seconds(60));
    auto params = leaves({{4, 3}, {5}}, 0.5);
    InnerOptimizer opt(adamw(), 100, params);
    step_with(opt, params, 0, r == 0 ? 0.3 : -1.0);
    before[r] = opt.state_digest();
    opt.share_state(col, 0, /*adopt=*/false);
    after[r] = opt.state_digest();
  });
  EXPECT_NE(before[0], before[1]);
  EXPECT_EQ(after, before);
}

// What a checkpoint's stand-in part holds when no co-owner is live: a stepped optimiser's
// fresh archive loads into a rank of the same plan (a resumed process) as no state at all.
TEST(InnerStateShare, AFreshArchiveLoadsAsNoState) {
  auto stepped_params = leaves({{4, 3}, {5}}, 0.5);
  InnerOptimizer stepped(adamw(), 100, stepped_params);
  step_with(stepped, stepped_params, 0, 0.3);
  auto archive_bytes = [](const auto& save) {
    torch::serialize::OutputArchive out;
    save(out);
    std::ostringstream bytes;
    out.save_to(bytes);
    return bytes.str();
  };
  const auto load = [](InnerOptimizer& opt, const std::string& bytes) {
    torch::serialize::InputArchive in;
    std::istringstream read(bytes);
    in.load_from(read);
    opt.load(in);
  };
  const InnerOptimizer never_stepped(adamw(), 100, leaves({{4, 3}, {5}}, 0.5));
  InnerOptimizer fresh(adamw(), 100, leaves({{4, 3}, {5}}, 0.5)), full(adamw(), 100, leaves({{4, 3}, {5}}, 0.5));
  load(fresh, archive_bytes([&](auto& a) { stepped.save_fresh(a); }));
  load(full, archive_bytes([&](auto& a) { stepped.save(a); }));
  EXPECT_EQ(fresh.state_digest(), never_stepped.state_digest());
  EXPECT_EQ(full.state_digest(), stepped.state_digest());  // the digest sees a loaded state
  EXPECT_NE(stepped.state_digest(), never_stepped.state_digest());
}

}  // namespace
}  // namespace ppu
