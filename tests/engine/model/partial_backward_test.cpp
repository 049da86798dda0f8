// The heart of the method (section 2 of the paper): frozen slices get a full input gradient but no weight
// gradient, no grad buffer and no optimiser state; trainable slices get exactly the gradient
// full autograd would give them; and the executed backward matmuls match Appendix C.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <array>
#include <map>
#include <set>

#include "core/cost_model.h"
#include "engine/model/transformer.h"
#include "engine/obs/matmul_flop_counter.h"
#include "tiny_model.h"

using namespace ppu;

namespace {

using test::batch;
using test::spec;

// Tolerances of the gradient comparisons (torch::allclose: |a − b| ≤ atol + rtol·|b|). The two
// sides compute the same products and differ only in how they sum them: another GEMM shape or
// grouping (a narrowed slice, an input gradient in one GEMM or slice by slice) or gradients
// accumulated in another order. That order is what the CPU changes (OpenBLAS's Haswell/Zen vs
// SkylakeX/Cooperlake kernels and blocking, the thread count), so the bounds are stated for any
// order: two orders of an n-term fp32 sum differ by at most 2·n·u·Σ|terms| (u = 2^-24 ≈ 6e-8),
// and typically by √(2n)·u·Σ|terms| (independent roundings); relative to the result that is
// multiplied by κ = Σ|terms| / |Σ terms|, about √n for terms of random sign. Observed: every
// comparison passes on an AVX-512 Zen 4 and, under all four kernel switches, on an AVX2-only
// Zen 3 (docs/TESTING.md); a failure prints the largest difference.
//
// Whole model (tiny preset, 48 tokens): sums of up to n = 256 terms (d_ff, vocab) with κ ≈ 7
// (48 tokens' contributions), ≈ 12 GEMMs deep for the embedding: typical √(2·256)·u·7 ≈ 1e-5
// per GEMM, ≈ 3.3e-5 along the chain. A documented margin of 3× over that estimate; atol 1e-6
// covers components that cancel to near 0.
constexpr double kModelRtol = 1e-4, kModelAtol = 1e-6;
// One layer (x [5, 16], W [32, 16], randn): n ≤ 32, κ ≈ 5: typical √64·u·5 ≈ 2.4e-6, 4× below
// rtol 1e-5 (worst case 2·32·u·5 ≈ 1.9e-5 only if every rounding aligns); atol 1e-6 for cancellation.
constexpr double kLayerRtol = 1e-5, kLayerAtol = 1e-6;
// Appendix D's MLP (d 8, F 32, N 4, randn): the same 32 products per element, summed in one
// GEMM over F or as four 8-term slices added afterwards; Σ|terms| ≈ 30, |result| ≈ 11: worst case
// 2·40·u·30 ≈ 1.4e-4, 8× below atol + rtol·|result| at a typical element, and the typical
// difference (√80·u·30 ≈ 1.6e-5) is atol's order for the rare element near 0 (documented margin).
constexpr double kSlicesRtol = 1e-4, kSlicesAtol = 1e-5;
// Recomputation reruns the same forward bit for bit (the losses are compared with equal); only the
// order in which the backward accumulates a few gradients differs: a few roundings, ≤ 4·u·κ,
// against rtol 1e-5 ≈ 168·u.
constexpr double kRecomputeRtol = 1e-5, kRecomputeAtol = 1e-7;
// The opposite checks ("must differ"): detaching drops 3 of 4 slices' input-Jacobian terms, a
// change of order 1 relative to the gradient (about √(3/4) for terms of random sign), ~100× the
// rtol 1e-2 it must exceed. In the model the same change reaches every gradient below the
// detached MLP; rtol 1e-3 is 10× kModelRtol, so these checks fail only if detaching changes
// (almost) nothing, never from rounding.
constexpr double kMustDifferRtol = 1e-2, kMustDifferAtol = 1e-3;
constexpr double kModelMustDifferRtol = 1e-3, kModelMustDifferAtol = 1e-5;

struct Case {
  SliceMode mode;
  int world, slices, rank;
  Jacobian jacobian = Jacobian::Full;
  SlicePlan plan() const { return {spec(), mode, world, slices, rank, jacobian}; }
};

// The method's modes, then the ablations (Appendix A.2: W_O sliced, horizontal; heads only;
// Appendix D: detached Jacobian). The tiny model has 2 layers and 4 heads.
std::vector<Case> cases() {
  return {{SliceMode::Mlp, 2, 2, 1},        {SliceMode::Mlp, 4, 4, 2},        {SliceMode::Mlp, 8, 8, 5},
          {SliceMode::MlpHeads, 2, 2, 0},   {SliceMode::MlpHeads, 4, 4, 3},   {SliceMode::MlpHeads, 8, 4, 6},
          {SliceMode::MlpHeadsWo, 4, 2, 1}, {SliceMode::MlpHeadsWo, 4, 4, 2}, {SliceMode::Horizontal, 4, 2, 3},
          {SliceMode::Horizontal, 2, 2, 0}, {SliceMode::Heads, 4, 4, 1},      {SliceMode::Heads, 8, 2, 5}};
}

// Cases whose backward differs from full autograd on purpose (only through the MLP input path).
std::vector<Case> detached_cases() {
  return {{SliceMode::Mlp, 4, 4, 1, Jacobian::Slice},
          {SliceMode::Mlp, 4, 4, 2, Jacobian::SliceRandom},
          {SliceMode::MlpHeads, 2, 2, 1, Jacobian::Slice},
          {SliceMode::Mlp, 8, 8, 3, Jacobian::SliceRandom}};
}

std::string describe(const Case& c) {
  return slice_mode_name(c.mode) + " N=" + std::to_string(c.slices) + " rank=" + std::to_string(c.rank) +
         (c.jacobian == Jacobian::Full ? "" : " jacobian=" + choice_name(c.jacobian));
}

// Parameters per model that are sliced (partly or wholly frozen) on a rank of this case.
int sliced_per_model(const Case& c) {
  const int L = spec().layers;
  switch (c.mode) {
    case SliceMode::Mlp: return 2 * L;
    case SliceMode::MlpHeads: return 5 * L;
    case SliceMode::MlpHeadsWo: return 6 * L;
    case SliceMode::Horizontal: return 2 * (L - L / c.slices);  // the other layer groups' MLPs
    case SliceMode::Heads: return 3 * L;
    default: return 0;
  }
}

}  // namespace

