#include "engine/model/cpu_attention.h"

#include <ATen/Parallel.h>

#include <limits>

#include "engine/obs/matmul_flop_counter.h"

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
void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b,
          int64_t ldb, float* c, int64_t ldc) {
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans,
              static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), 1.0f, a, static_cast<int>(lda), b,
              static_cast<int>(ldb), 0.0f, c, static_cast<int>(ldc));
}

void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const double* a, int64_t lda, const double* b,
          int64_t ldb, double* c, int64_t ldc) {
  cblas_dgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans,
              static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), 1.0, a, static_cast<int>(lda), b,
              static_cast<int>(ldb), 0.0, c, static_cast<int>(ldc));
}

// Where pair p = (batch b, head j) lives: its rows in qkv (and its gradient) and in the output.
struct Geometry {
  int64_t B, S, h, hd;
  int64_t d() const { return h * hd; }
  int64_t pairs() const { return B * h; }
  // part 0, 1, 2: the pair's Q, K, V rows (row stride 3·D).
  int64_t qkv_offset(int64_t p, int part) const { return (p / h) * S * 3 * d() + part * d() + (p % h) * hd; }
  int64_t out_offset(int64_t p) const { return (p / h) * S * d() + (p % h) * hd; }
};

// Rows of the projection are hd elements every 3·h·hd: too far apart for the hardware
// prefetcher, so the rotations fetch the row kAhead positions ahead themselves.
constexpr int64_t kAhead = 4;
template <typename T>
constexpr int64_t kLine = 64 / sizeof(T);

// dst (contiguous [S, hd]) = the rows of src (row stride ld), each rotated by its position's
// table rows: x ⊙ cos + (−x₂, x₁) ⊙ sin, the operations of Transformer::rotate in its order.
template <typename T>
void rotate_rows(const T* src, int64_t ld, const T* cos, const T* sin, int64_t S, int64_t hd, T* dst) {
  const int64_t half = hd / 2;
  for (int64_t s = 0; s < S; ++s, src += ld, cos += hd, sin += hd, dst += hd) {
    if (s + kAhead < S)
      for (int64_t i = 0; i < hd; i += kLine<T>) __builtin_prefetch(src + kAhead * ld + i);
    for (int64_t i = 0; i < half; ++i) dst[i] = src[i] * cos[i] + -src[i + half] * sin[i];
    for (int64_t i = half; i < hd; ++i) dst[i] = src[i] * cos[i] + src[i - half] * sin[i];
  }
}

// The transpose of rotate_rows: dst's rows (row stride ld) = the gradient of its input, given
// the gradient of its output in src (contiguous [S, hd]).
template <typename T>
void unrotate_rows(const T* src, const T* cos, const T* sin, int64_t S, int64_t hd, T* dst, int64_t ld) {
  const int64_t half = hd / 2;
  for (int64_t s = 0; s < S; ++s, src += hd, cos += hd, sin += hd, dst += ld) {
    if (s + kAhead < S)
      for (int64_t i = 0; i < hd; i += kLine<T>) __builtin_prefetch(dst + kAhead * ld + i, 1);
    for (int64_t i = 0; i < half; ++i) dst[i] = src[i] * cos[i] + src[i + half] * sin[i + half];
    for (int64_t i = half; i < hd; ++i) dst[i] = src[i] * cos[i] + -src[i - half] * sin[i - half];
  }
}

// One core's scratch, reused across its pairs: `squares` [S, S] tensors (ATen's softmax kernels
// take tensors) and `rows` [S, hd] buffers.
template <typename T>
struct Workspace {
  Workspace(int64_t squares, int64_t rows, const Geometry& g, const torch::TensorOptions& options)
      : buffer(torch::empty({squares * g.S * g.S + rows * g.S * g.hd}, options)) {
    for (int64_t i = 0; i < squares; ++i) square.push_back(buffer.narrow(0, i * g.S * g.S, g.S * g.S).view({g.S, g.S}));
    for (int64_t i = 0; i < rows; ++i) row.push_back(buffer.data_ptr<T>() + squares * g.S * g.S + i * g.S * g.hd);
  }
  torch::Tensor buffer;
  std::vector<torch::Tensor> square;
  std::vector<T*> row;
};

// Runs fn(p, workspace) for every pair p on the intra-op pool, one workspace per core.
template <typename T, typename Fn>
void for_each_pair(const Geometry& g, int64_t squares, int64_t rows, const torch::TensorOptions& options,
                   const Fn& fn) {
  at::parallel_for(0, g.pairs(), 1, [&](int64_t begin, int64_t end) {
    Workspace<T> ws(squares, rows, g, options);
    for (int64_t p = begin; p < end; ++p) fn(p, ws);
  });
}

