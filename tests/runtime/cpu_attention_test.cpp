// causal_attention_cpu against the composition it replaces (baddbmm with the causal bias,
// softmax, bmm, differentiated by autograd): values, the gradients of q, k and v, and the FLOPs
// the counter sees; one position, short and long pairs, a pair count the two cores do not
// divide, and the MLP-heavy bench's head shape in fp32.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <limits>

#include "engine/cpu_attention.h"
#include "engine/matmul_flop_counter.h"

using namespace ppu;

namespace {

#if PPU_HAVE_CBLAS

torch::Tensor reference(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v) {
  const int64_t B = q.size(0), h = q.size(1), S = q.size(2), hd = q.size(3);
  const auto bias = torch::full({S, S}, -std::numeric_limits<double>::infinity(), q.options()).triu(1);
  auto scores = torch::baddbmm(bias, q.reshape({B * h, S, hd}), k.reshape({B * h, S, hd}).transpose(1, 2));
  return torch::bmm(torch::softmax(scores, -1), v.reshape({B * h, S, hd})).view({B, h, S, hd});
}

struct Shape {
  int64_t B, h, S, hd;
  torch::Dtype dtype;
  double rtol, atol;
};

class CpuAttention : public ::testing::TestWithParam<Shape> {};

TEST_P(CpuAttention, MatchesTheCompositionForwardAndBackward) {
  const auto& c = GetParam();
  torch::manual_seed(7);
  const auto opts = torch::TensorOptions().dtype(c.dtype);
  auto make = [&] { return (torch::randn({c.B, c.h, c.S, c.hd}, opts) * 0.5).requires_grad_(true); };
  auto q = make(), k = make(), v = make();
  const auto upstream = torch::randn({c.B, c.h, c.S, c.hd}, opts);

  const auto ours = causal_attention_cpu(q, k, v);
  const auto grads = torch::autograd::grad({ours}, {q, k, v}, {upstream});
  const auto ref = reference(q, k, v);
  const auto ref_grads = torch::autograd::grad({ref}, {q, k, v}, {upstream});

  EXPECT_TRUE(ours.is_contiguous());
  EXPECT_EQ(ours.scalar_type(), c.dtype);
  EXPECT_TRUE(torch::allclose(ours, ref, c.rtol, c.atol)) << (ours - ref).abs().max().item<double>();
  const char* names[] = {"q", "k", "v"};
  for (int i = 0; i < 3; ++i)
    EXPECT_TRUE(torch::allclose(grads[i], ref_grads[i], c.rtol, c.atol))
        << "d" << names[i] << " differs by " << (grads[i] - ref_grads[i]).abs().max().item<double>();
}

TEST_P(CpuAttention, TheCounterSeesTheCompositionsFlops) {
  const auto& c = GetParam();
  const auto opts = torch::TensorOptions().dtype(c.dtype);
  auto make = [&] { return torch::randn({c.B, c.h, c.S, c.hd}, opts).requires_grad_(true); };
  auto q = make(), k = make(), v = make();
  auto count = [&](auto attend) {
    MatmulFlopCounter counter;
    attend().sum().backward();
    return counter.flops();
  };
  const double ours = count([&] { return causal_attention_cpu(q, k, v); });
  const double ref = count([&] { return reference(q, k, v); });
  // QKᵀ and PV forward, dV, dP, dQ and dK backward: six products of S·S·hd multiply-adds per pair.
  EXPECT_DOUBLE_EQ(ours, 6.0 * 2 * c.B * c.h * c.S * c.S * c.hd);
  EXPECT_DOUBLE_EQ(ours, ref);
}

// One position, a few short pairs, 15 pairs (odd: the cores get unequal shares), the MLP-heavy
// bench's head shape in fp32.
INSTANTIATE_TEST_SUITE_P(Shapes, CpuAttention,
                         ::testing::Values(Shape{1, 1, 1, 4, torch::kFloat64, 1e-12, 1e-12},
                                           Shape{2, 3, 12, 8, torch::kFloat64, 1e-12, 1e-12},
                                           Shape{3, 5, 160, 16, torch::kFloat64, 1e-10, 1e-12},
                                           Shape{2, 12, 128, 64, torch::kFloat32, 1e-4, 1e-5}));

TEST(CpuAttentionInput, RejectsWhatItDoesNotTake) {
  const auto q = torch::randn({1, 2, 4, 8});
  EXPECT_TRUE(cpu_attention_supports(q));
  EXPECT_FALSE(cpu_attention_supports(q.to(torch::kBFloat16)));
  EXPECT_THROW(causal_attention_cpu(q.transpose(2, 3).contiguous().transpose(2, 3), q, q), c10::Error);
  EXPECT_THROW(causal_attention_cpu(q, torch::randn({1, 2, 4, 4}), q), c10::Error);
  EXPECT_THROW(causal_attention_cpu(q, q.to(torch::kFloat64), q), c10::Error);
  EXPECT_THROW(causal_attention_cpu(q.to(torch::kBFloat16), q, q), c10::Error);
}

#else

TEST(CpuAttentionInput, WithoutCblasTheCompositionIsThePath) {
  EXPECT_FALSE(cpu_attention_supports(torch::randn({1, 2, 4, 8})));
  EXPECT_THROW(causal_attention_cpu(torch::randn({1, 2, 4, 8}), torch::randn({1, 2, 4, 8}), torch::randn({1, 2, 4, 8})),
               c10::Error);
}

#endif

}  // namespace
