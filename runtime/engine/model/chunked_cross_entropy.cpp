#include "engine/model/chunked_cross_entropy.h"

#include <torch/version.h>

namespace ppu {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// CUDA with LibTorch >= 2.11 (the version the GPU machines run): a bf16 GEMM writes fp32
// directly (aten::mm.dtype, addmm.dtype_out; CUDA-only ops), instead of a bf16 result and a
// cast pass, and dL/dW's fp32 accumulation happens in the GEMM's epilogue (beta = 1) instead of
// a bf16 product, a cast and an add over the whole [vocab, d] per chunk.
#define PPU_FP32_OUT_GEMM (TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 11))

#if PPU_FP32_OUT_GEMM
bool fp32_out_gemm(const torch::Tensor& a) { return a.is_cuda() && a.scalar_type() == torch::kBFloat16; }
#endif

// fp32 logits of rows [begin, begin + n) of `hidden`.
torch::Tensor chunk_logits(const torch::Tensor& hidden, const torch::Tensor& weight, int64_t begin, int64_t n) {
  const auto h = hidden.narrow(0, begin, n);
#if PPU_FP32_OUT_GEMM
  if (fp32_out_gemm(h)) return at::mm(h, weight.t(), torch::kFloat32);
#endif
  return h.mm(weight.t()).to(torch::kFloat32);
}

// gw += a^T b in fp32, for bf16 or fp32 a and b.
void accumulate_at_b(torch::Tensor& gw, const torch::Tensor& a, const torch::Tensor& b) {
#if PPU_FP32_OUT_GEMM
  if (fp32_out_gemm(a)) {
    at::addmm_out(gw, gw, a.t(), b, torch::kFloat32);
    return;
  }
#endif
  if (a.scalar_type() == torch::kFloat32) gw.addmm_(a.t(), b);
  else gw.add_(a.t().mm(b).to(torch::kFloat32));
}

struct ChunkedCrossEntropy : public torch::autograd::Function<ChunkedCrossEntropy> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& hidden, const torch::Tensor& weight,
                               const torch::Tensor& targets, int64_t chunk) {
    ctx->save_for_backward({hidden, weight, targets});
    ctx->saved_data["chunk"] = chunk;
    const int64_t N = hidden.size(0);
    auto total = torch::zeros({}, hidden.options().dtype(torch::kFloat64));
    for (int64_t b = 0; b < N; b += chunk) {
      const int64_t n = std::min(chunk, N - b);
      const auto logits = chunk_logits(hidden, weight, b, n);
      const auto picked = logits.gather(1, targets.narrow(0, b, n).unsqueeze(1)).squeeze(1);
      total += (torch::logsumexp(logits, 1) - picked).sum().to(torch::kFloat64);
    }
    return (total / static_cast<double>(N)).to(torch::kFloat32);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    const auto saved = ctx->get_saved_variables();
    const auto& hidden = saved[0];
    const auto& weight = saved[1];
    const auto& targets = saved[2];
    const int64_t chunk = ctx->saved_data["chunk"].toInt();
    const int64_t N = hidden.size(0);
    const double scale = grad_outputs[0].item<double>() / static_cast<double>(N);
    const bool need_h = ctx->needs_input_grad(0), need_w = ctx->needs_input_grad(1);
    torch::Tensor gh = need_h ? torch::empty_like(hidden) : torch::Tensor();
    // dL/dW accumulates over chunks in fp32, then takes the weight's dtype once.
    torch::Tensor gw = need_w ? torch::zeros(weight.sizes(), weight.options().dtype(torch::kFloat32)) : torch::Tensor();
    for (int64_t b = 0; b < N; b += chunk) {
      const int64_t n = std::min(chunk, N - b);
      auto d = torch::softmax(chunk_logits(hidden, weight, b, n), 1);  // [n, V] fp32
      d.scatter_add_(1, targets.narrow(0, b, n).unsqueeze(1), torch::full({n, 1}, -1.0f, d.options()));
      d.mul_(scale);
      const auto dc = d.to(hidden.scalar_type());
      if (need_h) {  // rows of a contiguous tensor: the GEMM writes them in place
        auto rows = gh.narrow(0, b, n);
        torch::mm_out(rows, dc, weight);
      }
      if (need_w) accumulate_at_b(gw, dc, hidden.narrow(0, b, n));
    }
    return {gh, need_w ? gw.to(weight.scalar_type()) : torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

torch::Tensor chunked_cross_entropy(const torch::Tensor& hidden, const torch::Tensor& weight,
                                    const torch::Tensor& targets, int64_t chunk) {
  TORCH_CHECK(hidden.dim() == 2 && weight.dim() == 2 && targets.dim() == 1 && chunk > 0,
              "chunked_cross_entropy: hidden [N, d], weight [V, d], targets [N], chunk > 0");
  return ChunkedCrossEntropy::apply(hidden.contiguous(), weight, targets.contiguous(), chunk);
}

}  // namespace ppu