template <typename T>
const T* table(const RotaryTables& rope, int which) {
  const torch::Tensor* t[] = {&rope.cos_q, &rope.sin_q, &rope.cos_k, &rope.sin_k};
  return t[which]->data_ptr<T>();
}

// The pair's rotated queries and keys into rows 0 and 1 of the workspace.
template <typename T>
void rotate_pair(const T* qkv, int64_t p, const Geometry& g, const RotaryTables& rope, Workspace<T>& ws) {
  rotate_rows(qkv + g.qkv_offset(p, 0), 3 * g.d(), table<T>(rope, 0), table<T>(rope, 1), g.S, g.hd, ws.row[0]);
  rotate_rows(qkv + g.qkv_offset(p, 1), 3 * g.d(), table<T>(rope, 2), table<T>(rope, 3), g.S, g.hd, ws.row[1]);
}

template <typename T>
void forward_pairs(const torch::Tensor& qkv, const Geometry& g, const RotaryTables& rope, torch::Tensor& probs,
                   torch::Tensor& out) {
  const int64_t S = g.S, hd = g.hd;
  const T* x = qkv.data_ptr<T>();
  for_each_pair<T>(g, 1, 2, qkv.options(), [&](int64_t p, Workspace<T>& ws) {
    rotate_pair(x, p, g, rope, ws);
    T* s = ws.square[0].template data_ptr<T>();
    gemm(false, true, S, S, hd, ws.row[0], hd, ws.row[1], hd, s, S);  // Q Kᵀ
    for (int64_t i = 0; i + 1 < S; ++i)
      std::fill(s + i * S + i + 1, s + (i + 1) * S, -std::numeric_limits<T>::infinity());
    auto prob = probs.select(0, p);
    at::_softmax_out(prob, ws.square[0], 1, false);
    gemm(false, false, S, hd, S, prob.data_ptr<T>(), S, x + g.qkv_offset(p, 2), 3 * g.d(),  // P V
         out.data_ptr<T>() + g.out_offset(p), g.d());
  });
}

template <typename T>
void backward_pairs(const torch::Tensor& qkv, const Geometry& g, const RotaryTables& rope, const torch::Tensor& probs,
                    const torch::Tensor& grad_out, torch::Tensor& grad_qkv) {
  const int64_t S = g.S, hd = g.hd, ld = 3 * g.d();
  const T* x = qkv.data_ptr<T>();
  T* gx = grad_qkv.data_ptr<T>();
  for_each_pair<T>(g, 2, 4, qkv.options(), [&](int64_t p, Workspace<T>& ws) {
    rotate_pair(x, p, g, rope, ws);
    const T* prob = probs.data_ptr<T>() + p * S * S;
    const T* go = grad_out.data_ptr<T>() + g.out_offset(p);
    T* dp = ws.square[0].template data_ptr<T>();
    gemm(true, false, S, hd, S, prob, S, go, g.d(), gx + g.qkv_offset(p, 2), ld);  // dV = Pᵀ dO
    gemm(false, true, S, S, hd, go, g.d(), x + g.qkv_offset(p, 2), ld, dp, S);     // dP = dO Vᵀ
    // dS = P ⊙ (dP − rowsum(dP ⊙ P)): zero where P is (the masked positions).
    at::_softmax_backward_data_out(ws.square[1], ws.square[0], probs.select(0, p), 1, qkv.scalar_type());
    const T* ds = ws.square[1].template data_ptr<T>();
    gemm(false, false, S, hd, S, ds, S, ws.row[1], hd, ws.row[2], hd);  // dQ = dS K (rotated)
    gemm(true, false, S, hd, S, ds, S, ws.row[0], hd, ws.row[3], hd);   // dK = dSᵀ Q (rotated)
    unrotate_rows(ws.row[2], table<T>(rope, 0), table<T>(rope, 1), S, hd, gx + g.qkv_offset(p, 0), ld);
    unrotate_rows(ws.row[3], table<T>(rope, 2), table<T>(rope, 3), S, hd, gx + g.qkv_offset(p, 1), ld);
  });
}

uint64_t pair_products(const Geometry& g, int products) {
  return static_cast<uint64_t>(products) * g.pairs() * g.S * g.S * g.hd;
}

