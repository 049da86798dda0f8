// Test helpers for the live-group tests (live_group_test.cpp, store_restart_test.cpp): one rank's
// membership as ppu-train holds it (Collectives on an external store, its LiveGroup), and a
// function run on one thread per rank, rethrowing the first failure; an all-reduce that shows
// the group works.
#pragma once

#include <chrono>
#include <exception>
#include <functional>
#include <thread>
#include <utility>
#include <vector>

#include "engine/comm/collectives.h"
#include "engine/comm/live_group.h"

namespace ppu::testing {

struct LiveMember {
  LiveMember(int rank, int world, int port, LiveGroup::IsSilent silent)
      : col({rank, world, "127.0.0.1", port, /*external_store=*/true}, std::chrono::seconds(30)),
        group(col, std::move(silent)) {}
  Collectives col;
  LiveGroup group;
};

// Every member's all-reduce of a one: the group's size when it works.
inline double sum_of_ones(Collectives& col) {
  auto t = torch::ones({1});
  col.allreduce_sum(t);
  return t.item<double>();
}

inline void each(const std::vector<int>& ranks, const std::function<void(int)>& f) {
  std::vector<std::exception_ptr> errors(ranks.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < ranks.size(); ++i)
    threads.emplace_back([&, i] {
      try {
        f(ranks[i]);
      } catch (...) {
        errors[i] = std::current_exception();
      }
    });
  for (auto& t : threads) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace ppu::testing
