// The fused AdamW of InnerOptimizer against LibTorch's own torch::optim::AdamW, on the layouts a
// rank trains: whole matrices, row slices and column slices (strided views of a full weight),
// vectors without weight decay, with and without gradient clipping; and its state survives a save/load round trip.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>

#include "core/config.h"
#include "engine/model/partial_linear.h"
#include "engine/optim/fused_adamw.h"
#include "engine/optim/inner_optimizer.h"

using namespace ppu;

namespace {

struct Params {
  torch::Tensor full_row, full_col;  // the full weights the slices are views of
  std::vector<torch::Tensor> trainable;
};

Params make_params(uint64_t seed) {
  auto gen = at::detail::createCPUGenerator(seed);
  Params p;
  p.full_row = at::normal(0, 1, {12, 8}, gen);
  p.full_col = at::normal(0, 1, {8, 12}, gen);
  p.trainable = {at::normal(0, 1, {6, 5}, gen).requires_grad_(true),  // whole matrix
                 make_weight_slice(p.full_row, {0, 3, 6}).trainable,  // rows
                 make_weight_slice(p.full_col, {1, 4, 8}).trainable,  // columns: strided
                 at::normal(0, 1, {7}, gen).requires_grad_(true)};    // vector, no decay
  return p;
}

void set_grads(const std::vector<torch::Tensor>& params, int step) {
  auto gen = at::detail::createCPUGenerator(100 + step);
  for (const auto& p : params) p.mutable_grad() = at::normal(0, 1, p.sizes(), gen);
}

}  // namespace

// grad_clip 0: no clipping; 1: the random gradients' norm (~10) is clipped, the factor folded
// into the fused pass; 1000: clip_grad_norm_'s factor is clamped to 1.
class FusedAdamWClip : public ::testing::TestWithParam<double> {};

TEST_P(FusedAdamWClip, MatchesLibTorchAdamWAfterClipGradNorm) {
  InnerConfig c;
  c.lr = 1e-2;
  c.warmup_steps = 0;
  c.schedule = LrScheduleKind::Constant;
  c.grad_clip = GetParam();
  auto ours = make_params(1), ref = make_params(1);
  ASSERT_FALSE(ours.trainable[2].is_contiguous());
  InnerOptimizer inner(c, 10, ours.trainable);
  std::vector<torch::Tensor> decay(ref.trainable.begin(), ref.trainable.begin() + 3), no_decay{ref.trainable[3]};
  auto opts = [&](double wd) {
    return std::make_unique<torch::optim::AdamWOptions>(
        torch::optim::AdamWOptions(c.lr).betas({c.beta1, c.beta2}).eps(c.eps).weight_decay(wd));
  };
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(decay, opts(c.weight_decay));
  groups.emplace_back(no_decay, opts(0.0));
  torch::optim::AdamW reference(groups, torch::optim::AdamWOptions(c.lr));
  for (int step = 0; step < 5; ++step) {
    set_grads(ours.trainable, step);
    set_grads(ref.trainable, step);
    inner.step(step);
    if (c.grad_clip > 0) torch::nn::utils::clip_grad_norm_(ref.trainable, c.grad_clip);
    reference.step();
  }
  // Derived tolerance: the fused pass runs LibTorch's unfused sequence of float operations, but
  // not every rounding is the same on every CPU: ATen's add_(x, alpha) is an FMA (one rounding)
  // in its AVX2/AVX-512 kernels and two roundings in its default one, ours never contracts, and
  // clip_grad_norm_ sums the norm in another order (AdamW's m/√v cancels a relative change of
  // the gradient's scale to first order). Each of the 5 steps can therefore differ by about one
  // rounding of p (½ulp) and a few of the update (|lr·m/√v| ≤ 1e-2 ≪ |p|): ≲ 3 ulp after 5
  // steps. rtol 1e-6 is 8–17 ulp of |p| (ulp = 2^-23·|p| rounded down to a power of two), atol
  // 1e-7 covers entries near 0.
  constexpr double kRtol = 1e-6, kAtol = 1e-7;
  for (size_t i = 0; i < ours.trainable.size(); ++i)
    EXPECT_TRUE(torch::allclose(ours.trainable[i], ref.trainable[i], kRtol, kAtol))
        << "param " << i << " max diff " << (ours.trainable[i] - ref.trainable[i]).abs().max().item<float>();
  // Frozen rows/columns of the full weights are untouched by the update of their slices.
  EXPECT_TRUE(torch::equal(ours.full_col.narrow(1, 0, 4), make_params(1).full_col.narrow(1, 0, 4)));
  EXPECT_TRUE(torch::equal(ours.full_row.narrow(0, 6, 6), make_params(1).full_row.narrow(0, 6, 6)));
  EXPECT_EQ(inner.state_bytes(), 2 * 4 * (30 + 24 + 32 + 7));
}

