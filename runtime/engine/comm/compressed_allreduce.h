// compressed_allreduce: the SUM over ranks of one flat fp32 CPU tensor, bandwidth-optimal and
// compressed on the wire in both phases, built on Gloo point-to-point send/recv.
//
// The buffer is cut into K equal chunks of whole codec blocks (core/cost_model wire_layout).
// Reduce-scatter, then all-gather, each moving K-1 chunk payloads out of and into every rank:
//  - Collective::Ring: step s, rank r sends chunk (r-s) to r+1 and adds chunk (r-s-1) from r-1
//    (the partial sum is re-encoded at every hop, as in prime's ring); all-gather forwards the
//    owner's payload bytes around the ring unchanged.
//  - Collective::Direct: rank r receives chunk r from every rank (one all-to-all: each
//    contribution is encoded exactly once, as in torchft's quantised all-reduce), adds them in
//    rank order, and sends the encoded sum to every rank.
// Reductions run in fp32 in a fixed order, each chunk's sum is computed by one owner rank and
// every rank (the owner included) takes the decoded owner payload, so all ranks end
// bit-identical. Sent = received = 2(K-1)·chunk_bytes per rank, independent of K up to padding.
// Error feedback (optional, int8/bf16): the rank's contribution and the owner's result are
// encoded with the residual of the previous round added, and the new residual is kept.
// Blocking; run it on a worker thread to overlap it with training. Throws PeerError.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <string>

#include "engine/comm/collectives.h"
#include "engine/comm/wire_codec.h"

namespace ppu {

struct AllreduceStats {
  int64_t bytes_sent = 0;
  int64_t bytes_received = 0;
  double seconds = 0;  // wall time of the whole all-reduce
};

// Error-feedback residuals of one buffer (one streaming fragment), fp32 on the host. Empty
// until first used; sized by the layout.
struct FeedbackState {
  torch::Tensor contribution;  // K·chunk values: this rank's encoding error
  torch::Tensor result;        // chunk values: the encoding error of the sum this rank owns
};

// `sequence`: one number per all-reduce, taken in the same order on every rank
// (Collectives::next_sequence()); it separates the messages of concurrent all-reduces.
// `schedule`: network.collective (ring | direct); `dtype`: the wire precision.
AllreduceStats compressed_allreduce(Collectives& collectives, torch::Tensor& flat, WireDtype dtype, int64_t row_length,
                                    Collective schedule, uint32_t sequence, FeedbackState* feedback = nullptr);

}  // namespace ppu
