// The heart of the method (DESIGN.md): frozen slices get a full input gradient but no weight
// gradient, no grad buffer and no optimiser state; trainable slices get exactly the gradient
// full autograd would give them; and the executed backward matmuls match Appendix C.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "core/cost_model.h"
#include "engine/matmul_flop_counter.h"
#include "engine/transformer.h"

using namespace ppu;

namespace {

ModelSpec spec() {
  ModelSpec m = *model_preset("tiny");  // 2 layers, d 64, 4 heads, vocab 256
  m.seq_len = 16;
  return m;
}

torch::Tensor batch(uint64_t seed, int64_t B = 3, int64_t S = 16) {
  auto gen = at::detail::createCPUGenerator(seed);
  return at::randint(0, spec().vocab, {B, S + 1}, gen, torch::kLong);
}

struct Case {
  SliceMode mode;
  int world, slices, rank;
};

std::vector<Case> cases() {
  return {{SliceMode::Mlp, 2, 2, 1},      {SliceMode::Mlp, 4, 4, 2},      {SliceMode::Mlp, 8, 8, 5},
          {SliceMode::MlpHeads, 2, 2, 0}, {SliceMode::MlpHeads, 4, 4, 3}, {SliceMode::MlpHeads, 8, 4, 6}};
}

std::string describe(const Case& c) {
  return slice_mode_name(c.mode) + " N=" + std::to_string(c.slices) + " rank=" + std::to_string(c.rank);
}

}  // namespace

TEST(PartialBackward, TrainableSliceGradientsEqualFullAutograd) {
  const auto tokens = batch(1);
  Transformer reference(spec(), SlicePlan(spec(), SliceMode::None, 1, 1, 0), 7);
  reference.loss(tokens).backward();
  for (const auto& c : cases()) {
    Transformer model(spec(), SlicePlan(spec(), c.mode, c.world, c.slices, c.rank), 7);
    model.loss(tokens).backward();
    int sliced = 0;
    for (size_t i = 0; i < model.layout().size(); ++i) {
      const auto& sl = model.plan().params()[i];
      const auto& g = model.trainable()[i].grad();
      ASSERT_TRUE(g.defined()) << describe(c) << " " << sl.param.name;
      auto want = reference.trainable()[i].grad();
      if (sl.sliced()) {
        want = want.narrow(sl.dim, sl.begin, sl.end - sl.begin);
        ++sliced;
      }
      ASSERT_EQ(g.sizes(), want.sizes()) << describe(c) << " " << sl.param.name;
      EXPECT_TRUE(torch::allclose(g, want, 1e-4, 1e-6)) << describe(c) << " " << sl.param.name
                                                          << " max diff " << (g - want).abs().max().item<float>();
    }
    EXPECT_EQ(sliced, spec().layers * (c.mode == SliceMode::MlpHeads ? 5 : 2)) << describe(c);
  }
}

TEST(PartialBackward, InputGradientEqualsFullModel) {
  // Through the model: the embedding gradient is the sum of every block's input Jacobian.
  const auto tokens = batch(2);
  Transformer reference(spec(), SlicePlan(spec(), SliceMode::None, 1, 1, 0), 3);
  reference.loss(tokens).backward();
  const auto want = reference.trainable()[0].grad();
  for (const auto& c : cases()) {
    Transformer model(spec(), SlicePlan(spec(), c.mode, c.world, c.slices, c.rank), 3);
    model.loss(tokens).backward();
    EXPECT_TRUE(torch::allclose(model.trainable()[0].grad(), want, 1e-4, 1e-6)) << describe(c);
  }
  // And for one layer directly: dL/dx through a frozen-row and a frozen-column weight.
  torch::manual_seed(0);
  auto weight = torch::randn({32, 16});
  auto x = torch::randn({5, 16}, torch::requires_grad());
  auto x_ref = x.detach().clone().requires_grad_(true);
  for (int dim : {0, 1}) {
    const int64_t extent = weight.size(dim);
    const auto w = make_weight_slice(weight.clone(), dim, extent / 4, extent / 2);
    x.mutable_grad() = torch::Tensor();
    x_ref.mutable_grad() = torch::Tensor();
    partial_linear(x, w).pow(2).sum().backward();
    torch::matmul(x_ref, weight.t()).pow(2).sum().backward();
    EXPECT_TRUE(torch::allclose(x.grad(), x_ref.grad(), 1e-5, 1e-6)) << "dim " << dim;
  }
}

