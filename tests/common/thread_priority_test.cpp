// common/thread_priority.h: a helper thread lowered by lower_thread_priority and made a batch
// thread by run_as_batch_thread runs so, and the thread that made it does not.
#include "common/thread_priority.h"

#include <gtest/gtest.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <thread>

namespace {

int own_nice() { return getpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid))); }

TEST(ThreadPriority, AHelperThreadRunsLowerAndAsBatchAndItsCreatorDoesNot) {
  const int creator_nice = own_nice();
  const int creator_policy = sched_getscheduler(0);
  std::optional<int> lowered;
  int helper_nice = 0, helper_policy = -1;
  bool batch = false;
  std::thread helper([&] {
    lowered = ppu::lower_thread_priority(3);
    batch = ppu::run_as_batch_thread();
    helper_nice = own_nice();
    helper_policy = sched_getscheduler(static_cast<pid_t>(syscall(SYS_gettid)));
  });
  helper.join();
  ASSERT_TRUE(lowered.has_value());
  EXPECT_EQ(*lowered, std::min(creator_nice + 3, 19));
  EXPECT_EQ(helper_nice, *lowered);
  EXPECT_TRUE(batch);
  EXPECT_EQ(helper_policy, SCHED_BATCH);
  EXPECT_EQ(own_nice(), creator_nice);
  EXPECT_EQ(sched_getscheduler(0), creator_policy);
}

}  // namespace
