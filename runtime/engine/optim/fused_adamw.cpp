#include "engine/optim/fused_adamw.h"

#include <ATen/Parallel.h>
#include <torch/version.h>

#include <cmath>

namespace ppu {

namespace {

struct Coefficients {
  float grad_scale, decay, beta1, one_minus_beta1, beta2, one_minus_beta2, sqrt_bc2, eps, neg_step_size;
};

// The same sequence of float operations, element by element, as LibTorch's unfused AdamW.
// Vectorised: the four arrays never overlap (restrict), the file is compiled without errno for
// sqrt (runtime/engine/CMakeLists.txt; v >= 0 here), and an AVX2 clone is picked at load time
// where the CPU has it. Vector sqrt and division round like the scalar ones, and no FMA is
// contracted (AVX2 only), so the results are bit-identical to the scalar loop.
__attribute__((target_clones("avx2", "default"))) void update(float* __restrict p, const float* __restrict g,
                                                              float* __restrict m, float* __restrict v, int64_t n,
                                                              const Coefficients& c) {
  for (int64_t i = 0; i < n; ++i) {
    const float gi = g[i] * c.grad_scale;
    const float mi = m[i] * c.beta1 + c.one_minus_beta1 * gi;
    const float vi = v[i] * c.beta2 + c.one_minus_beta2 * gi * gi;
    m[i] = mi;
    v[i] = vi;
    const float denom = std::sqrt(vi) / c.sqrt_bc2 + c.eps;
    p[i] = p[i] * c.decay + c.neg_step_size * mi / denom;
  }
}

}  // namespace

bool fused_adamw_step(torch::Tensor& param, const torch::Tensor& grad, torch::Tensor& exp_avg,
                      torch::Tensor& exp_avg_sq, const AdamWHyper& h) {
  const auto f32 = torch::kFloat32;
  if (param.scalar_type() != f32 || grad.scalar_type() != f32 || exp_avg.scalar_type() != f32 ||
      exp_avg_sq.scalar_type() != f32 || !param.device().is_cpu())
    return false;
  if (!grad.is_contiguous() || !exp_avg.is_contiguous() || !exp_avg_sq.is_contiguous()) return false;
  if (grad.numel() != param.numel() || exp_avg.numel() != param.numel() || exp_avg_sq.numel() != param.numel())
    return false;
  // Rows: contiguous parameter = one row; a 2-D view with contiguous rows = size(0) rows.
  int64_t row_length = param.numel(), row_stride = 0;
  if (!param.is_contiguous()) {
    if (param.dim() != 2 || param.stride(1) != 1) return false;
    row_length = param.size(1);
    row_stride = param.stride(0);
  }
  const double bc1 = 1 - std::pow(h.beta1, static_cast<double>(h.step));
  const double bc2 = 1 - std::pow(h.beta2, static_cast<double>(h.step));
  const Coefficients c{h.grad_scale,
                       static_cast<float>(1 - h.lr * h.weight_decay),
                       static_cast<float>(h.beta1),
                       static_cast<float>(1 - h.beta1),
                       static_cast<float>(h.beta2),
                       static_cast<float>(1 - h.beta2),
                       static_cast<float>(std::sqrt(bc2)),
                       static_cast<float>(h.eps),
                       static_cast<float>(-h.lr / bc1)};
  auto* p = param.data_ptr<float>();
  const float* g = grad.data_ptr<float>();
  auto* m = exp_avg.data_ptr<float>();
  auto* v = exp_avg_sq.data_ptr<float>();
  const int64_t n = param.numel();
  // Flat element ranges over the logical (row-major) order; each maps to pieces of rows.
  at::parallel_for(0, n, 1 << 15, [&](int64_t begin, int64_t end) {
    while (begin < end) {
      const int64_t row = begin / row_length, col = begin % row_length;
      const int64_t len = std::min(end - begin, row_length - col);
      update(p + row * row_stride + col, g + begin, m + begin, v + begin, len, c);
      begin += len;
    }
  });
  return true;
}

bool fused_adamw_step_cuda(torch::Tensor& param, const torch::Tensor& grad, torch::Tensor& exp_avg,
                           torch::Tensor& exp_avg_sq, const AdamWHyper& h) {
#if TORCH_VERSION_MAJOR >= 2
  for (const torch::Tensor* t : std::initializer_list<const torch::Tensor*>{&param, &grad, &exp_avg, &exp_avg_sq})
    if (!t->is_cuda() || !t->is_contiguous() || t->scalar_type() != torch::kFloat32) return false;
  const auto g = h.grad_scale != 1.0f ? grad * h.grad_scale : grad;
  // The kernel reads the step (already incremented) from a device tensor, as torch.optim does.
  const auto step = torch::full({}, static_cast<double>(h.step), param.options());
  at::_fused_adamw_({param}, {g}, {exp_avg}, {exp_avg_sq}, {}, {step}, h.lr, h.beta1, h.beta2, h.weight_decay, h.eps,
                    /*amsgrad=*/false, /*maximize=*/false);
  return true;
#else
  (void)param, (void)grad, (void)exp_avg, (void)exp_avg_sq, (void)h;
  return false;
#endif
}

}  // namespace ppu
