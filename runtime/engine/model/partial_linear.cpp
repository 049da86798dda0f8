#include "engine/model/partial_linear.h"

namespace ppu {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

std::vector<int64_t> output_sizes(const torch::Tensor& x, const torch::Tensor& w) {
  auto sizes = x.sizes().vec();
  sizes.back() = w.size(0);
  return sizes;
}

struct PartialLinearFunction : public torch::autograd::Function<PartialLinearFunction> {
  // `trainable` is an input only so that autograd routes its gradient here; the forward
  // reads the same storage through `full`.
  // `product` false: the output is left uninitialised (partial_linear_backward_only).
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x,
                               [[maybe_unused]] const torch::Tensor& trainable, const torch::Tensor& full, int64_t dim,
                               int64_t begin, int64_t end, const std::vector<int64_t>& input_keep, bool product) {
    ctx->save_for_backward({x});
    ctx->saved_data["full"] = full;
    ctx->saved_data["dim"] = dim;
    ctx->saved_data["begin"] = begin;
    ctx->saved_data["end"] = end;
    ctx->saved_data["input_keep"] = input_keep;
    if (!product) return torch::empty(output_sizes(x, full), x.options());
    return x.reshape({-1, x.size(-1)}).mm(full.t()).view(output_sizes(x, full));
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    const auto x = ctx->get_saved_variables()[0];
    const auto full = ctx->saved_data["full"].toTensor();
    const int64_t dim = ctx->saved_data["dim"].toInt();
    const int64_t begin = ctx->saved_data["begin"].toInt();
    const int64_t end = ctx->saved_data["end"].toInt();
    const auto gy = grad_outputs[0];

    // Every product below is a plain 2-D mm on contiguous operands (transposes are BLAS flags):
    // a strided gradient sent through matmul's batched path runs several times slower on CPU.
    const auto x2 = x.reshape({-1, x.size(-1)});
    const auto g2 = gy.contiguous().view({-1, gy.size(-1)});
    const auto keep = ctx->saved_data["input_keep"].toIntVector();
    torch::Tensor gx;
    if (ctx->needs_input_grad(0)) {
      auto sizes = x.sizes().vec();
      if (keep.empty()) {
        gx = g2.mm(full);
      } else if (dim == 0) {  // only the kept output features' paths: sum of their products
        for (size_t r = 0; r + 1 < keep.size(); r += 2) {
          const auto g = g2.narrow(1, keep[r], keep[r + 1] - keep[r]);
          const auto w = full.narrow(0, keep[r], keep[r + 1] - keep[r]);
          if (gx.defined()) gx.add_(g.mm(w));
          else gx = g.mm(w);
        }
      } else {  // only the kept input features get a gradient
        gx = torch::zeros({g2.size(0), full.size(1)}, g2.options());
        for (size_t r = 0; r + 1 < keep.size(); r += 2)
          gx.narrow(1, keep[r], keep[r + 1] - keep[r]).copy_(g2.mm(full.narrow(1, keep[r], keep[r + 1] - keep[r])));
      }
      gx = gx.view(sizes);
    }

    torch::Tensor gw;
    if (ctx->needs_input_grad(1)) {
      if (dim >= 0 && end == begin) {
        gw = torch::zeros(full.narrow(dim, 0, 0).sizes(), full.options());  // frozen: nothing to compute
      } else if (dim < 0) {
        gw = g2.t().mm(x2);  // whole weight: [out, in], contiguous
      } else if (dim == 0) {
        gw = g2.narrow(1, begin, end - begin).t().mm(x2);  // rows of W: [n, in]
      } else {
        gw = g2.t().mm(x2.narrow(1, begin, end - begin));  // columns of W: [out, n]
      }
    }
    return {
        gx, gw, torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

struct StackedLinearFunction : public torch::autograd::Function<StackedLinearFunction> {
  // `a`, `b`, `c` (the parts' trainable leaves) are inputs only so that autograd routes their
  // gradients here. `rows`: per part, [begin, end) of its trainable rows in `stacked`.
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x, [[maybe_unused]] const torch::Tensor& a,
                               [[maybe_unused]] const torch::Tensor& b, [[maybe_unused]] const torch::Tensor& c,
                               const torch::Tensor& stacked, const std::vector<int64_t>& rows) {
    ctx->save_for_backward({x});
    ctx->saved_data["stacked"] = stacked;
    ctx->saved_data["rows"] = rows;
    return x.reshape({-1, x.size(-1)}).mm(stacked.t()).view(output_sizes(x, stacked));
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    const auto x = ctx->get_saved_variables()[0];
    const auto stacked = ctx->saved_data["stacked"].toTensor();
    const auto rows = ctx->saved_data["rows"].toIntVector();
    const auto x2 = x.reshape({-1, x.size(-1)});
    const auto g2 = grad_outputs[0].contiguous().view({-1, stacked.size(0)});
    variable_list out(6);
    if (ctx->needs_input_grad(0)) out[0] = g2.mm(stacked).view(x.sizes());

    // The trainable rows' columns of dL/dy, adjacent ranges merged (all of them when every
    // part is whole), then one GEMM for all parts.
    std::vector<torch::Tensor> columns;
    int64_t run_begin = 0, run_end = 0, trainable_rows = 0;
    for (size_t p = 0; p < 3; ++p) {
      const int64_t begin = rows[2 * p], end = rows[2 * p + 1];
      if (end == begin) continue;
      trainable_rows += end - begin;
      if (run_end == begin && run_end > run_begin) {
        run_end = end;
        continue;
      }
      if (run_end > run_begin) columns.push_back(g2.narrow(1, run_begin, run_end - run_begin));
      run_begin = begin;
      run_end = end;
    }
    if (run_end > run_begin) columns.push_back(g2.narrow(1, run_begin, run_end - run_begin));
    torch::Tensor gw;  // [trainable_rows, in]
    if (!columns.empty()) gw = (columns.size() == 1 ? columns[0] : torch::cat(columns, 1)).t().mm(x2);
    int64_t at = 0;
    for (size_t p = 0; p < 3; ++p) {
      const int64_t n = rows[2 * p + 1] - rows[2 * p];
      if (ctx->needs_input_grad(1 + p))
        out[1 + p] = n > 0 ? gw.narrow(0, at, n) : torch::zeros({0, x2.size(1)}, g2.options());
      at += n;
    }
    TORCH_CHECK(at == trainable_rows, "stacked_partial_linear: inconsistent trainable rows");
    return out;
  }
};

}  // namespace

bool stackable(const WeightSlice& w) { return (w.dim == -1 || w.dim == 0) && w.input_keep.empty(); }

torch::Tensor stacked_partial_linear(const torch::Tensor& x, const torch::Tensor& stacked, const WeightSlice& a,
                                     const WeightSlice& b, const WeightSlice& c) {
  std::vector<int64_t> rows;
  int64_t offset = 0;
  for (const WeightSlice* w : {&a, &b, &c}) {
    TORCH_CHECK(stackable(*w), "stacked_partial_linear: a part is sliced by columns or keeps input ranges");
    const int64_t out = w->full.size(0);
    rows.insert(rows.end(), {offset + (w->whole() ? 0 : w->begin), offset + (w->whole() ? out : w->end)});
    offset += out;
  }
  TORCH_CHECK(offset == stacked.size(0), "stacked_partial_linear: the parts do not make up the stacked weight");
  return StackedLinearFunction::apply(x, a.trainable, b.trainable, c.trainable, stacked, rows);
}

WeightSlice make_weight_slice(const torch::Tensor& full, const TensorRegion& region) {
  WeightSlice w;
  static_cast<TensorRegion&>(w) = region;
  if (region.whole()) {
    w.full = full.requires_grad_(true);
    w.trainable = w.full;
  } else {
    w.full = full.requires_grad_(false);
    // detach() shares storage with `full`: in-place optimiser updates land in the weight.
    w.trainable = full.narrow(region.dim, region.begin, region.length()).detach().requires_grad_(true);
  }
  return w;
}

torch::Tensor partial_linear(const torch::Tensor& x, const WeightSlice& w) {
  // A fully trainable weight takes the same path: its gradient comes out as one contiguous mm
  // of the weight's own shape (autograd's matmul backward yields the transpose of W^T's gradient,
  // a strided tensor that accumulation and AdamW then walk with strides).
  return PartialLinearFunction::apply(x, w.trainable, w.full, w.dim, w.begin, w.end, w.input_keep, true);
}

torch::Tensor partial_linear_backward_only(const torch::Tensor& x, const WeightSlice& w) {
  return PartialLinearFunction::apply(x, w.trainable, w.full, w.dim, w.begin, w.end, w.input_keep, false);
}

}  // namespace ppu
