// The bf16 tolerance the gradient tests share (model/mixed_precision_test.cpp on the CPU,
// gpu/cuda_test.cpp on a CUDA device): bf16_error_bound, the relative error of a quantity
// computed through `ops` bf16 operations, rel_error, the measured one, and per_token_squares, the per-token gradients
// that give each tensor's conditioning κ (how much cancellation its gradient sum hides).
#pragma once

#include <torch/torch.h>

#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#include "engine/model/transformer.h"

namespace ppu::test {

// With confidence 1 − 2·exp(−λ²/2) for λ = 5: each operation adds an independent, zero-mean
// relative error of at most u = 2^-8 (bf16's unit roundoff), and Hoeffding's inequality bounds
// their sum by λ·√ops·u (the probabilistic rounding-error analysis of Higham & Mary, SIAM J. Sci.
// Comput. 41(5), 2019).
inline double bf16_error_bound(double ops) {
  constexpr double kU = 1.0 / 256, kLambda = 5;
  return kLambda * std::sqrt(ops) * kU;
}

// ‖a − ref‖ / ‖ref‖ in fp64 on the host, for tensors on any device.
inline double rel_error(const torch::Tensor& a, const torch::Tensor& ref) {
  const auto a64 = a.detach().to(torch::kCPU, torch::kFloat64), r64 = ref.detach().to(torch::kCPU, torch::kFloat64);
  return (a64 - r64).norm().item<double>() / r64.norm().item<double>();
}

// Σ over the B·S tokens of each per-token gradient squared, element by element (fp64, each
// trainable tensor's shape), and of the per-token losses squared. The loss is the mean of the
// per-token losses ℓ_{b,t}, and ℓ_{b,t} depends only on tokens ≤ t (causal attention), so
// sequence b's prefix of t tokens alone has loss L_{b,t} = (1/t)·Σ_{τ≤t} ℓ_{b,τ}: ℓ_{b,t} =
// t·L_{b,t} − (t−1)·L_{b,t−1}, and the same for the gradients. Summing a tensor's (or a slice's)
// elements gives its Σ_{b,t} ‖∇ℓ_{b,t}‖².
struct PerTokenSquares {
  std::vector<torch::Tensor> gradients;
  double losses = 0;
};

inline PerTokenSquares per_token_squares(const Transformer& model, const torch::Tensor& tokens) {
  const auto& params = model.trainable();
  PerTokenSquares out;
  for (const auto& p : params) out.gradients.push_back(torch::zeros(p.sizes(), p.options().dtype(torch::kFloat64)));
  auto clear = [&] {
    for (const auto& p : params)
      if (p.grad().defined()) p.mutable_grad() = torch::Tensor();
  };
  const int64_t B = tokens.size(0), S = tokens.size(1) - 1;
  for (int64_t b = 0; b < B; ++b) {
    std::vector<torch::Tensor> previous;  // t·∇L_{b,t} of the previous prefix
    double previous_loss = 0;
    for (int64_t t = 1; t <= S; ++t) {
      clear();
      const auto loss = model.loss(tokens.narrow(0, b, 1).narrow(1, 0, t + 1)) * static_cast<double>(t);
      loss.backward();
      const auto value = loss.item<double>();
      out.losses += (value - previous_loss) * (value - previous_loss);
      previous_loss = value;
      std::vector<torch::Tensor> current;
      for (size_t i = 0; i < params.size(); ++i) {
        const auto& g = params[i].grad();  // undefined: the tensor did not take part
        current.push_back(g.defined() ? g.to(torch::kFloat64) : torch::zeros_like(out.gradients[i]));
        out.gradients[i].add_((previous.empty() ? current[i] : current[i] - previous[i]).pow(2));
      }
      previous = std::move(current);
    }
  }
  clear();
  return out;
}

}  // namespace ppu::test
