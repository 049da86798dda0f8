#include "engine/train/outer_syncs.h"

namespace ppu {

OuterSyncs::OuterSyncs(const Config& config, const StreamingSchedule& schedule, RunParts run,
                       LiveRecovery* live_recovery)
    : config_(config), schedule_(schedule), run_(run), live_recovery_(live_recovery) {}

void OuterSyncs::start(int fragment) {
  if (live_recovery_) {
    record(fragment, live_recovery_->sync(fragment, false));
    return;
  }
  const bool last = run_.progress.step == config_.train.steps;
  if (config_.outer.overlap_steps == 0 || last) {
    if (last) drain();
    record(fragment, run_.outer.sync(fragment));
    return;
  }
  in_flight_.push_back({run_.progress.step + config_.outer.overlap_steps, run_.outer.begin(fragment, true)});
}

void OuterSyncs::finish_due() {
  while (!in_flight_.empty() && in_flight_.front().apply_at <= run_.progress.step) {
    auto& s = in_flight_.front();
    record(s.sync.fragment, run_.outer.finish(s.sync));
    in_flight_.pop_front();
  }
}

void OuterSyncs::drain() {
  while (!in_flight_.empty()) {
    record(in_flight_.front().sync.fragment, run_.outer.finish(in_flight_.front().sync));
    in_flight_.pop_front();
  }
}

void OuterSyncs::average(int fragment) {
  record(fragment, live_recovery_ ? live_recovery_->sync(fragment, true) : run_.outer.average(fragment));
}

void OuterSyncs::record(int fragment, const SyncResult& r) {
  run_.progress.bytes_sent += r.bytes_sent;
  run_.progress.bytes_received += r.bytes_received;
  run_.progress.sync_seconds += r.seconds;
  run_.progress.network_wait_seconds += r.wait_seconds;
  run_.metrics.add_sync(schedule_.fragments()[fragment].name, r.bytes_sent, r.bytes_received, r.seconds,
                        r.wait_seconds);
}

}  // namespace ppu
