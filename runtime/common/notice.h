// Notice: SIGTERM and SIGINT to a process are a notice to leave (a spot reclaim, a node drain, a
// deleted or evicted pod, Ctrl-C), not a crash (docs/RECOVERY.md, "Notices"). Contract:
//  - install_notice_handler(bound_s), once, early in main: from then on the first SIGTERM or
//    SIGINT is recorded while a NoticeScope is alive (notice_received(), notice_signal()), and
//    ends the process at once (exit 128 + signal) while none is: outside the training loop there
//    is nothing to save. A second signal always ends it at once.
//  - A recorded notice that the process has not acted on within bound_s (checkpoint.notice_s)
//    ends it then (exit 128 + signal) with a log line that says so: the grace period the
//    supervisor grants is never overrun by a round that does not end. A checkpoint cut off there
//    is never used (the manifest is written last).
// Pure C++17, async-signal-safe in the handler (atomics only); the bound is watched by a thread
// of its own.
#pragma once

#include <functional>

namespace ppu {

// `on_overrun` runs on the watch thread just before a notice past its bound ends the process
// (the trainer logs and writes its termination message there); it must not block.
void install_notice_handler(double bound_s, std::function<void(double seconds)> on_overrun = {});

// While one is alive, a notice is recorded rather than acted on at once. Not nested across
// threads: the training loop holds one.
class NoticeScope {
 public:
  NoticeScope();
  ~NoticeScope();
  NoticeScope(const NoticeScope&) = delete;
  NoticeScope& operator=(const NoticeScope&) = delete;
};

bool notice_received();
int notice_signal();            // the signal of the recorded notice, 0 without one
double seconds_since_notice();  // 0 without one

}  // namespace ppu
