#include "engine/cpu_attention.h"

#include <ATen/Parallel.h>

#include <limits>

#include "engine/matmul_flop_counter.h"

#if PPU_HAVE_CBLAS
#include <cblas.h>
#endif

namespace ppu {

#if PPU_HAVE_CBLAS

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// Row-major C[m, n] = op(A)[m, k] · op(B)[k, n], one BLAS call. Inside at::parallel_for the
// OpenMP OpenBLAS sees a parallel region and runs it on the calling core alone.
void gemm(bool trans_a, bool trans_b, int m, int n, int k, const float* a, int lda, const float* b, int ldb, float* c,
          int ldc) {
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, m, n, k, 1.0f, a,
              lda, b, ldb, 0.0f, c, ldc);
}

void gemm(bool trans_a, bool trans_b, int m, int n, int k, const double* a, int lda, const double* b, int ldb,
          double* c, int ldc) {
  cblas_dgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, m, n, k, 1.0, a,
              lda, b, ldb, 0.0, c, ldc);
}

// The first element of pair p of a contiguous [pairs, S, *] tensor.
template <typename T>
T* pair_ptr(const torch::Tensor& t, int64_t p) {
  return t.data_ptr<T>() + p * t.size(1) * t.size(2);
}

// Runs fn(p, scratch) for every pair p on the intra-op pool; `scratch` is a [buffers, S, S]
// tensor of the calling core, reused across its pairs.
template <typename Fn>
void for_each_pair(int64_t pairs, int64_t S, int64_t buffers, const torch::TensorOptions& options, const Fn& fn) {
  at::parallel_for(0, pairs, 1, [&](int64_t begin, int64_t end) {
    auto scratch = torch::empty({buffers, S, S}, options);
    for (int64_t p = begin; p < end; ++p) fn(p, scratch);
  });
}

template <typename T>
void forward_pairs(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v, torch::Tensor& probs,
                   torch::Tensor& out) {
  const int S = static_cast<int>(q.size(1)), hd = static_cast<int>(q.size(2));
  for_each_pair(q.size(0), S, 1, q.options(), [&](int64_t p, torch::Tensor& scratch) {
    auto scores = scratch.select(0, 0);
    T* s = scores.data_ptr<T>();
    gemm(false, true, S, S, hd, pair_ptr<T>(q, p), hd, pair_ptr<T>(k, p), hd, s, S);  // Q Kᵀ
    for (int i = 0; i + 1 < S; ++i) std::fill(s + i * S + i + 1, s + (i + 1) * S, -std::numeric_limits<T>::infinity());
    auto prob = probs.select(0, p);
    at::_softmax_out(prob, scores, 1, false);
    gemm(false, false, S, hd, S, prob.data_ptr<T>(), S, pair_ptr<T>(v, p), hd, pair_ptr<T>(out, p), hd);  // P V
  });
}

template <typename T>
void backward_pairs(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v, const torch::Tensor& probs,
                    const torch::Tensor& grad_out, torch::Tensor& gq, torch::Tensor& gk, torch::Tensor& gv) {
  const int S = static_cast<int>(q.size(1)), hd = static_cast<int>(q.size(2));
  for_each_pair(q.size(0), S, 2, q.options(), [&](int64_t p, torch::Tensor& scratch) {
    auto dp = scratch.select(0, 0), ds = scratch.select(0, 1);
    const T* prob = pair_ptr<T>(probs, p);
    const T* go = pair_ptr<T>(grad_out, p);
    gemm(true, false, S, hd, S, prob, S, go, hd, pair_ptr<T>(gv, p), hd);             // dV = Pᵀ dO
    gemm(false, true, S, S, hd, go, hd, pair_ptr<T>(v, p), hd, dp.data_ptr<T>(), S);  // dP = dO Vᵀ
    // dS = P ⊙ (dP − rowsum(dP ⊙ P)): zero where P is (the masked positions).
    at::_softmax_backward_data_out(ds, dp, probs.select(0, p), 1, q.scalar_type());
    const T* d = ds.data_ptr<T>();
    gemm(false, false, S, hd, S, d, S, pair_ptr<T>(k, p), hd, pair_ptr<T>(gq, p), hd);  // dQ = dS K
    gemm(true, false, S, hd, S, d, S, pair_ptr<T>(q, p), hd, pair_ptr<T>(gk, p), hd);   // dK = dSᵀ Q
  });
}

