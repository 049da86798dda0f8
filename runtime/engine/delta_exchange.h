// DeltaExchange: the SUM over ranks of one flat fp32 delta buffer (Algorithm 1, line 13),
// in the wire precision chosen by outer.delta_dtype:
//  - fp32: an in-place all-reduce;
//  - bf16: each rank rounds its delta to bf16, ranks all-gather the bf16 payloads and sum them
//          locally in fp32 in rank order (deterministic, and half the bytes on the wire);
//  - int8: symmetric per-row quantisation (one fp32 scale per row of `row_length` values),
//          all-gathered and summed the same way.
// Returns the bytes this rank put on the wire.
#pragma once

#include <torch/torch.h>

#include <string>

#include "engine/collectives.h"

namespace ppu {

int64_t exchange_delta_sum(Collectives& collectives, torch::Tensor& flat_delta, const std::string& delta_dtype,
                           int64_t row_length);

}  // namespace ppu
