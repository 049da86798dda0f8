// causal_self_attention_cpu: a block's attention core on the CPU, from the stacked Q|K|V
// projection to the input of W_o, with its own backward: rotary embeddings, softmax(q kᵀ +
// causal mask) v, and the layouts in between, in one pass over the (batch, head) pairs.
//
// Each core takes whole (batch, head) pairs. Per pair it rotates the pair's queries and keys
// (rows of the projection, read in place) into its own scratch, runs each product as one
// single-threaded BLAS GEMM on the pair, keeps the [S, S] scores in its cache from the scores
// GEMM through ATen's softmax to the product with v (read in place), and writes the result
// straight into the [B, S, h·hd] layout W_o takes. The backward writes dV, and dQ / dK rotated
// back, straight into one [B, S, 3·h·hd] gradient, the layout the stacked projection's backward
// takes. The composition it replaces (view/permute/copy of the projection, rotate as
// cat/mul/add, baddbmm/softmax/bmm, transpose/reshape) makes ~8 passes over these tensors and
// has ATen split every pair's small GEMM between both cores (docs/BENCHMARKS.md).
//
// Contract: qkv is a contiguous [B, S, 3·h·hd] float or double CPU tensor, Q then K then V along
// the last dimension, each heads-major (h × hd); rope holds [>= S, hd] tables of qkv's dtype,
// contiguous: a row x of position s rotates to x ⊙ cos[s] + (−x₂, x₁) ⊙ sin[s] (x₁, x₂ its
// halves). The query tables carry the scores' 1/sqrt(hd). Returns [B, S, h·hd], contiguous:
// head j's output at columns [j·hd, (j+1)·hd). Values and gradients equal those of the
// composition differentiated by autograd, up to floating-point reassociation; position i
// attends to positions 0..i. Saves qkv and the probabilities (the composition keeps the rotated
// q, k, v and the probabilities: as much memory) and rotates q and k again in the backward; not
// twice differentiable. Its six products per pair (QKᵀ and PV forward; dV, dP, dQ and dK
// backward) are full S × S × hd GEMMs, the FLOPs Appendix C counts, and are reported to
// MatmulFlopCounter.
#pragma once

#include <torch/torch.h>

namespace ppu {

struct RotaryTables {
  torch::Tensor cos_q, sin_q;  // for queries, times 1/sqrt(hd)
  torch::Tensor cos_k, sin_k;  // for keys
};

// True when this build calls a CBLAS directly (the pinned OpenBLAS) and `x` is a tensor the
// kernel takes (CPU, float or double); the caller uses the ATen composition otherwise.
bool cpu_attention_supports(const torch::Tensor& x);

torch::Tensor causal_self_attention_cpu(const torch::Tensor& qkv, int64_t heads, const RotaryTables& rope);

}  // namespace ppu
