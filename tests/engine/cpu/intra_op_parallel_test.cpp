// Our own at::parallel_for loops (fused AdamW, the CPU attention) run on the configured threads.
// ATen's OpenMP parallel_for is a header template that forks only in sources compiled with
// OpenMP; without the flag (cmake/torch_openmp.cmake) it runs every range on the calling thread.
#include <ATen/Parallel.h>
#include <gtest/gtest.h>

#include <mutex>
#include <set>
#include <thread>

#include "engine/cpu/compute_threads.h"

namespace {

TEST(IntraOpParallel, OurParallelForRunsOnEveryConfiguredThread) {
  ppu::configure_compute_threads(2);
  std::mutex mu;
  std::set<std::thread::id> threads;
  at::parallel_for(0, 2, 1, [&](int64_t, int64_t) {
    std::lock_guard<std::mutex> lock(mu);
    threads.insert(std::this_thread::get_id());
  });
  EXPECT_EQ(threads.size(), 2u) << "at::parallel_for in this build's sources ran on one thread";
  EXPECT_FALSE(at::in_parallel_region());
}

}  // namespace
