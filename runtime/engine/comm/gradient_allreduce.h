// DDP's exchange (method ddp): every step the full gradient of the trainable parameters is
// averaged over the K ranks, as one flat fp32 buffer in the wire plan's dtype (core/wire_plan.h),
// and written back into each parameter's grad(). Blocking: the step waits for all of it.
//  - CUDA tensors with an NCCL group: NCCL's own ring, which sums bf16 in bf16.
//  - Otherwise our codec on the host (delta_exchange.h: the plan's schedule and dtype, bf16
//    values summed in fp32); CUDA ranks over Gloo through a host copy.
// Returns the bytes this rank sent and received (NCCL's as cost_model's wire_layout counts them,
// ppu-plan's numbers) and the wall seconds of the whole call, copies included.
#pragma once

#include <torch/torch.h>

#include <vector>

#include "core/wire_plan.h"
#include "engine/comm/collectives.h"
#include "engine/comm/compressed_allreduce.h"

namespace ppu {

// `ranks`: K, the job's ranks, by which the sum is divided.
AllreduceStats allreduce_gradients(Collectives& collectives, const std::vector<torch::Tensor>& params,
                                   const WirePlan& wire, int ranks);

}  // namespace ppu
