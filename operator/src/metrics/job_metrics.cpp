#include "metrics/job_metrics.h"

#include <algorithm>
#include <cmath>

#include "core/job_contract.h"

namespace ppu::op {

namespace {

// One rank's stops, rounds lost and last stop, when it counts more stops than the ranks before it.
void note_stops(JobMetrics& m, const std::vector<Sample>& samples) {
  std::optional<int64_t> stops, lost, round, resumed;
  for (const auto& s : samples) {
    if (!std::isfinite(s.value)) continue;
    if (s.name == contract::metric::kStops) stops = static_cast<int64_t>(s.value);
    if (s.name == contract::metric::kRoundsLost) lost = static_cast<int64_t>(s.value);
    if (s.name == contract::metric::kLastStopRound) round = static_cast<int64_t>(s.value);
    if (s.name == contract::metric::kLastStopResumedRound) resumed = static_cast<int64_t>(s.value);
  }
  if (!stops || !lost || *stops < 0 || (m.stops && *m.stops >= *stops)) return;  // -1: not known yet
  m.stops = stops;
  m.rounds_lost = lost;
  const bool stopped = round && resumed && *round >= 0 && *resumed >= 0;
  m.last_stop_round = stopped ? round : std::nullopt;
  m.last_stop_resumed_round = stopped ? resumed : std::nullopt;
}

}  // namespace

JobMetrics aggregate_job_metrics(const std::vector<std::vector<Sample>>& per_rank) {
  JobMetrics m;
  double ppl_sum = 0, loss_sum = 0, tps_sum = 0;
  int ppl_n = 0, loss_n = 0, tps_n = 0;
  for (const auto& samples : per_rank) {
    ++m.ranks_scraped;
    for (const auto& s : samples) {
      if (!std::isfinite(s.value)) continue;
      if (s.name == contract::metric::kStateBytes) {
        auto it = s.labels.find("component");
        if (it != s.labels.end()) m.state_bytes[it->second] += s.value;
      } else if (s.name == contract::metric::kFlopsExecuted) {
        m.flops_executed += s.value;
      } else if (s.name == contract::metric::kFlopsFullBackward) {
        m.flops_full_backward += s.value;
      } else if (s.name == contract::metric::kEvalPerplexity) {
        ppl_sum += s.value, ++ppl_n;
      } else if (s.name == contract::metric::kLoss) {
        loss_sum += s.value, ++loss_n;
      } else if (s.name == contract::metric::kTokensPerSecond) {
        tps_sum += s.value, ++tps_n;
      } else if (s.name == contract::metric::kOuterRound) {
        auto r = static_cast<int64_t>(s.value);
        m.outer_round = m.outer_round ? std::min(*m.outer_round, r) : r;
      } else if (s.name == contract::metric::kCheckpointRound) {
        auto r = static_cast<int64_t>(s.value);
        m.checkpoint_round = m.checkpoint_round ? std::max(*m.checkpoint_round, r) : r;
      } else if (s.name == contract::metric::kStep) {
        auto n = static_cast<int64_t>(s.value);
        m.step = m.step ? std::min(*m.step, n) : n;
      } else if (s.name == contract::metric::kStepsTarget) {
        auto n = static_cast<int64_t>(s.value);
        m.steps_target = m.steps_target ? std::max(*m.steps_target, n) : n;
      } else if (s.name == contract::metric::kRemainingSeconds) {
        m.remaining_seconds = m.remaining_seconds ? std::max(*m.remaining_seconds, s.value) : s.value;
      } else if (s.name == contract::metric::kLiveRanks) {
        auto n = static_cast<int64_t>(s.value);
        m.live_ranks = m.live_ranks ? std::min(*m.live_ranks, n) : n;
      } else if (s.name == contract::metric::kMinSliceCoverage) {
        m.min_slice_coverage = m.min_slice_coverage ? std::min(*m.min_slice_coverage, s.value) : s.value;
      }
    }
    note_stops(m, samples);
  }
  if (ppl_n) m.eval_perplexity = ppl_sum / ppl_n;
  if (loss_n) m.loss = loss_sum / loss_n;
  if (tps_n) m.tokens_per_second = tps_sum;
  return m;
}

}  // namespace ppu::op
