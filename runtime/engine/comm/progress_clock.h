// ProgressClock: when this rank's training thread last made progress, so that the heartbeat
// reports progress rather than liveness (heartbeat.h). Progress is a tick from the training
// thread (an inner step, an evaluation batch) or time spent waiting on others (a collective, an
// agreement through the store) and, up to a bound, in work of its own that may wait on a disk
// (a checkpoint write: Bounded): a rank blocked on its peers is not the one that hangs, and a
// write that outlasts its bound is a fault like a hung thread, at once (the bound is the
// write's own window: checkpoint.write_timeout_s). A training thread stuck anywhere else stops
// the clock; idle_seconds() then grows, and past window() the heartbeat stops beating for this
// rank (its peers fence it) and the rank ends itself so that its supervisor replaces it.
// window(): network.progress_timeout_s, or when that is 0 a default the trainer derives from
// the measured step time with a floor (trainer.cpp); until set, +infinity (not watched).
// Every member is safe to use from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <limits>

namespace ppu {

class ProgressClock {
 public:
  using Clock = std::chrono::steady_clock;

  ProgressClock() { tick(); }

  void tick() noexcept { last_ = Clock::now().time_since_epoch().count(); }

  // While one exists the training thread waits on others: it counts as progressing.
  class Waiting {
   public:
    explicit Waiting(ProgressClock& clock) noexcept : clock_(clock) { ++clock_.waiting_; }
    ~Waiting() {
      clock_.tick();
      --clock_.waiting_;
    }
    Waiting(const Waiting&) = delete;
    Waiting& operator=(const Waiting&) = delete;

   private:
    ProgressClock& clock_;
  };

  // While one exists the training thread does I/O that may take up to `bound_s` (a checkpoint
  // write on a slow or hung mount): progress until then, idle from then on. One at a time.
  class Bounded {
   public:
    Bounded(ProgressClock& clock, double bound_s) noexcept : clock_(clock) {
      const auto bound = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(bound_s));
      clock_.bounded_until_ = (Clock::now() + bound).time_since_epoch().count();
    }
    ~Bounded() {
      clock_.tick();
      clock_.bounded_until_ = 0;
    }
    Bounded(const Bounded&) = delete;
    Bounded& operator=(const Bounded&) = delete;

   private:
    ProgressClock& clock_;
  };

  // Seconds since the last progress; 0 while waiting on others or within a Bounded's bound.
  double idle_seconds() const noexcept {
    if (waiting_ > 0) return 0;
    const auto now = Clock::now();
    if (const Clock::rep until = bounded_until_.load(); until != 0) {
      const auto end = Clock::time_point(Clock::duration(until));
      return now < end ? 0 : std::chrono::duration<double>(now - end).count();
    }
    return std::chrono::duration<double>(now - Clock::time_point(Clock::duration(last_.load()))).count();
  }
  // Whether the clock is idle past a Bounded's bound (what the heartbeat's report names).
  bool past_bound() const noexcept {
    const Clock::rep until = bounded_until_.load();
    return waiting_ == 0 && until != 0 && Clock::now() >= Clock::time_point(Clock::duration(until));
  }

  void set_window(double seconds) noexcept { window_ = seconds; }
  double window() const noexcept { return window_; }
  // Idle for longer than the window, or in a Bounded past its bound: the training thread is hung.
  bool stalled() const noexcept { return past_bound() || idle_seconds() > window_.load(); }

 private:
  std::atomic<Clock::rep> last_{0};
  std::atomic<int> waiting_{0};
  std::atomic<Clock::rep> bounded_until_{0};  // a Bounded's end; 0: none
  std::atomic<double> window_{std::numeric_limits<double>::infinity()};
};

}  // namespace ppu