uint64_t pair_products(const torch::Tensor& q3, int products) {
  return static_cast<uint64_t>(products) * q3.size(0) * q3.size(1) * q3.size(1) * q3.size(2);
}

struct CausalAttentionFunction : public torch::autograd::Function<CausalAttentionFunction> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& q, const torch::Tensor& k,
                               const torch::Tensor& v) {
    const int64_t B = q.size(0), h = q.size(1), S = q.size(2), hd = q.size(3);
    const auto q3 = q.view({B * h, S, hd}), k3 = k.view({B * h, S, hd}), v3 = v.view({B * h, S, hd});
    auto probs = torch::empty({B * h, S, S}, q.options());
    auto out = torch::empty({B * h, S, hd}, q.options());
    AT_DISPATCH_FLOATING_TYPES(q.scalar_type(), "causal_attention_cpu",
                               [&] { forward_pairs<scalar_t>(q3, k3, v3, probs, out); });
    MatmulFlopCounter::add_multiply_adds(pair_products(q3, 2));
    ctx->save_for_backward({q3, k3, v3, probs});
    return out.view({B, h, S, hd});
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    const auto saved = ctx->get_saved_variables();
    const auto &q3 = saved[0], &k3 = saved[1], &v3 = saved[2], &probs = saved[3];
    const auto shape = grad_outputs[0].sizes().vec();
    const auto go = grad_outputs[0].contiguous().view(q3.sizes());
    auto gq = torch::empty_like(q3), gk = torch::empty_like(k3), gv = torch::empty_like(v3);
    AT_DISPATCH_FLOATING_TYPES(q3.scalar_type(), "causal_attention_cpu_backward",
                               [&] { backward_pairs<scalar_t>(q3, k3, v3, probs, go, gq, gk, gv); });
    MatmulFlopCounter::add_multiply_adds(pair_products(q3, 4));
    return {gq.view(shape), gk.view(shape), gv.view(shape)};
  }
};

}  // namespace

bool cpu_attention_supports(const torch::Tensor& q) {
  return q.device().is_cpu() && (q.scalar_type() == torch::kFloat32 || q.scalar_type() == torch::kFloat64);
}

torch::Tensor causal_attention_cpu(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v) {
  TORCH_CHECK(cpu_attention_supports(q), "causal_attention_cpu: q must be a float or double CPU tensor");
  TORCH_CHECK(q.dim() == 4 && q.is_contiguous() && k.is_contiguous() && v.is_contiguous(),
              "causal_attention_cpu: q, k, v must be contiguous [B, h, S, hd]");
  TORCH_CHECK(k.sizes() == q.sizes() && v.sizes() == q.sizes(), "causal_attention_cpu: q, k, v shapes differ");
  TORCH_CHECK(k.scalar_type() == q.scalar_type() && v.scalar_type() == q.scalar_type(),
              "causal_attention_cpu: q, k, v dtypes differ");
  TORCH_CHECK(q.size(2) <= std::numeric_limits<int>::max() / q.size(2), "causal_attention_cpu: sequence too long");
  return CausalAttentionFunction::apply(q, k, v);
}

#else  // no CBLAS in this build: the ATen composition is the CPU path

bool cpu_attention_supports(const torch::Tensor&) { return false; }

torch::Tensor causal_attention_cpu(const torch::Tensor&, const torch::Tensor&, const torch::Tensor&) {
  TORCH_CHECK(false, "causal_attention_cpu: this build has no CBLAS (PPU_OPENBLAS_OPENMP_DIR was empty)");
}

#endif

}  // namespace ppu
