// Recovery pacing (recovery live; docs/OPERATOR.md, "Live recovery"): how many rank recoveries a
// job may spend per window of time, and how long the replacement of a rank that keeps being lost
// waits. Pure functions of the recorded recoveries (status.recentRecoveries), the spec and the
// time, so an operator that restarts decides exactly as the one before it:
//   - budget: at most spec.runPolicy.maxRecoveries loss events within the last
//     recoveryWindowSeconds, a sliding window over the recorded times (a window of 0: over every
//     record kept, the job's lifetime). An event is what capacity does at once: the losses that
//     come within kLossEventSeconds of an event's first loss are that event, so a node that takes
//     8 ranks with it costs one of the budget, not 8 (status.recoveries still counts pods);
//   - back-off, per rank: the n-th loss of one rank within the window is recreated backoff(n)
//     seconds after it was counted: 0 for n = 1 (a one-off loss, a preemption or a kill, costs
//     nothing), recoveryBackoffSeconds * 2^(n-2) for n >= 2, at most recoveryBackoffMaxSeconds.
//     A rank that crash-loops thus waits 10, 20, 40 ... 300 s with the defaults, as the kubelet
//     backs off a crashing container.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "reconcile/job_spec.h"
#include "reconcile/ppujob_status.h"

namespace ppu::op {

// status.recentRecoveries holds at most this many records (the CRD's maxItems): a
// maxRecoveries above it per window is counted as at most this many.
inline constexpr size_t kRecoveryHistoryMax = 1024;

// The records inside the window that ends at `now`: time > now - window_s (every record when
// window_s is 0), oldest first, the newest kRecoveryHistoryMax of them; a record whose time does
// not parse is dropped.
std::vector<RecoveryRecord> in_window(const std::vector<RecoveryRecord>& history, int64_t now, int64_t window_s);

// Losses this close to an event's first loss belong to that event: the pods of one node, one
// drain, one reclaimed block of capacity, which Kubernetes reports over some seconds.
inline constexpr int64_t kLossEventSeconds = 60;

// The loss events that count against maxRecoveries among `window_records` (from in_window,
// oldest first; each record one lost pod).
int64_t loss_events(const std::vector<RecoveryRecord>& window_records);

// Which loss of `rank` within the window a new one is: 1 + the rank's records in window_records.
int64_t loss_attempt(const std::vector<RecoveryRecord>& window_records, int64_t rank);

// Seconds the replacement for loss number `attempt` (1-based) of one rank waits (rule above).
int64_t recovery_backoff(int64_t attempt, const RunPolicy& rp);

}  // namespace ppu::op
