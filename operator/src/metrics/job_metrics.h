// JobMetrics: one job's training metrics aggregated over its ranks, as docs/METRICS.md defines
// for the operator: sums for memory, FLOPs and tokens/s; means for loss and perplexity; the
// smallest outer round (a round is done when every rank has done it); the slowest rank's step
// and remaining seconds; the smallest live group and
// slice coverage (recovery live: the most pessimistic rank's view); the rounds the job lost to
// stops and its last stop, as the best-informed rank knows them. Pure.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "metrics/prom_text.h"

namespace ppu::op {

struct JobMetrics {
  int ranks_scraped = 0;
  std::map<std::string, double> state_bytes;  // component → bytes summed over ranks
  double flops_executed = 0, flops_full_backward = 0;
  std::optional<double> eval_perplexity, loss, tokens_per_second;
  std::optional<int64_t> outer_round, checkpoint_round;
  std::optional<int64_t> step;               // min of ppu_step (the slowest rank)
  std::optional<int64_t> steps_target;       // max of ppu_steps_target
  std::optional<double> remaining_seconds;   // max of ppu_remaining_seconds (the slowest rank)
  std::optional<int64_t> live_ranks;         // min of ppu_live_ranks
  std::optional<double> min_slice_coverage;  // min of ppu_min_slice_coverage
  // The largest ppu_stops, and that rank's ppu_rounds_lost and last stop (ppu_last_stop_round and
  // ppu_last_stop_resumed_round; absent when -1): the rank that counts the most stops knows the
  // latest (a replacement may know fewer).
  std::optional<int64_t> stops, rounds_lost, last_stop_round, last_stop_resumed_round;
  double flops_saved_ratio() const {
    return flops_full_backward > 0 ? 1.0 - flops_executed / flops_full_backward : 0.0;
  }
};

// One vector of samples per rank that answered.
JobMetrics aggregate_job_metrics(const std::vector<std::vector<Sample>>& per_rank);

}  // namespace ppu::op
