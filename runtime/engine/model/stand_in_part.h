// The model section of a checkpoint part written for a job rank missing from a live group
// (CheckpointStore::StandIn): what Transformer::save would write for a rank of `plan` whose
// weights were just set to the global θ (θ_k <- θ, as a replacement takes them): every weight
// as θ in `dtype`, and with bf16 the fp32 master of `plan`'s trainable range of each parameter
// (zero elements where it is frozen). `theta`: fp32, in layout order; `copy` as for
// Transformer::writer (the weights are always copies: θ in `dtype`).
#pragma once

#include <torch/torch.h>

#include <vector>

#include "core/model_spec.h"
#include "core/slice_plan.h"
#include "engine/state/checkpoint_format.h"

namespace ppu {

ArchiveWriter model_as_theta(const std::vector<ParamInfo>& layout, const std::vector<torch::Tensor>& theta,
                             const SlicePlan& plan, torch::ScalarType dtype, TensorCopy copy);

}  // namespace ppu
