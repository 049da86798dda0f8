// wait_until(pred, timeout_s, poll): polls pred until it holds or timeout_s passes, then returns
// its last answer. A bound for a broken test, never a timing assertion; the operator's unit tests and
// kube_test_env's eventually() wait through it.
#pragma once

#include <chrono>
#include <thread>

namespace ppu::op::testing {

template <class Pred>
bool wait_until(Pred pred, double timeout_s, std::chrono::milliseconds poll = std::chrono::milliseconds(10)) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (std::chrono::steady_clock::now() < until) {
    if (pred()) return true;
    std::this_thread::sleep_for(poll);
  }
  return pred();
}

}  // namespace ppu::op::testing
