// StepPhases: where an inner step's wall time goes, phase by phase (batch, forward, backward,
// gradient all-reduce, optimiser), for the summary's `inner_step_phases_median` and the benches
// that compare ppu-train with other implementations of the same step.
//
// Contract: start() at the top of a step, then lap(phase) after each phase in order; a lap
// charges the time since the previous lap (or start) to that phase. medians(skip) gives each
// phase's median over the steps after the first `skip` (warm-up), zero if none. Host wall
// time: on CPU every op is synchronous, so these are the phases' costs; on CUDA they are launch
// times until the step's final loss.item() (the step total stays exact).
#pragma once

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <vector>

#include "core/run_summary.h"

namespace ppu {

// The median of `values` after the first `skip` (upper median for an even count), 0 if none.
inline double median_after(const std::vector<double>& values, std::size_t skip) {
  if (values.size() <= skip) return 0;
  std::vector<double> steady(values.begin() + static_cast<std::ptrdiff_t>(skip), values.end());
  const auto mid = steady.begin() + static_cast<std::ptrdiff_t>(steady.size() / 2);
  std::nth_element(steady.begin(), mid, steady.end());
  return *mid;
}

class StepPhases {
 public:
  enum Phase : std::size_t { kBatch, kForward, kBackward, kAllreduce, kOptimizer, kCount };

  void start() {
    last_ = Clock::now();
    for (auto& p : seconds_) p.push_back(0);
  }

  void lap(Phase phase) {
    const auto now = Clock::now();
    seconds_[phase].back() += std::chrono::duration<double>(now - last_).count();
    last_ = now;
  }

  [[nodiscard]] StepPhasesSummary medians(std::size_t skip) const {
    return {median_after(seconds_[kBatch], skip), median_after(seconds_[kForward], skip),
            median_after(seconds_[kBackward], skip), median_after(seconds_[kAllreduce], skip),
            median_after(seconds_[kOptimizer], skip)};
  }

 private:
  using Clock = std::chrono::steady_clock;
  Clock::time_point last_{};
  std::array<std::vector<double>, kCount> seconds_;
};

}  // namespace ppu
