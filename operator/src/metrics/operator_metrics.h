// OperatorMetrics: every series ppu-operator exports (docs/METRICS.md, "Operator"), in one
// prometheus-cpp registry: its own health (reconciles, errors, queue depth, latency, jobs by
// phase, exports by outcome, gang restarts, force-deletions and recovery back-offs) and the
// per-job gauges built from scraped rank metrics. Thread-safe.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include "metrics/job_metrics.h"

namespace ppu::op {

class OperatorMetrics {
 public:
  OperatorMetrics();
  std::shared_ptr<prometheus::Registry> registry() const { return registry_; }

  void reconcile_done(const std::string& result, double seconds);  // result: success | error | conflict
  void set_queue_depth(size_t depth);
  void gang_restart();
  // Live recovery: lost rank pods force-deleted from a lost node; replacements held by back-off.
  void force_deletions(int n);
  void recovery_backoffs(int n);
  void set_jobs_by_phase(const std::map<std::string, int>& counts);
  // PPUJobs by the reason of their Exported condition (every reason of reason::kExportReasons, 0 if none).
  void set_exports_by_reason(const std::map<std::string, int>& counts);
  // Jobs whose condition Admitted is False (queued for Kueue, or evicted) and not finished.
  void set_jobs_waiting_for_admission(int n);

  // Per-job series (labels namespace, job); remove_job drops them when the job goes away.
  void set_job(const std::string& ns, const std::string& job, const JobMetrics& m, int ranks_ready, int ranks_total,
               int restarts, int recoveries);
  void set_job_status(const std::string& ns, const std::string& job, int ranks_ready, int ranks_total, int restarts,
                      int recoveries);
  // A finished job's final round and perplexity (status.result), which no scrape follows.
  void set_job_result(const std::string& ns, const std::string& job, int64_t outer_round, double perplexity);
  void remove_job(const std::string& ns, const std::string& job);

 private:
  prometheus::Gauge& job_gauge(prometheus::Family<prometheus::Gauge>& f, const std::string& ns, const std::string& job,
                               const std::map<std::string, std::string>& extra = {});

  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Family<prometheus::Counter>& reconciles_;
  prometheus::Counter& errors_;
  prometheus::Gauge& depth_;
  prometheus::Histogram& duration_;
  prometheus::Family<prometheus::Gauge>& jobs_;
  prometheus::Family<prometheus::Gauge>& exports_;
  prometheus::Gauge& waiting_;
  prometheus::Counter& restarts_;
  prometheus::Counter& force_deletions_;
  prometheus::Counter& recovery_backoffs_;
  prometheus::Family<prometheus::Gauge>& state_bytes_;
  prometheus::Family<prometheus::Gauge>& flops_exec_;
  prometheus::Family<prometheus::Gauge>& flops_full_;
  prometheus::Family<prometheus::Gauge>& flops_saved_;
  prometheus::Family<prometheus::Gauge>& ppl_;
  prometheus::Family<prometheus::Gauge>& loss_;
  prometheus::Family<prometheus::Gauge>& round_;
  prometheus::Family<prometheus::Gauge>& tps_;
  prometheus::Family<prometheus::Gauge>& ready_;
  prometheus::Family<prometheus::Gauge>& total_;
  prometheus::Family<prometheus::Gauge>& job_restarts_;
  prometheus::Family<prometheus::Gauge>& job_recoveries_;
  prometheus::Family<prometheus::Gauge>& live_ranks_;
  prometheus::Family<prometheus::Gauge>& coverage_;
  prometheus::Family<prometheus::Gauge>& progress_;
  prometheus::Family<prometheus::Gauge>& remaining_;
  prometheus::Family<prometheus::Gauge>& rounds_lost_;
  prometheus::Family<prometheus::Gauge>& stops_;
  std::mutex mu_;
  // ns/job → every gauge created for it, so remove_job can drop them all.
  std::map<std::string, std::vector<std::pair<prometheus::Family<prometheus::Gauge>*, prometheus::Gauge*>>> per_job_;
};

}  // namespace ppu::op