TEST(PartialBackward, TrainableSliceGradientsEqualFullAutograd) {
  const auto tokens = batch(1);
  Transformer reference(spec(), SlicePlan(spec(), SliceMode::None, 1, 1, 0), 7);
  reference.loss(tokens).backward();
  for (const auto& c : cases()) {
    Transformer model(spec(), c.plan(), 7);
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
      EXPECT_TRUE(torch::allclose(g, want, kModelRtol, kModelAtol))
          << describe(c) << " " << sl.param.name << " max diff " << (g - want).abs().max().item<float>();
    }
    EXPECT_EQ(sliced, sliced_per_model(c)) << describe(c);
  }
}

TEST(PartialBackward, InputGradientEqualsFullModel) {
  // Through the model: the embedding gradient is the sum of every block's input Jacobian.
  const auto tokens = batch(2);
  Transformer reference(spec(), SlicePlan(spec(), SliceMode::None, 1, 1, 0), 3);
  reference.loss(tokens).backward();
  const auto want = reference.trainable()[0].grad();
  for (const auto& c : cases()) {
    Transformer model(spec(), c.plan(), 3);
    model.loss(tokens).backward();
    EXPECT_TRUE(torch::allclose(model.trainable()[0].grad(), want, kModelRtol, kModelAtol)) << describe(c);
  }
  // And for one layer directly: dL/dx through a frozen-row and a frozen-column weight.
  torch::manual_seed(0);
  auto weight = torch::randn({32, 16});
  auto x = torch::randn({5, 16}, torch::requires_grad());
  auto x_ref = x.detach().clone().requires_grad_(true);
  for (int dim : {0, 1}) {
    const int64_t extent = weight.size(dim);
    const auto w = make_weight_slice(weight.clone(), {dim, extent / 4, extent / 2});
    x.mutable_grad() = torch::Tensor();
    x_ref.mutable_grad() = torch::Tensor();
    partial_linear(x, w).pow(2).sum().backward();
    torch::matmul(x_ref, weight.t()).pow(2).sum().backward();
    EXPECT_TRUE(torch::allclose(x.grad(), x_ref.grad(), kLayerRtol, kLayerAtol)) << "dim " << dim;
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
  const auto w = make_weight_slice(weight.clone(), TensorRegion{});
  const auto y = partial_linear(x, w);
  const auto y_ref = torch::matmul(x_ref, w_ref.t());
  EXPECT_TRUE(torch::allclose(y, y_ref, kLayerRtol, kLayerAtol));
  y.pow(2).sum().backward();
  y_ref.pow(2).sum().backward();
  EXPECT_TRUE(torch::allclose(x.grad(), x_ref.grad(), kLayerRtol, kLayerAtol));
  ASSERT_TRUE(w.trainable.grad().defined());
  EXPECT_TRUE(w.trainable.grad().is_contiguous());
  EXPECT_TRUE(torch::allclose(w.trainable.grad(), w_ref.grad(), kLayerRtol, kLayerAtol));
}

TEST(PartialBackward, StackedQkvEqualsThreeSeparateProjections) {
  // stacked_partial_linear (one GEMM for Q, K and V) against three partial_linear calls on the
  // same weights: output, dL/dx and every trainable range's gradient, for whole parts, row
  // slices that are adjacent or not, and a frozen part.
  torch::manual_seed(2);
  const int64_t d = 12, in = 10;
  const auto x0 = torch::randn({2, 7, in});
  const auto G = torch::randn({2, 7, 3 * d});
  const std::vector<std::array<TensorRegion, 3>> cases = {
      {{{-1, 0, 0}, {-1, 0, 0}, {-1, 0, 0}}},  // full training: one contiguous run
      {{{0, 3, 6}, {0, 3, 6}, {0, 3, 6}}},     // the same heads of each: three runs
      {{{0, 6, 12}, {0, 0, 6}, {-1, 0, 0}}},   // adjacent across parts: merged
      {{{0, 0, 0}, {-1, 0, 0}, {0, 0, 0}}}};   // frozen parts
  for (const auto& ranges : cases) {
    const auto stacked = torch::randn({3 * d, in});
    std::vector<WeightSlice> parts, separate;
    for (int p = 0; p < 3; ++p) {
      const auto& r = ranges[p];
      parts.push_back(make_weight_slice(stacked.narrow(0, p * d, d).detach(), r));
      separate.push_back(make_weight_slice(stacked.narrow(0, p * d, d).clone(), r));
    }
    auto x = x0.clone().requires_grad_(true), x_ref = x0.clone().requires_grad_(true);
    const auto y = stacked_partial_linear(x, stacked, parts[0], parts[1], parts[2]);
    const auto y_ref = torch::cat(
        {partial_linear(x_ref, separate[0]), partial_linear(x_ref, separate[1]), partial_linear(x_ref, separate[2])},
        -1);
    // One GEMM over 3d rows against three of d rows: the same products summed in another
    // order (dL/dx sums 36 of them per element, of size ~1: partial sums up to ~5, so at most
    // 36·u·5 ≈ 1e-5 if every rounding aligned, typically √36·u·5 ≈ 2e-6), so absolute tolerance
    // 1e-5. Documented margin: 1e-6 failed under LibTorch 2.15's MKL GEMM (docs/GPU.md).
    constexpr double kStacked = 1e-5;  // rtol and atol
    EXPECT_TRUE(torch::allclose(y, y_ref, kStacked, kStacked));
    (y * G).sum().backward();
    (y_ref * G).sum().backward();
    EXPECT_TRUE(torch::allclose(x.grad(), x_ref.grad(), kStacked, kStacked))
        << "max diff " << (x.grad() - x_ref.grad()).abs().max().item<double>();
    for (int p = 0; p < 3; ++p) {
      const auto& g = parts[p].trainable.grad();
      ASSERT_TRUE(g.defined()) << p;
      EXPECT_EQ(g.sizes(), separate[p].trainable.grad().sizes()) << p;
      EXPECT_TRUE(torch::allclose(g, separate[p].trainable.grad(), kStacked, kStacked)) << p;
    }
  }
  // A part sliced by columns cannot be stacked.
  const auto w = torch::randn({d, in});
  EXPECT_FALSE(stackable(make_weight_slice(w, {1, 0, 2})));
  EXPECT_TRUE(stackable(make_weight_slice(w.clone(), {0, 0, 2})));
}

TEST(PartialBackward, ModelStacksQkvIntoOneBufferWhenTheSlicingAllows) {
  // W_q, W_k, W_v of a block are consecutive row blocks of one buffer (so attention runs one
  // GEMM) for every slicing mode of the method and the ablations: each slices them by rows or not at all.
  const auto d = spec().d_model;
  for (const auto& c : cases()) {
    Transformer model(spec(), c.plan(), 7);
    std::map<std::string, torch::Tensor> by_name;
    for (size_t i = 0; i < model.layout().size(); ++i) by_name[model.layout()[i].name] = model.weights()[i];
    for (int l = 0; l < spec().layers; ++l) {
      const std::string p = "blocks." + std::to_string(l) + ".attn.";
      const auto &q = by_name.at(p + "wq.weight"), &k = by_name.at(p + "wk.weight"), &v = by_name.at(p + "wv.weight");
      EXPECT_EQ(static_cast<char*>(k.data_ptr()) - static_cast<char*>(q.data_ptr()), d * d * 4) << describe(c);
      EXPECT_EQ(static_cast<char*>(v.data_ptr()) - static_cast<char*>(k.data_ptr()), d * d * 4) << describe(c);
    }
  }
}

TEST(PartialBackward, FrozenSlicesHaveNoGradientBuffersOrOptimizerState) {
  std::vector<Case> all = cases();
  all.push_back({SliceMode::MlpHeads, 4, 4, 1});
  for (const auto& c : detached_cases()) all.push_back(c);
  for (const auto& c : all) {
    Transformer model(spec(), c.plan(), 5);
    torch::optim::AdamW opt(model.trainable(), torch::optim::AdamWOptions(1e-2).weight_decay(0.1));
    model.loss(batch(3)).backward();
    opt.step();
    int64_t grad_elements = 0, state_elements = 0;
    for (size_t i = 0; i < model.layout().size(); ++i) {
      const auto& sl = model.plan().params()[i];
      if (sl.sliced()) {
        EXPECT_FALSE(model.weights()[i].requires_grad()) << describe(c) << " " << sl.param.name;
        EXPECT_FALSE(model.weights()[i].grad().defined()) << describe(c) << " " << sl.param.name;
        // one storage: the trainable slice is a view into the full weight
        EXPECT_EQ(model.trainable()[i].storage().data(), model.weights()[i].storage().data()) << sl.param.name;
      }
      grad_elements += model.trainable()[i].grad().numel();
    }
    for (const auto& [key, state] : opt.state()) {
      auto& s = static_cast<torch::optim::AdamWParamState&>(*state);
      state_elements += s.exp_avg().numel() + s.exp_avg_sq().numel();
    }
    EXPECT_EQ(grad_elements, model.plan().trainable_parameters()) << describe(c);
    EXPECT_EQ(state_elements, 2 * model.plan().trainable_parameters()) << describe(c);
    // Slicing the MLPs (2/3 of a layer's matrices) leaves under 3/4 trainable; heads only
    // (Q/K/V, 1/4 of them) saves less, but still some.
    const int64_t total = model.plan().total_parameters();
    EXPECT_LT(grad_elements, c.mode == SliceMode::Heads ? total : total * 3 / 4) << describe(c);
  }
}

TEST(PartialBackward, FrozenElementsAreBitUnchangedAfterManySteps) {
  const std::vector<Case> all = {{SliceMode::MlpHeads, 4, 2, 3},
                                 {SliceMode::MlpHeadsWo, 4, 2, 2},
                                 {SliceMode::Horizontal, 2, 2, 1},
                                 {SliceMode::Mlp, 4, 2, 1, Jacobian::SliceRandom}};
  for (const auto& c : all) {
    Transformer model(spec(), c.plan(), 11);
    std::vector<torch::Tensor> before;
    for (const auto& w : model.weights()) before.push_back(w.detach().clone());
    torch::optim::AdamW opt(model.trainable(), torch::optim::AdamWOptions(1e-2).weight_decay(0.1));
    for (int step = 0; step < 25; ++step) {
      opt.zero_grad();
      model.begin_step(step);
      model.loss(batch(100 + step)).backward();
      opt.step();
    }
    for (size_t i = 0; i < model.layout().size(); ++i) {
      const auto& sl = model.plan().params()[i];
      const auto now = model.weights()[i].detach();
      const std::string what = describe(c) + " " + sl.param.name;
      if (!sl.sliced()) {
        EXPECT_FALSE(torch::equal(now, before[i])) << what << " should have trained";
        continue;
      }
      const int64_t extent = sl.param.shape[sl.dim];
      if (!sl.frozen()) {
        EXPECT_FALSE(torch::equal(now.narrow(sl.dim, sl.begin, sl.end - sl.begin),
                                  before[i].narrow(sl.dim, sl.begin, sl.end - sl.begin)))
            << what;
      }
      if (sl.begin > 0) {
        EXPECT_TRUE(torch::equal(now.narrow(sl.dim, 0, sl.begin), before[i].narrow(sl.dim, 0, sl.begin))) << what;
      }
      if (sl.end < extent) {
        EXPECT_TRUE(torch::equal(now.narrow(sl.dim, sl.end, extent - sl.end),
                                 before[i].narrow(sl.dim, sl.end, extent - sl.end)))
            << what;
      }
    }
  }
}

TEST(PartialBackward, ExecutedBackwardMatmulsMatchAppendixC) {
  const int64_t B = 2, S = spec().seq_len;
  std::vector<Case> all = cases();
  all.push_back({SliceMode::None, 1, 1, 0});
  for (const auto& c : detached_cases()) all.push_back(c);
  for (const auto& c : all) {
    Transformer model(spec(), c.plan(), 1);
    const auto loss = model.loss(batch(4, B, S));
    double counted = 0;
    {
      MatmulFlopCounter counter;
      loss.backward();
      counted = counter.flops();
    }
    // ppu-plan's model for the same plan: the ablations' W_O and input-Jacobian terms included.
    const StepFlops f = step_flops(spec(), B, S, model.plan());
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
  std::vector<Case> all = cases();
  for (const auto& c : detached_cases()) all.push_back(c);
  for (const auto& c : all) {
    Transformer plain(spec(), c.plan(), 2);
    Transformer recomputed(spec(), c.plan(), 2);
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
      EXPECT_TRUE(torch::allclose(plain.trainable()[i].grad(), recomputed.trainable()[i].grad(), kRecomputeRtol,
                                  kRecomputeAtol))
          << describe(c) << " " << plain.layout()[i].name;
    // The backward now also runs every block's forward once more (all but the output head),
    // except each block's last product, the MLP's down projection, whose output the backward
    // never reads (as torch.utils.checkpoint's early stop).
    const StepFlops f = step_flops(spec(), 3, spec().seq_len, plain.plan());
    const double head = 2.0 * 3 * spec().seq_len * spec().d_model * spec().vocab;
    const double down = 2.0 * 3 * spec().seq_len * spec().mlp_hidden() * spec().d_model * spec().layers;
    EXPECT_EQ(backward_flops, f.backward_matmul + f.forward_matmul - head - down) << describe(c);
  }
}

// Appendix D, one MLP: with the Jacobian detached to the kept slices, the input gradient is
// exactly sum over kept n of W_n^T((V_n^T G) ⊙ 1(H_n > 0)) (slice k, or k and g), the dropped
// slices' terms are missing from it, and the trainable slice's weight gradients are unchanged.
TEST(DetachedJacobian, MlpInputGradientIsTheKeptSlicesTermsExactly) {
  torch::manual_seed(4);
  const int64_t d = 8, F = 32, N = 4, m = 6, k = 1, g = 3;
  const auto W = torch::randn({F, d});  // up-projection [F, d]
  const auto V = torch::randn({d, F});  // down-projection [d, F]
  const auto x0 = torch::randn({m, d});
  const auto G = torch::randn({m, d});  // upstream dL/dY
  const auto H = x0.mm(W.t());
  auto term = [&](int64_t n) {  // W_n^T((V_n^T G) ⊙ 1(H_n > 0)) in row-major [m, d] form
    const int64_t b = n * F / N, len = F / N;
    const auto g_a = G.mm(V.narrow(1, b, len));
    return (g_a * (H.narrow(1, b, len) > 0).to(torch::kFloat32)).mm(W.narrow(0, b, len));
  };
  auto run = [&](const std::vector<int64_t>& keep, torch::Tensor& g_w, torch::Tensor& g_v) {
    auto up = make_weight_slice(W.clone(), {0, k * F / N, (k + 1) * F / N});
    auto down = make_weight_slice(V.clone(), {1, k * F / N, (k + 1) * F / N});
    up.input_keep = down.input_keep = keep;
    auto x = x0.clone().requires_grad_(true);
    partial_linear(torch::relu(partial_linear(x, up)), down).backward(G);
    g_w = up.trainable.grad();
    g_v = down.trainable.grad();
    return x.grad();
  };
  torch::Tensor g_w_full, g_v_full, g_w, g_v;
  const auto full = run({}, g_w_full, g_v_full);
  auto all_terms = term(0);
  for (int64_t n = 1; n < N; ++n) all_terms = all_terms + term(n);
  EXPECT_TRUE(torch::allclose(full, all_terms, kSlicesRtol, kSlicesAtol));  // Eq. (App:jacobian)

  const auto only_k = run({k * F / N, (k + 1) * F / N}, g_w, g_v);
  EXPECT_TRUE(torch::allclose(only_k, term(k), kSlicesRtol, kSlicesAtol)) << "detach-all-but-k";
  EXPECT_TRUE(torch::allclose(full - only_k, term(0) + term(2) + term(3), kSlicesRtol, kSlicesAtol))
      << "what is dropped";
  EXPECT_FALSE(torch::allclose(only_k, full, kMustDifferRtol, kMustDifferAtol)) << "the detached gradient must differ";
  EXPECT_TRUE(torch::allclose(g_w, g_w_full, kLayerRtol, kLayerAtol));
  EXPECT_TRUE(torch::allclose(g_v, g_v_full, kLayerRtol, kLayerAtol));

  const auto k_and_g = run({k * F / N, (k + 1) * F / N, g * F / N, (g + 1) * F / N}, g_w, g_v);
  EXPECT_TRUE(torch::allclose(k_and_g, term(k) + term(g), kSlicesRtol, kSlicesAtol)) << "k + random";
  EXPECT_TRUE(torch::allclose(full - k_and_g, term(0) + term(2), kSlicesRtol, kSlicesAtol));
  EXPECT_TRUE(torch::allclose(g_w, g_w_full, kLayerRtol, kLayerAtol));
}

// Through the model: the last block's MLP sees the same upstream gradient, so its trainable
// slice's gradients equal the full-Jacobian model's; everything below it receives the detached
// input gradient, so the first block's and the embedding's gradients differ.
TEST(DetachedJacobian, OnlyGradientsBelowADetachedMlpChange) {
  const auto tokens = batch(8);
  for (const auto& c : detached_cases()) {
    Case full_case = c;
    full_case.jacobian = Jacobian::Full;
    Transformer full(spec(), full_case.plan(), 9), detached(spec(), c.plan(), 9);
    full.loss(tokens).backward();
    detached.loss(tokens).backward();
    const int last = spec().layers - 1;
    for (const char* part : {"mlp.up.weight", "mlp.down.weight"}) {
      const std::string top = "blocks." + std::to_string(last) + "." + part, bottom = std::string("blocks.0.") + part;
      size_t t = 0, b = 0;
      for (size_t i = 0; i < full.layout().size(); ++i) {
        if (full.layout()[i].name == top) t = i;
        if (full.layout()[i].name == bottom) b = i;
      }
      EXPECT_TRUE(torch::allclose(detached.trainable()[t].grad(), full.trainable()[t].grad(), kModelRtol, kModelAtol))
          << describe(c) << top;
      EXPECT_FALSE(torch::allclose(detached.trainable()[b].grad(), full.trainable()[b].grad(), kModelMustDifferRtol,
                                   kModelMustDifferAtol))
          << describe(c) << bottom;
    }
    EXPECT_FALSE(torch::allclose(detached.trainable()[0].grad(), full.trainable()[0].grad(), kModelMustDifferRtol,
                                 kModelMustDifferAtol))
        << describe(c);
  }
}

TEST(DetachedJacobian, RandomSliceIsAnotherSliceDrawnPerStepAndLayer) {
  const Case c{SliceMode::Mlp, 8, 4, 6, Jacobian::SliceRandom};  // own slice 2
  Transformer a(spec(), c.plan(), 5), b(spec(), c.plan(), 5);
  std::set<int> seen;
  for (int64_t step = 0; step < 40; ++step) {
    a.begin_step(step);
    b.begin_step(step);
    for (int l = 0; l < spec().layers; ++l) {
      const int g = a.jacobian_random_slice(l);
      EXPECT_NE(g, 2);
      EXPECT_GE(g, 0);
      EXPECT_LT(g, 4);
      EXPECT_EQ(g, b.jacobian_random_slice(l)) << "a pure function of (seed, rank, step, layer)";
      seen.insert(g);
    }
  }
  EXPECT_EQ(seen, (std::set<int>{0, 1, 3}));  // uniform over the other slices: all of them occur
  Transformer other_rank(spec(), Case{SliceMode::Mlp, 8, 4, 2, Jacobian::SliceRandom}.plan(), 5);
  int differ = 0;
  for (int64_t step = 0; step < 40; ++step) {
    a.begin_step(step);
    other_rank.begin_step(step);
    differ += a.jacobian_random_slice(0) != other_rank.jacobian_random_slice(0);
  }
  EXPECT_GT(differ, 0) << "ranks with the same slice draw independently";
  Transformer plain(spec(), Case{SliceMode::Mlp, 8, 4, 6}.plan(), 5);
  EXPECT_EQ(plain.jacobian_random_slice(0), -1);
}

TEST(EvaluationView, SeesTheGivenTensorsWithoutCopying) {
  Transformer model(spec(), SlicePlan(spec(), SliceMode::Mlp, 2, 2, 0), 3);
  std::vector<torch::Tensor> global;
  for (const auto& w : model.weights()) global.push_back(w.detach().clone());
  const Transformer view(spec(), global);
  const auto tokens = batch(9);
  torch::NoGradGuard no_grad;
  EXPECT_TRUE(torch::equal(view.loss(tokens), model.loss(tokens)));
  EXPECT_EQ(view.weights()[0].data_ptr(), global[0].data_ptr());
  global[3].mul_(0.5);  // an outer step lands in the view
  EXPECT_FALSE(torch::equal(view.loss(tokens), model.loss(tokens)));
  for (const auto& w : global) EXPECT_FALSE(w.requires_grad());
}