TEST(PartialBackward, WholeWeightPathEqualsPlainAutograd) {
  // The model's references above run through partial_linear too (dim -1 for whole weights), so
  // this checks that path against LibTorch's own matmul autograd, for a 3-D input as in the model.
  torch::manual_seed(1);
  const auto weight = torch::randn({24, 16});
  auto x = torch::randn({3, 5, 16}, torch::requires_grad());
  auto x_ref = x.detach().clone().requires_grad_(true);
  auto w_ref = weight.clone().requires_grad_(true);
  const auto w = make_weight_slice(weight.clone(), -1, 0, 0);
  const auto y = partial_linear(x, w);
  const auto y_ref = torch::matmul(x_ref, w_ref.t());
  EXPECT_TRUE(torch::allclose(y, y_ref, 1e-5, 1e-6));
  y.pow(2).sum().backward();
  y_ref.pow(2).sum().backward();
  EXPECT_TRUE(torch::allclose(x.grad(), x_ref.grad(), 1e-5, 1e-6));
  ASSERT_TRUE(w.trainable.grad().defined());
  EXPECT_TRUE(w.trainable.grad().is_contiguous());
  EXPECT_TRUE(torch::allclose(w.trainable.grad(), w_ref.grad(), 1e-5, 1e-6));
}

TEST(PartialBackward, FrozenSlicesHaveNoGradientBuffersOrOptimizerState) {
  Transformer model(spec(), SlicePlan(spec(), SliceMode::MlpHeads, 4, 4, 1), 5);
  torch::optim::AdamW opt(model.trainable(), torch::optim::AdamWOptions(1e-2).weight_decay(0.1));
  model.loss(batch(3)).backward();
  opt.step();
  int64_t grad_elements = 0, state_elements = 0;
  for (size_t i = 0; i < model.layout().size(); ++i) {
    const auto& sl = model.plan().params()[i];
    if (sl.sliced()) {
      EXPECT_FALSE(model.weights()[i].requires_grad()) << sl.param.name;
      EXPECT_FALSE(model.weights()[i].grad().defined()) << sl.param.name;
      // one storage: the trainable slice is a view into the full weight
      EXPECT_EQ(model.trainable()[i].storage().data(), model.weights()[i].storage().data()) << sl.param.name;
    }
    grad_elements += model.trainable()[i].grad().numel();
  }
  for (const auto& [key, state] : opt.state()) {
    auto& s = static_cast<torch::optim::AdamWParamState&>(*state);
    state_elements += s.exp_avg().numel() + s.exp_avg_sq().numel();
  }
  EXPECT_EQ(grad_elements, model.plan().trainable_parameters());
  EXPECT_EQ(state_elements, 2 * model.plan().trainable_parameters());
  EXPECT_LT(grad_elements, model.plan().total_parameters() / 2);
}

