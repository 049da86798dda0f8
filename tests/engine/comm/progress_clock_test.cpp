// ProgressClock: waiting on peers is progress without end; a bounded wait (a checkpoint write)
// only up to its bound, after which the clock is idle and the heartbeat can report the rank.
#include "engine/comm/progress_clock.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

namespace ppu {
namespace {

using namespace std::chrono_literals;

TEST(ProgressClock, WaitingOnPeersIsProgressForAsLongAsItLasts) {
  ProgressClock clock;
  clock.set_window(0.05);
  {
    const ProgressClock::Waiting waiting(clock);
    std::this_thread::sleep_for(100ms);
    EXPECT_EQ(clock.idle_seconds(), 0);
    EXPECT_FALSE(clock.stalled());
  }
  EXPECT_FALSE(clock.stalled()) << "leaving the wait ticks the clock";
  std::this_thread::sleep_for(100ms);
  EXPECT_TRUE(clock.stalled());
}

TEST(ProgressClock, ABoundedWriteIsProgressUntilItsBoundOnly) {
  ProgressClock clock;
  clock.set_window(0.05);
  {
    const ProgressClock::Bounded writing(clock, 0.1);
    std::this_thread::sleep_for(50ms);
    EXPECT_EQ(clock.idle_seconds(), 0) << "within the bound";
    EXPECT_FALSE(clock.past_bound());
    EXPECT_FALSE(clock.stalled());
    std::this_thread::sleep_for(150ms);
    EXPECT_TRUE(clock.past_bound());
    EXPECT_GT(clock.idle_seconds(), 0.05) << "idle counts from the bound";
    EXPECT_LT(clock.idle_seconds(), 0.2) << "not from the write's start";
    EXPECT_TRUE(clock.stalled());
  }
  EXPECT_FALSE(clock.stalled()) << "a write that ends ticks the clock";
  EXPECT_FALSE(clock.past_bound());
}

TEST(ProgressClock, AWritePastItsBoundIsHungAtOnceNotAWindowLater) {
  ProgressClock clock;
  clock.set_window(60);  // a long progress window: the write's bound alone decides
  const ProgressClock::Bounded writing(clock, 0.05);
  std::this_thread::sleep_for(20ms);
  EXPECT_FALSE(clock.stalled()) << "within the bound";
  std::this_thread::sleep_for(80ms);
  EXPECT_LT(clock.idle_seconds(), clock.window());
  EXPECT_TRUE(clock.stalled()) << "past checkpoint.write_timeout_s the write is hung, whatever the window";
}

TEST(ProgressClock, WaitingOnPeersInsideABoundedWriteIsProgress) {
  ProgressClock clock;
  const ProgressClock::Bounded writing(clock, 0.0);
  std::this_thread::sleep_for(20ms);
  EXPECT_GT(clock.idle_seconds(), 0);
  const ProgressClock::Waiting waiting(clock);  // the write's all-gather: the peers are slow
  EXPECT_EQ(clock.idle_seconds(), 0);
  EXPECT_FALSE(clock.past_bound());
  EXPECT_FALSE(clock.stalled());
}

}  // namespace
}  // namespace ppu
