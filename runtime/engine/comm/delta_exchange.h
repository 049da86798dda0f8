// DeltaExchange: the SUM over ranks of one flat fp32 CPU buffer (Algorithm 1, line 13, and
// DDP's gradient all-reduce), in the wire precision outer.delta_dtype (fp32 | bf16 | int8),
// by compressed_allreduce's ring or direct schedule (network.collective). The exchange runs
// on a communication thread so training can go on (outer.overlap_steps); the function that
// start_delta_sum returns waits for it, leaves the sum in the buffer and returns the bytes this
// rank sent and received.
#pragma once

#include <torch/torch.h>

#include <functional>

#include "engine/comm/collectives.h"
#include "engine/comm/compressed_allreduce.h"

namespace ppu {

struct ExchangeOptions {
  WireDtype dtype = WireDtype::Fp32;
  int64_t row_length = 1;  // int8: values per fp32 scale
  Collective schedule = Collective::Ring;
  FeedbackState* feedback = nullptr;  // error-feedback residuals of this buffer, or none
};

// Starts the exchange and returns the function that waits for it (and throws PeerError when a
// peer died or timed out); `flat` (and `feedback`) must stay alive until it has returned.
std::function<AllreduceStats()> start_delta_sum(Collectives& collectives, torch::Tensor& flat,
                                                const ExchangeOptions& options);

// The same, on the calling thread.
AllreduceStats exchange_delta_sum(Collectives& collectives, torch::Tensor& flat, const ExchangeOptions& options);

}  // namespace ppu
