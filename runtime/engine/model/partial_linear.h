// PartialLinear: y = x W^T where only a contiguous range of W's rows (dim 0: output features)
// or columns (dim 1: input features) is trainable on this rank, or the whole W (dim -1).
//  - forward uses the full weight W (no concatenation);
//  - backward computes the full input gradient dL/dx = dL/dy W (Appendix C.1), unless
//    `input_keep` lists ranges along `dim` (Appendix D's detached Jacobian): then only those
//    rows (dim 0: output features) or columns (dim 1: input features) of W carry it —
//    dim 0: dL/dx = sum over kept rows r of dL/dy[:, r] W[r, :];
//    dim 1: dL/dx[:, c] = dL/dy W[:, c] on kept columns c, 0 elsewhere;
//    and only those products are computed;
//  - the weight gradient is computed for the trainable range only — the frozen part's
//    dL/dW is never computed, not computed-then-masked;
//  - the trainable range is a leaf tensor that is a view into W's storage, so the optimiser
//    updates W in place and frozen elements never get a grad buffer or optimiser state;
//  - every product is a 2-D mm on contiguous operands, and weight gradients are contiguous.
#pragma once

#include <torch/torch.h>

#include "core/tensor_region.h"

namespace ppu {

// A weight and its trainable region (whole, or [begin, end) along dim).
struct WeightSlice : TensorRegion {
  torch::Tensor full;       // [out, in]; requires_grad only when the whole tensor is trainable
  torch::Tensor trainable;  // leaf with requires_grad; a view of `full` (or `full` itself)
  // [begin, end) pairs along `dim` that carry the input gradient; empty = all (the method).
  std::vector<int64_t> input_keep;
};

// Makes the trainable view of `full` for `region` (whole: all; an empty range: frozen, with a
// zero-element trainable leaf so every parameter keeps its slot).
WeightSlice make_weight_slice(const torch::Tensor& full, const TensorRegion& region);

// y = x W^T with the partial backward described above. x: [..., in].
torch::Tensor partial_linear(const torch::Tensor& x, const WeightSlice& w);

// partial_linear's backward without its forward product: returns an uninitialised tensor of
// y's shape whose gradient flows exactly as partial_linear's. Only for a backward root whose
// value is never read: the recomputed block's last projection (torch.utils.checkpoint's early
// stop skips the same product).
torch::Tensor partial_linear_backward_only(const torch::Tensor& x, const WeightSlice& w);

// Several weights that read the same input (the attention's Q, K and V) as one GEMM: `stacked`
// holds their rows one after the other, [Σ out_p, in], and each part's `full` is its block of
// rows (a view of `stacked`). Forward: y = x stackedᵀ, [..., Σ out_p], the parts' outputs side
// by side. Backward, with the contract of partial_linear: dL/dx = dL/dy stacked in one GEMM;
// the weight gradient of every part's trainable rows in one GEMM (the columns of dL/dy that
// belong to them, gathered first when they are not adjacent); frozen rows get none. Every
// part must be stackable(): whole (dim -1) or sliced by rows (dim 0), without input_keep.
bool stackable(const WeightSlice& w);
torch::Tensor stacked_partial_linear(const torch::Tensor& x, const torch::Tensor& stacked, const WeightSlice& a,
                                     const WeightSlice& b, const WeightSlice& c);

}  // namespace ppu
