// StepProfiler: a PyTorch (Kineto) profiler trace of a few inner steps, for finding where a
// step's time goes on the device (train.profile_dir, train.profile_first_step,
// train.profile_steps; docs/GPU.md "Profiling a step").
//
// Contract: before_step(t) and after_step(t) around every inner step t. The trace covers steps
// [first, first + steps): it starts at the top of `first` and, after the last of them (the device
// synchronised, so every kernel is in), writes `<dir>/rank<R>-steps<a>-<b>.json` in Chrome's
// trace format (chrome://tracing, Perfetto, bench/gpu/trace_summary.py): CPU operators and, on
// CUDA, every kernel and copy with its device time. A run that ends inside the window writes
// what it traced. Off (no cost) when dir is empty. Traced steps run slower: their times are not
// the run's speed.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <string>

namespace ppu {

class StepProfiler {
 public:
  StepProfiler(std::string dir, int64_t first_step, int steps, int rank, torch::Device device);
  StepProfiler(const StepProfiler&) = delete;
  StepProfiler& operator=(const StepProfiler&) = delete;
  ~StepProfiler();

  void before_step(int64_t step);
  void after_step(int64_t step);
  // The trace file once written, empty before.
  const std::string& written() const { return written_; }

 private:
  void stop_and_write();

  std::string dir_;
  int64_t first_, last_;
  int rank_;
  torch::Device device_;
  bool active_ = false;
  std::string written_;
};

}  // namespace ppu
