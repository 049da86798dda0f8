// ThetaGuard: θ is the same on every rank, and a fragment's sync relies on it (each rank's delta
// is taken against its own θ). check(f), before fragment f's sync, is a collective: the group
// agrees on a digest of the fragment's θ and momentum (OuterOptimizer::fragment_digest). A rank
// holding another one (a flipped bit, a bug) takes the majority's before it computes its delta,
// so the exchange never carries the drift; it is logged and counted (summary
// recovery.theta_mismatches, the metrics), never silent. Ties go to the lowest group rank's value.
// With one rank there is nothing to compare. It reads and changes the run's parts, given by
// reference: they outlive it. Training thread only.
#pragma once

#include "core/streaming_schedule.h"
#include "engine/comm/collectives.h"
#include "engine/train/live_recovery.h"
#include "engine/train/run_parts.h"

namespace ppu {

class ThetaGuard {
 public:
  // `live_recovery`: null without live recovery.
  ThetaGuard(Collectives& collectives, const StreamingSchedule& schedule, RunParts run, LiveRecovery* live_recovery);

  void check(int fragment);

 private:
  Collectives& collectives_;
  const StreamingSchedule& schedule_;
  RunParts run_;
  LiveRecovery* live_recovery_;
};

}  // namespace ppu