struct CausalSelfAttentionFunction : public torch::autograd::Function<CausalSelfAttentionFunction> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& qkv, int64_t heads,
                               const torch::Tensor& cos_q, const torch::Tensor& sin_q, const torch::Tensor& cos_k,
                               const torch::Tensor& sin_k) {
    const Geometry g{qkv.size(0), qkv.size(1), heads, qkv.size(2) / (3 * heads)};
    const RotaryTables rope{cos_q, sin_q, cos_k, sin_k};
    auto probs = torch::empty({g.pairs(), g.S, g.S}, qkv.options());
    auto out = torch::empty({g.B, g.S, g.d()}, qkv.options());
    AT_DISPATCH_FLOATING_TYPES(qkv.scalar_type(), "causal_self_attention_cpu",
                               [&] { forward_pairs<scalar_t>(qkv, g, rope, probs, out); });
    MatmulFlopCounter::add_multiply_adds(pair_products(g, 2));
    ctx->save_for_backward({qkv, probs, cos_q, sin_q, cos_k, sin_k});
    ctx->saved_data["heads"] = heads;
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    const auto saved = ctx->get_saved_variables();
    const auto &qkv = saved[0], &probs = saved[1];
    const int64_t heads = ctx->saved_data["heads"].toInt();
    const Geometry g{qkv.size(0), qkv.size(1), heads, qkv.size(2) / (3 * heads)};
    const RotaryTables rope{saved[2], saved[3], saved[4], saved[5]};
    const auto go = grad_outputs[0].contiguous();
    auto grad_qkv = torch::empty_like(qkv);  // every element is written: dQ, dK, dV of every pair
    AT_DISPATCH_FLOATING_TYPES(qkv.scalar_type(), "causal_self_attention_cpu_backward",
                               [&] { backward_pairs<scalar_t>(qkv, g, rope, probs, go, grad_qkv); });
    MatmulFlopCounter::add_multiply_adds(pair_products(g, 4));
    return {grad_qkv, torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

bool cpu_attention_supports(const torch::Tensor& x) {
  return x.device().is_cpu() && (x.scalar_type() == torch::kFloat32 || x.scalar_type() == torch::kFloat64);
}

torch::Tensor causal_self_attention_cpu(const torch::Tensor& qkv, int64_t heads, const RotaryTables& rope) {
  const char* fn = "causal_self_attention_cpu: ";
  TORCH_CHECK(cpu_attention_supports(qkv), fn, "qkv must be a float or double CPU tensor");
  TORCH_CHECK(qkv.dim() == 3 && qkv.is_contiguous(), fn, "qkv must be a contiguous [B, S, 3·h·hd] tensor");
  TORCH_CHECK(heads > 0 && qkv.size(2) % (3 * heads) == 0, fn, "qkv's last dimension ", qkv.size(2),
              " is not 3 × heads (", heads, ") × head_dim");
  const int64_t S = qkv.size(1), hd = qkv.size(2) / (3 * heads);
  TORCH_CHECK(hd % 2 == 0, fn, "head_dim ", hd, " must be even (rotary pairs)");
  TORCH_CHECK(S <= std::numeric_limits<int>::max() / std::max<int64_t>(S, 3 * heads * hd), fn, "sequence too long");
  torch::Tensor tables[4];
  const torch::Tensor* given[] = {&rope.cos_q, &rope.sin_q, &rope.cos_k, &rope.sin_k};
  for (int i = 0; i < 4; ++i) {
    const auto& t = *given[i];
    TORCH_CHECK(t.defined() && t.dim() == 2 && t.size(0) >= S && t.size(1) == hd, fn,
                "rotary tables must be [>= S, head_dim] = [>= ", S, ", ", hd, "]");
    TORCH_CHECK(t.scalar_type() == qkv.scalar_type() && t.device() == qkv.device(), fn,
                "rotary tables must have qkv's dtype and device");
    tables[i] = t.narrow(0, 0, S).contiguous();
  }
  return CausalSelfAttentionFunction::apply(qkv, heads, tables[0], tables[1], tables[2], tables[3]);
}

#else  // no CBLAS in this build: the ATen composition is the CPU path

bool cpu_attention_supports(const torch::Tensor&) { return false; }

torch::Tensor causal_self_attention_cpu(const torch::Tensor&, int64_t, const RotaryTables&) {
  TORCH_CHECK(false, "causal_self_attention_cpu: this build has no CBLAS (PPU_OPENBLAS_OPENMP_DIR was empty)");
}

#endif

}  // namespace ppu
