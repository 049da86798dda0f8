// RunProgress: where one rank's run is and its running totals, owned by the Run and shared by
// reference with the rooms that advance or restore it (live_recovery.h, checkpoints.h,
// summary.h). Plain data: whoever holds it runs on the training thread.
//
// A checkpoint carries the position (step, rounds) and the totals; a replacement taking the
// live group's state gets the position and the round counters of the live recovery rules.
#pragma once

#include <cstdint>

namespace ppu {

struct RunProgress {
  int64_t step = 0;  // inner steps completed
  int64_t rounds = 0;
  double tokens = 0, flops = 0, flops_full = 0, bytes_sent = 0, sync_seconds = 0;
  double bytes_received = 0, network_wait_seconds = 0;
  int64_t last_checkpoint_round = -1;  // written or resumed from; -1: none
  int64_t uncovered_rounds = 0;        // consecutive rounds with an element without a live owner
  int64_t degraded_rounds = 0;         // consecutive rounds finished with a job rank missing
};

}  // namespace ppu
