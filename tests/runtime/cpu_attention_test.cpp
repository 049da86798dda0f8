// causal_attention_cpu against the composition it replaces (baddbmm with the causal bias,
// softmax, bmm, differentiated by autograd): values, the gradients of q, k and v, the FLOPs the
// counter sees, for one task and for many (sequences long enough that each task holds one
// (batch, head) pair, and a pair count the chunking does not divide).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <limits>

#include "engine/cpu_attention.h"
#include "engine/matmul_flop_counter.h"

using namespace ppu;

namespace {

torch::Tensor causal_bias(int64_t n, torch::Dtype dtype) {
  return torch::full({n, n}, -std::numeric_limits<double>::infinity(), torch::TensorOptions().dtype(dtype)).triu(1);
}

torch::Tensor reference(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                        const torch::Tensor& bias) {
  const int64_t B = q.size(0), h = q.size(1), S = q.size(2), hd = q.size(3);
  auto scores = torch::baddbmm(bias.narrow(0, 0, S).narrow(1, 0, S), q.reshape({B * h, S, hd}),
                               k.reshape({B * h, S, hd}).transpose(1, 2));
  return torch::bmm(torch::softmax(scores, -1), v.reshape({B * h, S, hd})).view({B, h, S, hd});
}

struct Shape {
  int64_t B, h, S, hd, bias_len;
};

class CpuAttention : public ::testing::TestWithParam<Shape> {};

TEST_P(CpuAttention, MatchesTheCompositionForwardAndBackward) {
  const int64_t B = GetParam().B, h = GetParam().h, S = GetParam().S, hd = GetParam().hd;
  const int64_t bias_len = GetParam().bias_len;
  torch::manual_seed(7);
  const auto opts = torch::TensorOptions().dtype(torch::kFloat64);
  auto make = [&] { return (torch::randn({B, h, S, hd}, opts) * 0.5).requires_grad_(true); };
  auto q = make(), k = make(), v = make();
  const auto bias = causal_bias(bias_len, torch::kFloat64);
  const auto upstream = torch::randn({B, h, S, hd}, opts);

  const auto ours = causal_attention_cpu(q, k, v, bias);
  const auto grads = torch::autograd::grad({ours}, {q, k, v}, {upstream});
  const auto ref = reference(q, k, v, bias);
  const auto ref_grads = torch::autograd::grad({ref}, {q, k, v}, {upstream});

  EXPECT_TRUE(ours.is_contiguous());
  EXPECT_TRUE(torch::allclose(ours, ref, 1e-12, 1e-12)) << (ours - ref).abs().max().item<double>();
  const char* names[] = {"q", "k", "v"};
  for (int i = 0; i < 3; ++i)
    EXPECT_TRUE(torch::allclose(grads[i], ref_grads[i], 1e-10, 1e-12))
        << "d" << names[i] << " differs by " << (grads[i] - ref_grads[i]).abs().max().item<double>();
}

TEST_P(CpuAttention, TheCounterSeesTheCompositionsFlops) {
  const int64_t B = GetParam().B, h = GetParam().h, S = GetParam().S, hd = GetParam().hd;
  const int64_t bias_len = GetParam().bias_len;
  auto make = [&] { return torch::randn({B, h, S, hd}).requires_grad_(true); };
  auto q = make(), k = make(), v = make();
  const auto bias = causal_bias(bias_len, torch::kFloat32);
  auto count = [&](auto attend) {
    MatmulFlopCounter counter;
    attend().sum().backward();
    return counter.flops();
  };
  const double ours = count([&] { return causal_attention_cpu(q, k, v, bias); });
  const double ref = count([&] { return reference(q, k, v, bias); });
  // QKᵀ and PV forward, dV, dP, dQ and dK backward: six products of S·S·hd multiply-adds per pair.
  EXPECT_DOUBLE_EQ(ours, 6.0 * 2 * B * h * S * S * hd);
  EXPECT_DOUBLE_EQ(ours, ref);
}

// One task (short sequences) and many (S = 160 in fp64: one pair per task; 15 pairs).
INSTANTIATE_TEST_SUITE_P(Shapes, CpuAttention,
                         ::testing::Values(Shape{2, 3, 12, 8, 12}, Shape{1, 2, 5, 4, 16}, Shape{3, 5, 160, 16, 160}));

TEST(CpuAttentionInput, RejectsNonContiguousOrMismatchedInputs) {
  const auto q = torch::randn({1, 2, 4, 8});
  const auto bias = causal_bias(4, torch::kFloat32);
  EXPECT_THROW(causal_attention_cpu(q.transpose(2, 3), q, q, bias), c10::Error);
  EXPECT_THROW(causal_attention_cpu(q, torch::randn({1, 2, 4, 4}), q, bias), c10::Error);
  EXPECT_THROW(causal_attention_cpu(q, q, q, causal_bias(3, torch::kFloat32)), c10::Error);
}

}  // namespace
