#include "engine/cpu_attention.h"

#include <ATen/Parallel.h>

#include <algorithm>

namespace ppu {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// (batch, head) pairs per task: as many [S, S] score blocks as fit in ~256 KiB (a core's L2
// holds them with room for the operands), at least one.
int64_t pairs_per_task(int64_t S, int64_t element_size) {
  constexpr int64_t kCacheBytes = int64_t{256} << 10;
  return std::max<int64_t>(1, kCacheBytes / (S * S * element_size));
}

// Runs fn(begin, end) over [0, pairs) in tasks of `chunk` pairs on the intra-op pool. Inside a
// task, ATen ops and the OpenMP BLAS run single-threaded (they see a parallel region).
template <typename Fn>
void for_each_chunk(int64_t pairs, int64_t chunk, const Fn& fn) {
  const int64_t tasks = (pairs + chunk - 1) / chunk;
  at::parallel_for(0, tasks, 1, [&](int64_t first, int64_t last) {
    for (int64_t t = first; t < last; ++t) {
      const int64_t begin = t * chunk;
      fn(begin, std::min(pairs, begin + chunk) - begin);
    }
  });
}

struct CausalAttentionFunction : public torch::autograd::Function<CausalAttentionFunction> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& q, const torch::Tensor& k,
                               const torch::Tensor& v, const torch::Tensor& causal_bias) {
    const int64_t B = q.size(0), h = q.size(1), S = q.size(2), hd = q.size(3), pairs = B * h;
    const auto q3 = q.view({pairs, S, hd}), k3 = k.view({pairs, S, hd}), v3 = v.view({pairs, S, hd});
    const auto bias = causal_bias.narrow(0, 0, S).narrow(1, 0, S);
    auto probs = torch::empty({pairs, S, S}, q.options());
    auto out = torch::empty({pairs, S, hd}, q.options());
    for_each_chunk(pairs, pairs_per_task(S, q.element_size()), [&](int64_t at, int64_t n) {
      auto p = probs.narrow(0, at, n);
      torch::baddbmm_out(p, bias, q3.narrow(0, at, n), k3.narrow(0, at, n).transpose(1, 2));
      // softmax in place, as softmax computes it: subtract the row maximum, exponentiate, normalise
      p.sub_(std::get<0>(p.max(-1, true))).exp_();
      p.div_(p.sum(-1, true));
      auto o = out.narrow(0, at, n);
      torch::bmm_out(o, p, v3.narrow(0, at, n));
    });
    ctx->save_for_backward({q3, k3, v3, probs});
    return out.view({B, h, S, hd});
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    const auto saved = ctx->get_saved_variables();
    const auto &q3 = saved[0], &k3 = saved[1], &v3 = saved[2], &probs = saved[3];
    const auto shape = grad_outputs[0].sizes().vec();
    const int64_t pairs = q3.size(0), S = q3.size(1);
    const auto go = grad_outputs[0].contiguous().view(q3.sizes());
    auto gq = torch::empty_like(q3), gk = torch::empty_like(k3), gv = torch::empty_like(v3);
    for_each_chunk(pairs, pairs_per_task(S, q3.element_size()), [&](int64_t at, int64_t n) {
      const auto p = probs.narrow(0, at, n), g = go.narrow(0, at, n);
      auto dq = gq.narrow(0, at, n), dk = gk.narrow(0, at, n), dv = gv.narrow(0, at, n);
      torch::bmm_out(dv, p.transpose(1, 2), g);                      // dV = Pᵀ dO
      auto ds = torch::bmm(g, v3.narrow(0, at, n).transpose(1, 2));  // dP = dO Vᵀ
      ds.sub_((ds * p).sum(-1, true)).mul_(p);                       // dS = P ⊙ (dP − rowsum(dP ⊙ P))
      torch::bmm_out(dq, ds, k3.narrow(0, at, n));                   // dQ = dS K
      torch::bmm_out(dk, ds.transpose(1, 2), q3.narrow(0, at, n));   // dK = dSᵀ Q
    });
    return {gq.view(shape), gk.view(shape), gv.view(shape), torch::Tensor()};
  }
};

}  // namespace

torch::Tensor causal_attention_cpu(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                   const torch::Tensor& causal_bias) {
  TORCH_CHECK(q.dim() == 4 && q.is_contiguous() && k.is_contiguous() && v.is_contiguous(),
              "causal_attention_cpu: q, k, v must be contiguous [B, h, S, hd]");
  TORCH_CHECK(k.sizes() == q.sizes() && v.sizes() == q.sizes(), "causal_attention_cpu: q, k, v shapes differ");
  TORCH_CHECK(causal_bias.size(0) >= q.size(2), "causal_attention_cpu: the causal bias is shorter than the sequence");
  return CausalAttentionFunction::apply(q, k, v, causal_bias);
}

}  // namespace ppu