INSTANTIATE_TEST_SUITE_P(InnerOptimizer, FusedAdamWClip, ::testing::Values(0.0, 1.0, 1000.0));

TEST(InnerOptimizer, StateRoundTripsThroughACheckpoint) {
  InnerConfig c;
  c.warmup_steps = 0;
  auto a = make_params(2), b = make_params(2);
  InnerOptimizer first(c, 10, a.trainable), second(c, 10, b.trainable);
  for (int step = 0; step < 3; ++step) {
    set_grads(a.trainable, step);
    set_grads(b.trainable, step);
    first.step(step);
    second.step(step);
  }
  torch::serialize::OutputArchive out;
  first.save(out);
  std::stringstream buffer;
  out.save_to(buffer);
  auto c_params = make_params(2);
  for (size_t i = 0; i < c_params.trainable.size(); ++i) {
    torch::NoGradGuard no_grad;
    c_params.trainable[i].copy_(a.trainable[i]);
  }
  InnerOptimizer restored(c, 10, c_params.trainable);
  torch::serialize::InputArchive in;
  in.load_from(buffer);
  restored.load(in);
  set_grads(c_params.trainable, 3);
  set_grads(b.trainable, 3);
  restored.step(3);
  second.step(3);
  for (size_t i = 0; i < b.trainable.size(); ++i) EXPECT_TRUE(torch::equal(c_params.trainable[i], b.trainable[i])) << i;
}

// A background checkpoint takes the writer with TensorCopy::Cloned and runs it later, on the
// upload thread, while training goes on: what it writes is the state when the writer was taken,
// whatever steps come before it runs.
TEST(InnerOptimizer, AClonedSaveIsASnapshotThatLaterStepsLeaveAlone) {
  {  // AdamW (this runtime's SGD has no momentum: no state to copy)
    InnerConfig c;
    c.warmup_steps = 0;
    auto p = make_params(4);
    InnerOptimizer inner(c, 10, p.trainable);
    const auto step_to = [&](int from, int to) {
      for (int step = from; step < to; ++step) {
        set_grads(p.trainable, step);
        inner.step(step);
      }
    };
    const auto restored_digest = [&](torch::serialize::OutputArchive& archive) {
      std::stringstream buffer;
      archive.save_to(buffer);
      auto q = make_params(4);
      InnerOptimizer restored(c, 10, q.trainable);
      torch::serialize::InputArchive in;
      in.load_from(buffer);
      restored.load(in);
      return restored.state_digest();
    };
    step_to(0, 3);
    const uint64_t at_save = inner.state_digest();
    const ArchiveWriter later = inner.writer(TensorCopy::Cloned);
    step_to(3, 5);
    ASSERT_NE(inner.state_digest(), at_save);  // the later steps changed the state in place
    torch::serialize::OutputArchive cloned;
    later(cloned);
    EXPECT_EQ(restored_digest(cloned), at_save);
  }
}

