#include "engine/partial_linear.h"

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
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x,
                               [[maybe_unused]] const torch::Tensor& trainable, const torch::Tensor& full, int64_t dim,
                               int64_t begin, int64_t end, const std::vector<int64_t>& input_keep) {
    ctx->save_for_backward({x});
    ctx->saved_data["full"] = full;
    ctx->saved_data["dim"] = dim;
    ctx->saved_data["begin"] = begin;
    ctx->saved_data["end"] = end;
    ctx->saved_data["input_keep"] = input_keep;
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
    return {gx, gw, torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

WeightSlice make_weight_slice(const torch::Tensor& full, int dim, int64_t begin, int64_t end) {
  WeightSlice w;
  w.dim = dim;
  w.begin = begin;
  w.end = end;
  if (dim < 0) {
    w.full = full.requires_grad_(true);
    w.trainable = w.full;
  } else {
    w.full = full.requires_grad_(false);
    // detach() shares storage with `full`: in-place optimiser updates land in the weight.
    w.trainable = full.narrow(dim, begin, end - begin).detach().requires_grad_(true);
  }
  return w;
}

torch::Tensor partial_linear(const torch::Tensor& x, const WeightSlice& w) {
  // A fully trainable weight takes the same path: its gradient comes out as one contiguous mm
  // of the weight's own shape (autograd's matmul backward yields the transpose of W^T's gradient,
  // a strided tensor that accumulation and AdamW then walk with strides).
  return PartialLinearFunction::apply(x, w.trainable, w.full, w.dim, w.begin, w.end, w.input_keep);
}

}  // namespace ppu
