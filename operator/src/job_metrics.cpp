#include "job_metrics.h"

#include <algorithm>
#include <cmath>

namespace ppu::op {

JobMetrics aggregate_job_metrics(const std::vector<std::vector<Sample>>& per_rank) {
  JobMetrics m;
  double ppl_sum = 0, loss_sum = 0, tps_sum = 0;
  int ppl_n = 0, loss_n = 0, tps_n = 0;
  for (const auto& samples : per_rank) {
    ++m.ranks_scraped;
    for (const auto& s : samples) {
      if (!std::isfinite(s.value)) continue;
      if (s.name == "ppu_state_bytes") {
        auto it = s.labels.find("component");
        if (it != s.labels.end()) m.state_bytes[it->second] += s.value;
      } else if (s.name == "ppu_flops_executed_total") {
        m.flops_executed += s.value;
      } else if (s.name == "ppu_flops_full_backward_total") {
        m.flops_full_backward += s.value;
      } else if (s.name == "ppu_eval_perplexity") {
        ppl_sum += s.value, ++ppl_n;
      } else if (s.name == "ppu_loss") {
        loss_sum += s.value, ++loss_n;
      } else if (s.name == "ppu_tokens_per_second") {
        tps_sum += s.value, ++tps_n;
      } else if (s.name == "ppu_outer_round") {
        auto r = static_cast<int64_t>(s.value);
        m.outer_round = m.outer_round ? std::min(*m.outer_round, r) : r;
      } else if (s.name == "ppu_checkpoint_round") {
        auto r = static_cast<int64_t>(s.value);
        m.checkpoint_round = m.checkpoint_round ? std::max(*m.checkpoint_round, r) : r;
      }
    }
  }
  if (ppl_n) m.eval_perplexity = ppl_sum / ppl_n;
  if (loss_n) m.loss = loss_sum / loss_n;
  if (tps_n) m.tokens_per_second = tps_sum;
  return m;
}

}  // namespace ppu::op