TEST(InnerOptimizer, WeightDecayExclusionsFollowTheConfig) {
  // With zero gradients AdamW's step is pure decoupled decay: p *= 1 - lr * wd where decay
  // applies, p unchanged elsewhere. Roles: tied embedding, a norm, a matrix.
  for (const bool embedding : {true, false})
    for (const bool norms : {true, false}) {
      InnerConfig c;
      c.lr = 0.1;
      c.weight_decay = 0.5;
      c.warmup_steps = 0;
      c.schedule = LrScheduleKind::Constant;
      c.grad_clip = 0;
      c.decay_embedding = embedding;
      c.decay_norms = norms;
      const std::vector<ParamRole> roles = {ParamRole::Embedding, ParamRole::Norm, ParamRole::MlpUp};
      std::vector<torch::Tensor> params = {torch::ones({4, 3}).requires_grad_(true),
                                           torch::ones({3}).requires_grad_(true),
                                           torch::ones({6, 3}).requires_grad_(true)};
      std::vector<bool> mask;
      mask.reserve(roles.size());
      for (auto r : roles) mask.push_back(applies_weight_decay(c, r));
      InnerOptimizer inner(c, 10, params, mask);
      for (auto& p : params) p.mutable_grad() = torch::zeros_like(p);
      inner.step(0);
      const std::vector<bool> want = {embedding, norms, true};
      for (size_t i = 0; i < params.size(); ++i) {
        const float expected = want[i] ? 1.0f - 0.1f * 0.5f : 1.0f;
        // Exact up to one rounding of the decay factor (1 − lr·wd in double, then float): ulp(0.95f)
        // is 6e-8 < 1e-7. (Both sides round to the same float today.)
        EXPECT_TRUE(torch::allclose(params[i].detach(), torch::full_like(params[i], expected), 0, 1e-7))
            << "param " << i << " embedding=" << embedding << " norms=" << norms;
      }
    }
}

// The vectorised update (AVX2 where the CPU has it) rounds exactly like one float operation
// at a time: bit-identical to the scalar sequence, including the tails of a row (n % 8 != 0).
// Which clone runs depends on the CPU (the avx2 one on every AVX2 or AVX-512 CPU, the default
// one elsewhere); both are exact because target "avx2" does not enable FMA, so neither the clone
// nor this scalar loop is contracted. (A build with -mfma or -march=native would let GCC contract
// them differently; the project sets neither.)
TEST(InnerOptimizer, FusedAdamWIsBitIdenticalToTheScalarSequence) {
  torch::manual_seed(3);
  const AdamWHyper h{1e-3, 0.9, 0.95, 1e-8, 0.1, 7};
  for (const int64_t n : {1, 7, 8, 9, 1000, 100003}) {
    auto p = torch::randn({n}), g = torch::randn({n}), m = torch::randn({n}) * 0.1, v = torch::rand({n}) * 0.01;
    auto ep = p.clone(), em = m.clone(), ev = v.clone();
    const float decay = static_cast<float>(1 - h.lr * h.weight_decay), b1 = 0.9F, b2 = 0.95F;
    const auto omb1 = static_cast<float>(1 - h.beta1), omb2 = static_cast<float>(1 - h.beta2);
    const auto sqrt_bc2 = static_cast<float>(std::sqrt(1 - std::pow(h.beta2, 7.0)));
    const auto neg_step = static_cast<float>(-h.lr / (1 - std::pow(h.beta1, 7.0)));
    const auto eps = static_cast<float>(h.eps);
    auto* P = ep.data_ptr<float>();
    auto* M = em.data_ptr<float>();
    auto* V = ev.data_ptr<float>();
    const auto* G = g.data_ptr<float>();
    for (int64_t i = 0; i < n; ++i) {
      M[i] = M[i] * b1 + omb1 * G[i];
      V[i] = V[i] * b2 + omb2 * G[i] * G[i];
      P[i] = P[i] * decay + neg_step * M[i] / (std::sqrt(V[i]) / sqrt_bc2 + eps);
    }
    ASSERT_TRUE(fused_adamw_step(p, g, m, v, h));
    EXPECT_TRUE(torch::equal(m, em)) << n;
    EXPECT_TRUE(torch::equal(v, ev)) << n;
    EXPECT_TRUE(torch::equal(p, ep)) << n << ": max diff " << (p - ep).abs().max().item<float>();
  }
}
