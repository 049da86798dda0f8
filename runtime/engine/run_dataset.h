// run_dataset: the token dataset a config trains on and the evaluation ppu-train reports, shared
// by ppu-train and ppu-export (which evaluates the exported parameters the same way).
//  - load_dataset: data.path's shards when set (ConfigError when their vocabulary exceeds
//    model.vocab), else the synthetic corpus data.synthetic_* and train.seed describe.
//  - evaluate_loss: the mean of the per-batch mean losses over batches [first, first + stride,
//    ...) of an evaluation of `batches` batches (TokenDataset::eval_batch), summed — the
//    trainer gives each rank a stride of world_size and adds the ranks' sums.
//  - parameter_checksum: FNV-1a 64 over the tensors' bytes in order, as hex (the summary's and
//    the termination message's param_checksum).
#pragma once

#include <torch/torch.h>

#include <functional>
#include <string>
#include <vector>

#include "core/config.h"
#include "data/data_loader.h"
#include "engine/model/transformer.h"

namespace ppu {

data::TokenDataset load_dataset(const Config& c);

// int64 [batch, seq_len + 1]
torch::Tensor to_tensor(const data::TokenBatch& b);

// The sum of the losses of batches first, first + stride, ... < batches (not yet divided);
// `after_batch` (if any) runs after each batch (the trainer's progress clock).
double eval_loss_sum(const Transformer& model, const data::TokenDataset& dataset, const Config& c, int first,
                     int stride, torch::Device device, const std::function<void()>& after_batch = {});

std::string parameter_checksum(const std::vector<torch::Tensor>& tensors);

}  // namespace ppu
