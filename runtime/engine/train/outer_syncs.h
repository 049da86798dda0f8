// OuterSyncs: the outer syncs of a run (Algorithm 1, lines 11–14, OuterOptimizer) from their
// start to their outer step, and the one place their bytes and seconds are counted (the run's
// progress, the metrics by fragment name). Contracts:
//  - start(f) at the step fragment f is due (progress.step): with overlap τ > 0
//    (outer.overlap_steps) its exchange runs in the background and its outer step applies τ
//    inner steps later (finish_due); at once without overlap, at the last step (after every
//    sync in flight: the run ends with none), and under live recovery (LiveRecovery::sync: an
//    exchange that a lost member left unfinished is run again by the survivors).
//  - finish_due() applies, in the order started, the syncs whose τ steps are done; drain()
//    applies all of them (before a checkpoint, after the last step), so that no exchange is in
//    flight when θ is saved or the run ends.
//  - average(f) is outer.final_sync = average's plain count-normalised average of fragment f
//    (OuterOptimizer::average), at once.
// The θ guard (theta_guard.h) is the caller's, before each start or average. It reads and
// changes the run's parts, given by reference: they outlive it. Training thread only.
#pragma once

#include <cstdint>
#include <deque>

#include "core/config.h"
#include "core/streaming_schedule.h"
#include "engine/optim/outer_optimizer.h"
#include "engine/train/live_recovery.h"
#include "engine/train/run_parts.h"

namespace ppu {

class OuterSyncs {
 public:
  // `live_recovery`: null without live recovery.
  OuterSyncs(const Config& config, const StreamingSchedule& schedule, RunParts run, LiveRecovery* live_recovery);
  OuterSyncs(const OuterSyncs&) = delete;
  OuterSyncs& operator=(const OuterSyncs&) = delete;

  void start(int fragment);
  void finish_due();
  void drain();
  void average(int fragment);

 private:
  struct Pending {
    int64_t apply_at;  // the step whose end applies it
    OuterOptimizer::InFlight sync;
  };

  void record(int fragment, const SyncResult& r);

  const Config& config_;
  const StreamingSchedule& schedule_;
  RunParts run_;
  LiveRecovery* live_recovery_;
  std::deque<Pending> in_flight_;
};

}  // namespace ppu
