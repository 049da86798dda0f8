// The bf16 chunked cross-entropy's check, shared by the CPU test (model/mixed_precision_test.cpp)
// and the CUDA one (gpu/cuda_test.cpp, where bf16 GEMMs write fp32 and accumulate dL/dW in their
// epilogue): on `device`, the fp32 loss and the bf16 gradients of chunked_cross_entropy stay
// within bf16's rounding of the fp64 reference, whose conditioning sets the bound.
#pragma once

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdio>

#include "engine/model/chunked_cross_entropy.h"
#include "model/per_token_gradients.h"

namespace ppu::test {

// Rounding h and w to bf16, the logits' matmul, log-softmax and the mean make the loss's 5
// operations; the backward's softmax − one-hot, its rounding and the matmul of dh or dW make 3
// more (bf16_error_bound). dh's rows are separate tokens, so its error is ε per row; dW sums N
// tokens' outer products, so it gets the conditioning κ_W = sqrt(Σ_t ‖G_t‖²‖h_t‖²) / ‖Gᵀh‖ with
// G = (softmax − one-hot)/N; the loss, a mean of positive terms, κ = sqrt(Σ ℓ_t²) / Σ ℓ_t.
// h0 [N, d] and w0 [V, d] are fp32 on the CPU; `chunk` need not divide N.
inline void expect_bf16_chunked_loss_within_bounds(const torch::Tensor& h0, const torch::Tensor& w0,
                                                   const torch::Tensor& targets, int64_t chunk, torch::Device device) {
  const int64_t N = h0.size(0), V = w0.size(0);
  auto hb = h0.to(device, torch::kBFloat16).requires_grad_(true);
  auto wb = w0.to(device, torch::kBFloat16).requires_grad_(true);
  const auto lb = chunked_cross_entropy(hb, wb, targets.to(device), chunk);
  lb.backward();
  const auto h64 = h0.to(torch::kFloat64), w64 = w0.to(torch::kFloat64);
  const auto logits = h64.mm(w64.t());
  const auto per_token_loss = -logits.log_softmax(1).gather(1, targets.unsqueeze(1)).squeeze(1);  // ℓ_t
  const auto G = (logits.softmax(1) - torch::one_hot(targets, V).to(torch::kFloat64)) / N;
  const double loss = per_token_loss.mean().item<double>();
  const double kappa_loss = per_token_loss.pow(2).sum().sqrt().item<double>() / per_token_loss.sum().item<double>();
  const double kappa_w =
      (G.pow(2).sum(1) * h64.pow(2).sum(1)).sum().sqrt().item<double>() / G.t().mm(h64).norm().item<double>();
  EXPECT_EQ(lb.scalar_type(), torch::kFloat32);
  EXPECT_EQ(lb.device().type(), device.type());
  EXPECT_NEAR(lb.item<double>(), loss, bf16_error_bound(5) * kappa_loss * loss);
  EXPECT_EQ(hb.grad().scalar_type(), torch::kBFloat16);
  EXPECT_EQ(wb.grad().scalar_type(), torch::kBFloat16);
  const double eh = rel_error(hb.grad(), G.mm(w64)), ew = rel_error(wb.grad(), G.t().mm(h64));
  EXPECT_LT(eh, bf16_error_bound(8));
  EXPECT_LT(ew, bf16_error_bound(8) * kappa_w);
  std::printf("[ bf16     ] chunked head on %s: dh error %.4f (bound %.4f), dW error %.4f (kappa %.2f, bound %.4f)\n",
              device.str().c_str(), eh, bf16_error_bound(8), ew, kappa_w, bf16_error_bound(8) * kappa_w);
}

}  // namespace ppu::test
