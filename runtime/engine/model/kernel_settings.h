// Kernel settings: which device a rank computes on and how its kernels compute there, from the
// config, each set before the work it governs.
//  - rank_device(): train.device cuda means this rank's GPU, LOCAL_RANK modulo the visible
//    devices, so that several ranks may share one GPU (tests) and ppu-launch / torchrun ranks
//    spread over a node's. train.deterministic: deterministic CUDA kernels (SDPA's backward
//    accumulates without atomics) and a fixed cuBLAS workspace, so that the same inputs give the
//    same bits and a resumed run is bit-exact. It must run before the first cuBLAS handle exists
//    (the workspace is read then). CPU runs are deterministic anyway.
//  - set_model_kernels(): the model's own switches, once it is built: train.recompute, the
//    attention path and the bf16 loss chunk (train.loss_chunk_tokens).
#pragma once

#include <torch/torch.h>

#include "core/config.h"
#include "engine/model/transformer.h"

namespace ppu {

// `rank`: the job rank, LOCAL_RANK's fallback.
torch::Device rank_device(const Config& c, int rank);

void set_model_kernels(Transformer& model, const Config& c, const torch::Device& device);

}  // namespace ppu
