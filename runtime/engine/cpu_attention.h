// causal_attention_cpu: softmax(q kᵀ + causal_bias) v for the CPU path, with its own backward,
// computed a few (batch, head) pairs at a time so each pair's [S, S] scores stay in the core's
// cache from the scores GEMM through the softmax to the product with v (and, backward, from
// dP through dS to dQ and dK), and the two cores share the pairs instead of splitting every
// small GEMM between them.
//
// Contract: q, k, v are [B, h, S, hd] and contiguous, q already scaled by 1/sqrt(hd);
// causal_bias is [S', S'] with S' >= S (0 on and below the diagonal, -inf above). Returns
// [B, h, S, hd], contiguous. Values and gradients equal the composition of baddbmm, softmax
// and bmm that autograd would differentiate, up to floating-point reassociation. Saves q, k,
// v and the probabilities (the memory that composition keeps). Every product is a bmm or
// baddbmm, so MatmulFlopCounter sees the same FLOPs as for the composition.
#pragma once

#include <torch/torch.h>

namespace ppu {

torch::Tensor causal_attention_cpu(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                   const torch::Tensor& causal_bias);

}  // namespace ppu
