// chunked_cross_entropy: the mean next-token cross-entropy of a linear output head,
// mean_i [logsumexp(h_i W^T) − (h_i W^T)[y_i]], computed `chunk` tokens at a time so that the
// full [N, vocab] logits never exist. When gradients are wanted, each chunk's logits, computed
// once in the forward, are turned at once into (softmax − onehot)/N and that chunk's products
// for dL/dh and dL/dW; the backward only scales them by the upstream gradient (the loss is the
// graph's last node, so nothing runs between the two). Without grad mode only the loss is
// computed. A custom autograd function; logits, log-sum-exp and softmax are fp32 whatever the
// compute dtype (bf16 hidden states and weights give bf16 GEMMs with fp32 results per chunk).
// Peak extra memory is O(chunk · vocab) plus the gradients themselves, instead of the plain
// path's several [N, vocab] tensors.
#pragma once

#include <torch/torch.h>

namespace ppu {

// hidden: [N, d]; weight: [vocab, d] (the tied embedding); targets: int64 [N]. Returns an fp32
// scalar. Gradients flow to hidden and weight (in their dtypes).
torch::Tensor chunked_cross_entropy(const torch::Tensor& hidden, const torch::Tensor& weight,
                                    const torch::Tensor& targets, int64_t chunk);

}  // namespace ppu
