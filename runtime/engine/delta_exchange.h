// DeltaExchange: the SUM over ranks of one flat fp32 delta buffer (Algorithm 1, line 13),
// in the wire precision chosen by outer.delta_dtype:
//  - fp32: an in-place all-reduce;
//  - bf16: each rank rounds its delta to bf16, ranks all-gather the bf16 payloads and sum them
//          locally in fp32 in rank order (deterministic, and half the bytes on the wire);
//  - int8: symmetric per-row quantisation (one fp32 scale per row of `row_length` values),
//          all-gathered and summed the same way.
// start_delta_sum launches the exchange (Gloo runs it in the background); `finish()` waits and
// leaves the sum in `flat_delta`. Returns the bytes this rank puts on the wire.
#pragma once

#include <torch/torch.h>

#include <functional>
#include <string>

#include "engine/collectives.h"

namespace ppu {

struct DeltaExchange {
  std::function<void()> finish;
  int64_t bytes = 0;
};

// `flat_delta` must stay alive until finish() returns.
DeltaExchange start_delta_sum(Collectives& collectives, torch::Tensor& flat_delta, const std::string& delta_dtype,
                              int64_t row_length);

inline int64_t exchange_delta_sum(Collectives& collectives, torch::Tensor& flat_delta, const std::string& delta_dtype,
                                  int64_t row_length) {
  auto exchange = start_delta_sum(collectives, flat_delta, delta_dtype, row_length);
  exchange.finish();
  return exchange.bytes;
}

}  // namespace ppu
