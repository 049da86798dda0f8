// fused_adamw_step: one AdamW update of one parameter in a single pass over its elements, with
// LibTorch's AdamW semantics (decoupled weight decay p *= 1 - lr*wd, bias-corrected moments,
// denominator sqrt(v)/sqrt(1 - beta2^t) + eps) on the state tensors of torch::optim::AdamW, so
// checkpoints and state accounting are unchanged. torch::optim::AdamW runs the same update as
// about ten separate tensor operations, each a full pass over memory; AdamW is memory-bound, so
// one pass is several times faster (bench: bench/pytorch_peer, tests: InnerOptimizer.*).
// Handles contiguous parameters and 2-D views whose rows are contiguous (the column slices of
// PartialLinear); `grad`, `exp_avg`, `exp_avg_sq` must be contiguous float tensors. The update
// reads each gradient element times `grad_scale` (gradient-norm clipping's factor), the float
// product `grad.mul_(scale)` would have stored, without that extra pass over the gradient.
#pragma once

#include <torch/torch.h>

namespace ppu {

struct AdamWHyper {
  double lr, beta1, beta2, eps, weight_decay;
  int64_t step;             // 1-based, after increment
  float grad_scale = 1.0f;  // clipping factor applied to the gradient (1: none)
};

// False (and nothing changed) when the layout is not one of the supported ones.
bool fused_adamw_step(torch::Tensor& param, const torch::Tensor& grad, torch::Tensor& exp_avg,
                      torch::Tensor& exp_avg_sq, const AdamWHyper& h);

// The same update on a CUDA device (LibTorch 2.x): PyTorch's fused AdamW kernel, the one
// torch.optim.AdamW(fused=True) launches, for one parameter: one pass instead of the fallback's
// ten. Same semantics, fp32 arithmetic in registers (not bit-identical to the fallback). False
// (nothing changed) for CPU tensors, LibTorch 1.x, or tensors not contiguous fp32.
bool fused_adamw_step_cuda(torch::Tensor& param, const torch::Tensor& grad, torch::Tensor& exp_avg,
                           torch::Tensor& exp_avg_sq, const AdamWHyper& h);

}  // namespace ppu
