// Unit tests of the work queue: de-duplication, one worker per key, delays and back-off.
#include <gtest/gtest.h>

#include <thread>

#include "kube/work_queue.h"

namespace ppu::op {
namespace {

TEST(WorkQueue, DeduplicatesQueuedKeys) {
  WorkQueue q;
  q.add("a");
  q.add("a");
  q.add("b");
  EXPECT_EQ(q.depth(), 2u);
  EXPECT_EQ(*q.get(), "a");
  EXPECT_EQ(*q.get(), "b");
}

TEST(WorkQueue, KeyAddedWhileProcessingIsRequeuedOnlyAfterDone) {
  WorkQueue q;
  q.add("a");
  auto k = q.get();
  q.add("a");
  EXPECT_EQ(q.depth(), 0u) << "must not hand a key in flight to a second worker";
  q.done(*k);
  EXPECT_EQ(q.depth(), 1u);
}

TEST(WorkQueue, RateLimitedDelaysGrowExponentiallyAndForgetResets) {
  WorkQueue q(0.01, 1.0);
  EXPECT_DOUBLE_EQ(q.next_delay("a"), 0.01);
  q.add_rate_limited("a");
  EXPECT_DOUBLE_EQ(q.next_delay("a"), 0.02);
  q.add_rate_limited("a");
  q.add_rate_limited("a");
  EXPECT_EQ(q.retries("a"), 3);
  EXPECT_DOUBLE_EQ(q.next_delay("a"), 0.08);
  for (int i = 0; i < 20; ++i) q.add_rate_limited("a");
  EXPECT_DOUBLE_EQ(q.next_delay("a"), 1.0) << "capped";
  q.forget("a");
  EXPECT_EQ(q.retries("a"), 0);
}

TEST(WorkQueue, DelayedKeyIsNotReadyBeforeItsTime) {
  WorkQueue q;
  q.add_after("late", 0.2);
  q.add("now");
  EXPECT_EQ(q.depth(), 1u);
  EXPECT_EQ(*q.get(), "now");
  EXPECT_EQ(*q.get(), "late");  // blocks until due
}

TEST(WorkQueue, ShutdownWakesBlockedWorkers) {
  WorkQueue q;
  std::optional<std::string> got = "x";
  std::thread t([&] { got = q.get(); });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  q.shutdown();
  t.join();
  EXPECT_FALSE(got.has_value());
}

// A worker waits for the earliest timer while another thread replaces that timer with an
// earlier one (which erases it): the worker must not read the erased deadline (the ASan lane
// caught wait_until re-reading it through a reference), and gets the key at the new time.
TEST(WorkQueue, ReplacingTheTimerAWorkerWaitsOnIsSafe) {
  WorkQueue q;
  q.add_after("a", 30.0);
  std::optional<std::string> got;
  std::thread t([&] { got = q.get(); });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // let the worker block on the 30 s timer
  q.add_after("a", 0.01);
  t.join();
  EXPECT_EQ(got, std::optional<std::string>("a"));
}

}  // namespace
}  // namespace ppu::op
