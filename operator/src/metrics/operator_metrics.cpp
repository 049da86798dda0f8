#include "metrics/operator_metrics.h"

#include "metrics/metric_names.h"
#include "reconcile/job_constants.h"

namespace ppu::op {

using prometheus::BuildCounter;
using prometheus::BuildGauge;
using prometheus::BuildHistogram;

namespace {
prometheus::Family<prometheus::Gauge>& gauge_family(prometheus::Registry& r, const char* name, const char* help) {
  return BuildGauge().Name(name).Help(help).Register(r);
}
}  // namespace

OperatorMetrics::OperatorMetrics()
    : registry_(std::make_shared<prometheus::Registry>()),
      reconciles_(BuildCounter()
                      .Name(metric_name::kReconciles)
                      .Help("Reconcile passes by result (success, error, conflict)")
                      .Register(*registry_)),
      errors_(BuildCounter()
                  .Name(metric_name::kReconcileErrors)
                  .Help("Reconcile passes that failed and were retried")
                  .Register(*registry_)
                  .Add({})),
      depth_(BuildGauge()
                 .Name(metric_name::kWorkqueueDepth)
                 .Help("Jobs waiting to be reconciled")
                 .Register(*registry_)
                 .Add({})),
      duration_(BuildHistogram()
                    .Name(metric_name::kReconcileDuration)
                    .Help("Time of one reconcile pass, API calls included")
                    .Register(*registry_)
                    .Add({}, prometheus::Histogram::BucketBoundaries{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                                                     0.5, 1, 2.5, 5, 10})),
      jobs_(gauge_family(*registry_, metric_name::kJobsByPhase, "PPUJobs by phase")),
      exports_(gauge_family(*registry_, metric_name::kJobExports,
                            "PPUJobs with spec.export by the reason of their Exported condition")),
      waiting_(gauge_family(*registry_, metric_name::kJobsWaitingForAdmission,
                            "PPUJobs queued for Kueue or evicted by it, waiting to be admitted")
                   .Add({})),
      restarts_(BuildCounter()
                    .Name(metric_name::kGangRestarts)
                    .Help("Gang restarts performed by this operator")
                    .Register(*registry_)
                    .Add({})),
      force_deletions_(BuildCounter()
                           .Name(metric_name::kPodForceDeletions)
                           .Help("Lost rank pods force-deleted from a NotReady, unreachable or deleted node")
                           .Register(*registry_)
                           .Add({})),
      recovery_backoffs_(BuildCounter()
                             .Name(metric_name::kRecoveryBackoffs)
                             .Help("Rank replacements made to wait for their back-off (the rank lost again "
                                   "within the recovery window)")
                             .Register(*registry_)
                             .Add({})),
      state_bytes_(gauge_family(*registry_, metric_name::kJobStateBytes,
                                "Training-state bytes by component, summed over ranks")),
      flops_exec_(
          gauge_family(*registry_, metric_name::kJobFlopsExecuted, "FLOPs executed, summed over the ranks' counters")),
      flops_full_(gauge_family(*registry_, metric_name::kJobFlopsFullBackward,
                               "FLOPs a full backward would have cost, summed over ranks")),
      flops_saved_(gauge_family(*registry_, metric_name::kJobFlopsSavedRatio, "1 - executed / full-backward FLOPs")),
      ppl_(gauge_family(*registry_, metric_name::kJobEvalPerplexity, "Mean eval perplexity over ranks")),
      loss_(gauge_family(*registry_, metric_name::kJobLoss, "Mean training loss over ranks")),
      round_(gauge_family(*registry_, metric_name::kJobOuterRound, "Outer rounds completed by every rank")),
      tps_(gauge_family(*registry_, metric_name::kJobTokensPerSecond, "Training tokens/s summed over ranks")),
      ready_(gauge_family(*registry_, metric_name::kJobRanksReady, "Ready rank pods")),
      total_(gauge_family(*registry_, metric_name::kJobReplicas, "Ranks wanted (spec.replicas)")),
      job_restarts_(
          gauge_family(*registry_, metric_name::kJobRestarts, "Gang restarts of the job (status.restartCount)")),
      job_recoveries_(gauge_family(*registry_, metric_name::kJobRecoveries,
                                   "Rank pods recreated alone by live recovery (status.recoveries)")),
      live_ranks_(gauge_family(*registry_, metric_name::kJobLiveRanks,
                               "Ranks in the live group, the smallest count any rank reports")),
      coverage_(gauge_family(*registry_, metric_name::kJobMinSliceCoverage,
                             "Smallest fraction of an element's owners that are live, over the ranks")),
      progress_(gauge_family(*registry_, metric_name::kJobProgressRatio,
                             "Inner steps done by the slowest rank over the steps configured (0-1)")),
      remaining_(gauge_family(*registry_, metric_name::kJobRemainingSeconds,
                              "Seconds the slowest rank still needs at its measured rate")),
      rounds_lost_(gauge_family(*registry_, metric_name::kJobRoundsLost,
                                "Outer rounds trained again after stops of the whole job (status.roundsLost)")),
      stops_(gauge_family(*registry_, metric_name::kJobStops,
                          "Stops of the whole job its ranks recorded (status.stops)")) {}

void OperatorMetrics::reconcile_done(const std::string& result, double seconds) {
  reconciles_.Add({{"result", result}}).Increment();
  if (result == "error") errors_.Increment();
  duration_.Observe(seconds);
}

void OperatorMetrics::set_queue_depth(size_t d) { depth_.Set(static_cast<double>(d)); }
void OperatorMetrics::gang_restart() { restarts_.Increment(); }
void OperatorMetrics::force_deletions(int n) { force_deletions_.Increment(n); }
void OperatorMetrics::recovery_backoffs(int n) { recovery_backoffs_.Increment(n); }
void OperatorMetrics::set_jobs_waiting_for_admission(int n) { waiting_.Set(n); }

void OperatorMetrics::set_jobs_by_phase(const std::map<std::string, int>& counts) {
  for (const char* p : phase::kAll) {
    auto it = counts.find(p);
    jobs_.Add({{"phase", p}}).Set(it == counts.end() ? 0 : it->second);
  }
}

void OperatorMetrics::set_exports_by_reason(const std::map<std::string, int>& counts) {
  for (const char* r : reason::kExportReasons) {
    auto it = counts.find(r);
    exports_.Add({{"reason", r}}).Set(it == counts.end() ? 0 : it->second);
  }
}

prometheus::Gauge& OperatorMetrics::job_gauge(prometheus::Family<prometheus::Gauge>& f, const std::string& ns,
                                              const std::string& job, const std::map<std::string, std::string>& extra) {
  std::map<std::string, std::string> labels = {{"namespace", ns}, {"job", job}};
  labels.insert(extra.begin(), extra.end());
  auto& g = f.Add(labels);
  auto& list = per_job_[ns + "/" + job];
  bool known = false;
  for (auto& [fam, gauge] : list) known |= gauge == &g;
  if (!known) list.emplace_back(&f, &g);
  return g;
}

void OperatorMetrics::set_job_status(const std::string& ns, const std::string& job, int ready, int total, int restarts,
                                     int recoveries) {
  std::lock_guard<std::mutex> l(mu_);
  job_gauge(ready_, ns, job).Set(ready);
  job_gauge(total_, ns, job).Set(total);
  job_gauge(job_restarts_, ns, job).Set(restarts);
  job_gauge(job_recoveries_, ns, job).Set(recoveries);
}

void OperatorMetrics::set_job(const std::string& ns, const std::string& job, const JobMetrics& m, int ready, int total,
                              int restarts, int recoveries) {
  set_job_status(ns, job, ready, total, restarts, recoveries);
  std::lock_guard<std::mutex> l(mu_);
  for (const auto& [component, bytes] : m.state_bytes)
    job_gauge(state_bytes_, ns, job, {{"component", component}}).Set(bytes);
  job_gauge(flops_exec_, ns, job).Set(m.flops_executed);
  job_gauge(flops_full_, ns, job).Set(m.flops_full_backward);
  job_gauge(flops_saved_, ns, job).Set(m.flops_saved_ratio());
  if (m.eval_perplexity) job_gauge(ppl_, ns, job).Set(*m.eval_perplexity);
  if (m.loss) job_gauge(loss_, ns, job).Set(*m.loss);
  if (m.outer_round) job_gauge(round_, ns, job).Set(static_cast<double>(*m.outer_round));
  if (m.tokens_per_second) job_gauge(tps_, ns, job).Set(*m.tokens_per_second);
  if (m.live_ranks) job_gauge(live_ranks_, ns, job).Set(static_cast<double>(*m.live_ranks));
  if (m.min_slice_coverage) job_gauge(coverage_, ns, job).Set(*m.min_slice_coverage);
  if (m.step && m.steps_target && *m.steps_target > 0)
    job_gauge(progress_, ns, job).Set(static_cast<double>(*m.step) / static_cast<double>(*m.steps_target));
  if (m.remaining_seconds) job_gauge(remaining_, ns, job).Set(*m.remaining_seconds);
  if (m.rounds_lost) job_gauge(rounds_lost_, ns, job).Set(static_cast<double>(*m.rounds_lost));
  if (m.stops) job_gauge(stops_, ns, job).Set(static_cast<double>(*m.stops));
}

void OperatorMetrics::set_job_result(const std::string& ns, const std::string& job, int64_t outer_round,
                                     double perplexity) {
  std::lock_guard<std::mutex> l(mu_);
  job_gauge(round_, ns, job).Set(static_cast<double>(outer_round));
  job_gauge(ppl_, ns, job).Set(perplexity);
}

void OperatorMetrics::remove_job(const std::string& ns, const std::string& job) {
  std::lock_guard<std::mutex> l(mu_);
  auto it = per_job_.find(ns + "/" + job);
  if (it == per_job_.end()) return;
  for (auto& [fam, gauge] : it->second) fam->Remove(gauge);
  per_job_.erase(it);
}

}  // namespace ppu::op