TEST(PartialBackward, FrozenElementsAreBitUnchangedAfterManySteps) {
  Transformer model(spec(), SlicePlan(spec(), SliceMode::MlpHeads, 4, 2, 3), 11);
  std::vector<torch::Tensor> before;
  for (const auto& w : model.weights()) before.push_back(w.detach().clone());
  torch::optim::AdamW opt(model.trainable(), torch::optim::AdamWOptions(1e-2).weight_decay(0.1));
  for (int step = 0; step < 25; ++step) {
    opt.zero_grad();
    model.loss(batch(100 + step)).backward();
    opt.step();
  }
  for (size_t i = 0; i < model.layout().size(); ++i) {
    const auto& sl = model.plan().params()[i];
    const auto now = model.weights()[i].detach();
    if (!sl.sliced()) {
      EXPECT_FALSE(torch::equal(now, before[i])) << sl.param.name << " should have trained";
      continue;
    }
    const int64_t extent = sl.param.shape[sl.dim];
    const auto trained = now.narrow(sl.dim, sl.begin, sl.end - sl.begin);
    EXPECT_FALSE(torch::equal(trained, before[i].narrow(sl.dim, sl.begin, sl.end - sl.begin))) << sl.param.name;
    if (sl.begin > 0)
      EXPECT_TRUE(torch::equal(now.narrow(sl.dim, 0, sl.begin), before[i].narrow(sl.dim, 0, sl.begin))) << sl.param.name;
    if (sl.end < extent)
      EXPECT_TRUE(torch::equal(now.narrow(sl.dim, sl.end, extent - sl.end), before[i].narrow(sl.dim, sl.end, extent - sl.end)))
          << sl.param.name;
  }
}

TEST(PartialBackward, ExecutedBackwardMatmulsMatchAppendixC) {
  const int64_t B = 2, S = spec().seq_len;
  std::vector<Case> all = cases();
  all.push_back({SliceMode::None, 1, 1, 0});
  for (const auto& c : all) {
    Transformer model(spec(), SlicePlan(spec(), c.mode, c.world, c.slices, c.rank), 1);
    const auto loss = model.loss(batch(4, B, S));
    double counted = 0;
    {
      MatmulFlopCounter counter;
      loss.backward();
      counted = counter.flops();
    }
    const auto& plan = model.plan();
    const StepFlops f = step_flops(spec(), B, S, plan.rho_attn(), plan.rho_mlp());
    EXPECT_EQ(counted, f.backward_matmul) << describe(c);
  }
  // The forward too: every matmul of Appendix C's forward, no more, no less.
  Transformer model(spec(), SlicePlan(spec(), SliceMode::Mlp, 4, 4, 0), 1);
  MatmulFlopCounter counter;
  model.loss(batch(5, B, S));
  EXPECT_EQ(counter.flops(), step_flops(spec(), B, S, 1, 1).forward_matmul);
}

TEST(PartialBackward, RecomputationGivesTheSameGradientsAndRerunsTheForward) {
  const auto tokens = batch(6);
  for (const auto& c : cases()) {
    Transformer plain(spec(), SlicePlan(spec(), c.mode, c.world, c.slices, c.rank), 2);
    Transformer recomputed(spec(), SlicePlan(spec(), c.mode, c.world, c.slices, c.rank), 2);
    recomputed.set_recompute(true);
    const auto loss_plain = plain.loss(tokens);
    const auto loss_recomputed = recomputed.loss(tokens);
    EXPECT_TRUE(torch::equal(loss_plain, loss_recomputed)) << describe(c);
    loss_plain.backward();
    double backward_flops = 0;
    {
      MatmulFlopCounter counter;
      loss_recomputed.backward();
      backward_flops = counter.flops();
    }
    for (size_t i = 0; i < plain.trainable().size(); ++i)
      EXPECT_TRUE(torch::allclose(plain.trainable()[i].grad(), recomputed.trainable()[i].grad(), 1e-5, 1e-7))
          << describe(c) << " " << plain.layout()[i].name;
    // The backward now also runs every block's forward once more (all but the output head).
    const auto& plan = plain.plan();
    const StepFlops f = step_flops(spec(), 3, spec().seq_len, plan.rho_attn(), plan.rho_mlp());
    const double head = 2.0 * 3 * spec().seq_len * spec().d_model * spec().vocab;
    EXPECT_EQ(backward_flops, f.backward_matmul + f.forward_matmul - head) << describe(c);
  }
}
