// causal_self_attention_cpu against the composition it replaces (view/permute of the stacked
// projection, rotary as cat/mul/add, baddbmm with the causal bias, softmax, bmm, transpose),
// differentiated by autograd: values, the gradient of qkv, and the FLOPs the counter sees; one
// position, short and long pairs, a pair count the two cores do not divide, and the MLP-heavy
// bench's head shape in fp32. The rotary tables are random (not cos/sin of angles, whose two
// halves are equal), so a mixed-up half in the rotation or its transpose shows.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <limits>

#include "engine/model/cpu_attention.h"
#include "engine/obs/matmul_flop_counter.h"

using namespace ppu;

namespace {

#if PPU_HAVE_CBLAS

torch::Tensor rotate(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin) {
  const int64_t S = x.size(2), half = x.size(3) / 2;
  const auto rotated = torch::cat({-x.narrow(3, half, half), x.narrow(3, 0, half)}, 3);
  return x * cos.narrow(0, 0, S) + rotated * sin.narrow(0, 0, S);
}

torch::Tensor reference(const torch::Tensor& qkv, int64_t h, const RotaryTables& rope) {
  const int64_t B = qkv.size(0), S = qkv.size(1), hd = qkv.size(2) / (3 * h);
  const auto parts = qkv.view({B, S, 3, h, hd}).permute({2, 0, 3, 1, 4}).unbind(0);  // [B, h, S, hd] each
  const auto q = rotate(parts[0], rope.cos_q, rope.sin_q), k = rotate(parts[1], rope.cos_k, rope.sin_k);
  const auto bias = torch::full({S, S}, -std::numeric_limits<double>::infinity(), qkv.options()).triu(1);
  auto scores = torch::baddbmm(bias, q.reshape({B * h, S, hd}), k.reshape({B * h, S, hd}).transpose(1, 2));
  return torch::bmm(torch::softmax(scores, -1), parts[2].reshape({B * h, S, hd}))
      .view({B, h, S, hd})
      .transpose(1, 2)
      .reshape({B, S, h * hd});
}

struct Shape {
  int64_t B, h, S, hd;
  torch::Dtype dtype;
  double rtol, atol;
};

RotaryTables random_tables(const Shape& c) {
  const auto opts = torch::TensorOptions().dtype(c.dtype);
  auto t = [&] { return torch::randn({c.S + 3, c.hd}, opts); };  // more rows than positions
  return {t(), t(), t(), t()};
}

class CpuAttention : public ::testing::TestWithParam<Shape> {};

TEST_P(CpuAttention, MatchesTheCompositionForwardAndBackward) {
  const auto& c = GetParam();
  torch::manual_seed(7);
  const auto opts = torch::TensorOptions().dtype(c.dtype);
  const auto qkv = (torch::randn({c.B, c.S, 3 * c.h * c.hd}, opts) * 0.5).requires_grad_(true);
  const auto rope = random_tables(c);
  const auto upstream = torch::randn({c.B, c.S, c.h * c.hd}, opts);

  const auto ours = causal_self_attention_cpu(qkv, c.h, rope);
  const auto grad = torch::autograd::grad({ours}, {qkv}, {upstream})[0];
  const auto ref = reference(qkv, c.h, rope);
  const auto ref_grad = torch::autograd::grad({ref}, {qkv}, {upstream})[0];

  EXPECT_TRUE(ours.is_contiguous());
  EXPECT_EQ(ours.sizes(), ref.sizes());
  EXPECT_EQ(ours.scalar_type(), c.dtype);
  EXPECT_TRUE(torch::allclose(ours, ref, c.rtol, c.atol)) << (ours - ref).abs().max().item<double>();
  const int64_t D = c.h * c.hd;
  const char* names[] = {"dQ", "dK", "dV"};
  for (int i = 0; i < 3; ++i) {
    const auto mine = grad.narrow(2, i * D, D), theirs = ref_grad.narrow(2, i * D, D);
    EXPECT_TRUE(torch::allclose(mine, theirs, c.rtol, c.atol))
        << names[i] << " differs by " << (mine - theirs).abs().max().item<double>();
  }
}

TEST_P(CpuAttention, TheCounterSeesTheCompositionsFlops) {
  const auto& c = GetParam();
  const auto opts = torch::TensorOptions().dtype(c.dtype);
  const auto qkv = torch::randn({c.B, c.S, 3 * c.h * c.hd}, opts).requires_grad_(true);
  const auto rope = random_tables(c);
  auto count = [&](auto attend) {
    MatmulFlopCounter counter;
    attend().sum().backward();
    return counter.flops();
  };
  const double ours = count([&] { return causal_self_attention_cpu(qkv, c.h, rope); });
  const double ref = count([&] { return reference(qkv, c.h, rope); });
  // QKᵀ and PV forward, dV, dP, dQ and dK backward: six products of S·S·hd multiply-adds per pair.
  EXPECT_DOUBLE_EQ(ours, 6.0 * 2 * c.B * c.h * c.S * c.S * c.hd);
  EXPECT_DOUBLE_EQ(ours, ref);
}

// Tolerances (torch::allclose: |ours − ref| ≤ atol + rtol·|ref|), derived, not measured. Both
// paths use the same rotation formula and ATen's own softmax and softmax backward; they differ only
// in the order in which the GEMMs sum (ours: one cblas call per (batch, head) pair; the reference:
// ATen's baddbmm/bmm, its own loops or the BLAS by size, and autograd's transposes). That order
// is what the CPU changes (OpenBLAS's Haswell/Zen vs SkylakeX/Cooperlake kernels and blocking,
// the thread count), so the bounds hold for any order: two orders of an n-term sum differ by at
// most 2·n·u·Σ|terms| (u = 2^-53 in fp64, 2^-24 in fp32), and typically by √n·u·Σ|terms|
// (independent roundings). Here n ≤ S + hd (scores and dP sum hd terms, PV, dV, dQ and dK S
// terms), and Σ|terms| ≲ 20 with these inputs (0.5·randn projections, randn rotary tables and
// upstream gradients: Σ_d |q_d·k_d| ≈ hd·0.32 for the scores, less elsewhere).
//  * fp64, S ≤ 12: worst case 2·20·u·20 ≈ 9e-14, 11× below atol 1e-12.
//  * fp64, S = 160, hd = 16: worst case 2·176·u·20 ≈ 8e-13 < atol 1e-12; rtol 1e-10 adds room
//    for every element above 1e-2.
//  * fp32, S = 128, hd = 64: n = 192; two orders typically differ by √(2·192)·u·20 ≈ 2.3e-5,
//    4× below atol 1e-4 (plus rtol 1e-4·|ref|): a documented margin, since the worst case
//    (2·192·u·20 ≈ 4.6e-4) would need all 192 roundings of one sum to align.
// Observed: passes on an AVX-512 Zen 4 and, under all four kernel switches, on an AVX2-only Zen 3
// (docs/TESTING.md); a failure prints the largest difference.
constexpr double kFp64Short = 1e-12;                            // rtol and atol, S <= 12
constexpr double kFp64LongRtol = 1e-10, kFp64LongAtol = 1e-12;  // S = 160
constexpr double kFp32 = 1e-4;                                  // rtol and atol, S = 128, hd = 64

// One position, a few short pairs, 15 pairs (odd: the cores get unequal shares), the MLP-heavy
// bench's head shape in fp32.
INSTANTIATE_TEST_SUITE_P(Shapes, CpuAttention,
                         ::testing::Values(Shape{1, 1, 1, 4, torch::kFloat64, kFp64Short, kFp64Short},
                                           Shape{2, 3, 12, 8, torch::kFloat64, kFp64Short, kFp64Short},
                                           Shape{3, 5, 160, 16, torch::kFloat64, kFp64LongRtol, kFp64LongAtol},
                                           Shape{2, 12, 128, 64, torch::kFloat32, kFp32, kFp32}));

TEST(CpuAttentionInput, RejectsWhatItDoesNotTake) {
  const auto qkv = torch::randn({1, 4, 48});  // B 1, S 4, 2 heads of 8 (3 · 2 · 8)
  const auto t = torch::randn({4, 8});
  const RotaryTables rope{t, t, t, t};
  EXPECT_TRUE(cpu_attention_supports(qkv));
  EXPECT_FALSE(cpu_attention_supports(qkv.to(torch::kBFloat16)));
  EXPECT_NO_THROW(causal_self_attention_cpu(qkv, 2, rope));
  EXPECT_THROW(causal_self_attention_cpu(torch::randn({1, 4, 96}).narrow(2, 0, 48), 2, rope), c10::Error);  // strided
  EXPECT_THROW(causal_self_attention_cpu(qkv, 5, rope), c10::Error);                       // 48 is not 3·5·hd
  EXPECT_THROW(causal_self_attention_cpu(torch::randn({1, 4, 42}), 2, rope), c10::Error);  // 3 · 2 · 7: odd head_dim
  EXPECT_THROW(causal_self_attention_cpu(qkv.to(torch::kBFloat16), 2, rope), c10::Error);
  EXPECT_THROW(causal_self_attention_cpu(qkv, 2, {t.narrow(0, 0, 3), t, t, t}), c10::Error);  // fewer rows than S
  EXPECT_THROW(causal_self_attention_cpu(qkv, 2, {t, t.to(torch::kFloat64), t, t}), c10::Error);
  EXPECT_THROW(causal_self_attention_cpu(qkv, 2, {t, t, torch::Tensor(), t}), c10::Error);
}

#else

TEST(CpuAttentionInput, WithoutCblasTheCompositionIsThePath) {
  const auto t = torch::randn({4, 8});
  EXPECT_FALSE(cpu_attention_supports(torch::randn({1, 4, 48})));
  EXPECT_THROW(causal_self_attention_cpu(torch::randn({1, 4, 48}), 2, {t, t, t, t}), c10::Error);
}

#endif

}  // namespace
