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

// Adds, over rows [begin, begin + n), the mean loss's terms to `total` and, when gh or gw is
// defined, the chunk's dL/dh rows and dL/dW (for an upstream gradient of 1): G = (softmax −
// onehot)/N from the logits already at hand, so each chunk's logits are computed once.
void loss_chunk(const torch::Tensor& hidden, const torch::Tensor& weight, const torch::Tensor& targets, int64_t begin,
                int64_t n, torch::Tensor& total, torch::Tensor& gh, torch::Tensor& gw) {
  const int64_t N = hidden.size(0);
  auto logits = chunk_logits(hidden, weight, begin, n);  // [n, V] fp32
  const auto t = targets.narrow(0, begin, n).unsqueeze(1);
  const auto lse = torch::logsumexp(logits, 1, /*keepdim=*/true);
  total += (lse - logits.gather(1, t)).sum().to(torch::kFloat64);
  if (!gh.defined() && !gw.defined()) return;
  auto& d = logits.sub_(lse).exp_();  // softmax, in place of the logits
  d.scatter_add_(1, t, torch::full({n, 1}, -1.0f, d.options()));
  d.mul_(1.0 / static_cast<double>(N));
  const auto gc = d.to(hidden.scalar_type());
  if (gh.defined()) {  // rows of a contiguous tensor: the GEMM writes them in place
    auto rows = gh.narrow(0, begin, n);
    torch::mm_out(rows, gc, weight);
  }
  if (gw.defined()) accumulate_at_b(gw, gc, hidden.narrow(0, begin, n));
}

// The gradients are taken inside the forward, chunk by chunk while its logits exist (the loss
// is the graph's last node: its backward follows at once), and the backward only scales them by
// the upstream gradient. No logits are recomputed; dL/dW's fp32 buffer lives from the loss's
// forward to its backward, where the plain order allocates it at the backward's start, so the
// peak is the same.
struct ChunkedCrossEntropy : public torch::autograd::Function<ChunkedCrossEntropy> {
  // want_h, want_w: whether hidden and weight will get a gradient (decided before apply, where
  // grad mode is still the caller's; inside forward it is off).
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& hidden, const torch::Tensor& weight,
                               const torch::Tensor& targets, int64_t chunk, bool want_h, bool want_w) {
    const int64_t N = hidden.size(0);
    torch::Tensor gh = want_h ? torch::empty_like(hidden) : torch::Tensor();
    // dL/dW accumulates over chunks in fp32 and takes the weight's dtype in the backward.
    torch::Tensor gw = want_w ? torch::zeros(weight.sizes(), weight.options().dtype(torch::kFloat32)) : torch::Tensor();
    auto total = torch::zeros({}, hidden.options().dtype(torch::kFloat64));
    for (int64_t b = 0; b < N; b += chunk)
      loss_chunk(hidden, weight, targets, b, std::min(chunk, N - b), total, gh, gw);
    ctx->saved_data["gh"] = gh;
    ctx->saved_data["gw"] = gw;
    ctx->saved_data["weight_dtype"] = weight.scalar_type();
    return (total / static_cast<double>(N)).to(torch::kFloat32);
  }

  // grad_outputs[0] is a 0-dim fp32 tensor on the device: a multiply, not a host sync. The
  // gradients leave the context, so a second backward through the same graph is an error.
  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    auto& saved = ctx->saved_data;
    TORCH_CHECK(saved.count("gh") == 1,
                "chunked_cross_entropy: backward runs once per forward (its gradients are taken in the forward)");
    const auto tensor = [](const c10::IValue& v) { return v.isTensor() ? v.toTensor() : torch::Tensor(); };
    auto gh = tensor(saved["gh"]);
    auto gw = tensor(saved["gw"]);
    const auto dtype = saved["weight_dtype"].toScalarType();
    saved.clear();
    const auto& g = grad_outputs[0];
    return {gh.defined() ? gh.mul_(g) : gh,
            gw.defined() ? gw.mul_(g).to(dtype) : gw,
            torch::Tensor(),
            torch::Tensor(),
            torch::Tensor(),
            torch::Tensor()};
  }
};

}  // namespace

torch::Tensor chunked_cross_entropy(const torch::Tensor& hidden, const torch::Tensor& weight,
                                    const torch::Tensor& targets, int64_t chunk) {
  TORCH_CHECK(hidden.dim() == 2 && weight.dim() == 2 && targets.dim() == 1 && chunk > 0,
              "chunked_cross_entropy: hidden [N, d], weight [V, d], targets [N], chunk > 0");
  // Without grad mode (evaluation) nothing but the loss is computed.
  const bool grad = torch::GradMode::is_enabled();
  return ChunkedCrossEntropy::apply(hidden.contiguous(), weight, targets.contiguous(), chunk,
                                    grad && hidden.requires_grad(), grad && weight.requires_grad());
}

}  // namespace ppu
