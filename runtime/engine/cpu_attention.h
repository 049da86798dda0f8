// causal_attention_cpu: softmax(q kᵀ + causal mask) v on the CPU, with its own backward, one
// (batch, head) pair at a time on each core. Every product of a pair is one single-threaded
// BLAS GEMM on the whole pair, and its [S, S] scores stay in the core's cache from the scores
// GEMM through the softmax to the product with v (backward: from dP through dS to dQ and dK).
// ATen's bmm instead splits each pair's small GEMM (128 × 128 × 64 at the MLP-heavy shape)
// between both cores, an OpenMP fork and join per matrix: measured in the step, that ran these
// products at well under half the rate of one GEMM per core (docs/BENCHMARKS.md).
//
// Contract: q, k, v are contiguous [B, h, S, hd], float or double, on the CPU; q already carries
// 1/sqrt(hd). Returns [B, h, S, hd], contiguous. Values and gradients equal those of
// baddbmm(causal bias, q, kᵀ) → softmax → bmm(·, v) differentiated by autograd, up to
// floating-point reassociation; position i attends to positions 0..i. Saves q, k, v and the
// probabilities (what that composition keeps); not twice differentiable. Its six products per
// pair (QKᵀ and PV forward; dV, dP, dQ and dK backward) are full S × S × hd GEMMs, the FLOPs
// Appendix C counts, and are reported to MatmulFlopCounter.
#pragma once

#include <torch/torch.h>

namespace ppu {

// True when this build calls a CBLAS directly (the pinned OpenBLAS) and `q` is a tensor the
// kernel takes (CPU, float or double); the caller falls back to the ATen composition otherwise.
bool cpu_attention_supports(const torch::Tensor& q);

torch::Tensor causal_attention_cpu(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v);

}  // namespace ppu
