// WirePlan: what a config puts on the wire, decided once for ppu-train (what it sends) and
// ppu-plan (what it reports), so the two cannot disagree.
//  - DDP all-reduces the full gradient every step as one flat buffer in the gradients' precision:
//    fp32, or bf16 in bf16 runs (as the paper's Appendix B counts it, and as PyTorch's DDP sends
//    bf16 gradients). On the host the bf16 values are summed in fp32 (engine/comm/wire_codec); NCCL
//    sums them in bf16.
//  - The low-communication methods all-reduce parameter deltas every outer.sync_every steps in
//    outer.delta_dtype, with one int8 scale per model.d_model values (a row of a weight matrix).
#pragma once

#include <cstdint>

#include "core/config.h"

namespace ppu {

struct WirePlan {
  WireDtype dtype = WireDtype::Fp32;
  int64_t row_length = 1;  // values per int8 scale
  int steps_per_sync = 1;  // H: 1 for DDP
  Collective schedule = Collective::Ring;
};

WirePlan wire_plan(const Config& config);

// The low-communication part on its own: what the outer optimiser's delta exchange uses.
WirePlan delta_wire_plan(const OuterConfig& outer, const ModelSpec& model, Collective schedule);

}  // namespace ppu
