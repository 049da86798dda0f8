#include "engine/obs/rank_metrics.h"

#include "core/config.h"
#include "core/job_contract.h"

#include <httplib.h>
#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <memory>

namespace ppu {

using prometheus::BuildCounter;
using prometheus::BuildGauge;

struct RankMetrics::Families {
  prometheus::Family<prometheus::Gauge>& state;
  prometheus::Family<prometheus::Gauge>& state_full;
  prometheus::Gauge& rss;
  prometheus::Gauge& cuda_allocated;
  prometheus::Gauge& cuda_reserved;
  prometheus::Gauge& cuda_peak;
  prometheus::Counter& flops;
  prometheus::Counter& flops_full;
  prometheus::Gauge& step_flops;
  prometheus::Gauge& step_flops_full;
  prometheus::Gauge& loss;
  prometheus::Gauge& train_ppl;
  prometheus::Gauge& eval_loss;
  prometheus::Gauge& eval_ppl;
  prometheus::Family<prometheus::Gauge>& floor;
  prometheus::Counter& tokens;
  prometheus::Gauge& tokens_per_second;
  prometheus::Gauge& step;
  prometheus::Gauge& steps_target;
  prometheus::Gauge& remaining_seconds;
  prometheus::Gauge& outer_round;
  prometheus::Family<prometheus::Counter>& sync_bytes;
  prometheus::Family<prometheus::Counter>& sync_seconds;
  prometheus::Family<prometheus::Counter>& syncs;
  prometheus::Gauge& checkpoint_round;
  prometheus::Family<prometheus::Counter>& sync_received;
  prometheus::Family<prometheus::Counter>& network_wait;
  prometheus::Gauge& live_ranks;
  prometheus::Gauge& min_slice_coverage;
  prometheus::Counter& rounds_degraded;
  prometheus::Counter& recoveries;
  prometheus::Counter& recovery_seconds;
  prometheus::Counter& theta_mismatches;
  prometheus::Counter& checkpoint_failures;
  prometheus::Family<prometheus::Counter>& faults;
  prometheus::Family<prometheus::Counter>& fault_recovery_seconds;
  prometheus::Gauge& rounds_lost;
  prometheus::Gauge& stops;
  prometheus::Gauge& last_stop_round;
  prometheus::Gauge& last_stop_resumed_round;
  prometheus::Family<prometheus::Counter>& sync_points;
  prometheus::Counter& sync_point_wait;
  prometheus::Counter& skipped_steps;
  prometheus::Counter& short_contributions;
  prometheus::Family<prometheus::Counter>& late_work;
  prometheus::Gauge& grace;
};

namespace {
template <class B>
auto& one(B&& builder, prometheus::Registry& r) {
  return builder.Register(r).Add({});
}
}  // namespace

RankMetrics::RankMetrics(int port, const std::map<std::string, std::string>& labels) {
  if (port <= 0) return;
  registry_ = std::make_shared<prometheus::Registry>();
  auto& r = *registry_;
  // Builders are values: they must live until Register() has been called on them.
  auto gauge = [&](const char* name, const char* help) { return BuildGauge().Name(name).Help(help).Labels(labels); };
  auto counter = [&](const char* name, const char* help) {
    return BuildCounter().Name(name).Help(help).Labels(labels);
  };
  f_ = std::make_unique<Families>(Families{
      gauge(contract::metric::kStateBytes,
            "Training-state memory by the paper's components, measured from live tensors")
          .Register(r),
      gauge(contract::metric::kStateFullTrainingBytes, "The same component under full (unsliced) training").Register(r),
      one(gauge(contract::metric::kProcessResidentMemoryBytes, "Resident set size of the rank process"), r),
      one(gauge(contract::metric::kCudaMemoryAllocatedBytes, "CUDA memory allocated by tensors"), r),
      one(gauge(contract::metric::kCudaMemoryReservedBytes, "CUDA memory reserved by the caching allocator"), r),
      one(gauge(contract::metric::kCudaMemoryPeakBytes, "Peak CUDA memory allocated"), r),
      one(counter(contract::metric::kFlopsExecuted, "FLOPs executed by training steps (Appendix C, partial backward)"),
          r),
      one(counter(contract::metric::kFlopsFullBackward, "FLOPs the same steps would cost with a full backward"), r),
      one(gauge(contract::metric::kStepFlopsExecuted, "FLOPs of one inner step"), r),
      one(gauge(contract::metric::kStepFlopsFullBackward, "FLOPs of one inner step with a full backward"), r),
      one(gauge(contract::metric::kLoss, "Last training loss in nats per token"), r),
      one(gauge(contract::metric::kTrainPerplexity, "exp(training loss)"), r),
      one(gauge(contract::metric::kEvalLoss, "Last held-out loss in nats per token"), r),
      one(gauge(contract::metric::kEvalPerplexity, "Last held-out perplexity"), r),
      gauge(contract::metric::kEvalPerplexityFloor, "Best achievable perplexity of the synthetic corpus").Register(r),
      one(counter(contract::metric::kTokens, "Training tokens consumed by this rank"), r),
      one(gauge(contract::metric::kTokensPerSecond, "Recent training throughput of this rank"), r),
      one(gauge(contract::metric::kStep, "Inner steps completed"), r),
      one(gauge(contract::metric::kStepsTarget, "Inner steps configured"), r),
      one(gauge(contract::metric::kRemainingSeconds,
                "Seconds to this rank's last step at its measured rate (evaluations excluded)"),
          r),
      one(gauge(contract::metric::kOuterRound, "Outer rounds completed"), r),
      counter(contract::metric::kOuterSyncBytes, "Bytes this rank sent (put on the wire) for syncs").Register(r),
      counter(contract::metric::kOuterSyncSeconds, "Seconds spent in outer syncs").Register(r),
      counter(contract::metric::kOuterSyncs, "Outer syncs performed").Register(r),
      one(gauge(contract::metric::kCheckpointRound, "Outer round of the newest checkpoint written or resumed from"), r),
      counter(contract::metric::kOuterSyncReceivedBytes, "Bytes this rank took off the wire for syncs").Register(r),
      counter(contract::metric::kNetworkWaitSeconds, "Seconds training was blocked waiting for an exchange to complete")
          .Register(r),
      one(gauge(contract::metric::kLiveRanks, "Ranks in this rank's current group"), r),
      one(gauge(contract::metric::kMinSliceCoverage,
                "Smallest fraction, over parameter elements, of an element's owners that are live"),
          r),
      one(counter(contract::metric::kRoundsDegraded, "Outer rounds finished with a rank missing"), r),
      one(counter(contract::metric::kRecoveries, "Groups re-formed in place without a gang restart"), r),
      one(counter(contract::metric::kRecoverySeconds, "Seconds spent re-forming the group and taking ranks back"), r),
      one(counter(contract::metric::kThetaMismatches,
                  "Ranks found holding another global θ than the others before a sync (then repaired)"),
          r),
      one(counter(contract::metric::kCheckpointFailures,
                  "Checkpoint rounds that could not be written (a full disk, a read-only mount); training went on"),
          r),
      counter(contract::metric::kFaults, "Faults this rank saw and recovered from, by kind (docs/RECOVERY.md)")
          .Register(r),
      counter(contract::metric::kFaultRecoverySeconds,
              "Seconds from a fault to the re-formed group, by the fault's kind")
          .Register(r),
      one(gauge(contract::metric::kRoundsLost,
                "Outer rounds the job lost to stops of the whole job over its life (reached - resumed, summed)"),
          r),
      one(gauge(contract::metric::kStops,
                "Stops of the whole job over its life (notices, gang restarts, all ranks lost)"),
          r),
      one(gauge(contract::metric::kLastStopRound, "The round the job had reached at its last stop; -1: none"), r),
      one(gauge(contract::metric::kLastStopResumedRound, "The round the run after the job's last stop resumed from"),
          r),
      counter(contract::metric::kSyncPoints,
              "Quorum sync: sync points passed, by how they closed (all, grace) or sat out (sat_out)")
          .Register(r),
      one(counter(contract::metric::kSyncPointWaitSeconds,
                  "Quorum sync: seconds this rank waited at sync points for them to close"),
          r),
      one(counter(contract::metric::kInnerStepsSkipped,
                  "Quorum sync: inner steps this rank skipped to reach a sync point that had closed"),
          r),
      one(counter(contract::metric::kShortContributions,
                  "Quorum sync: outer steps this rank's delta entered with a weight below 1"),
          r),
      counter(contract::metric::kLateWork,
              "Quorum sync: fragments this rank rejoined after sitting out their outer steps, by what became of "
              "its work on them (merge, drop: outer.quorum_late_work)")
          .Register(r),
      one(gauge(contract::metric::kQuorumGraceSeconds, "Quorum sync: the grace window after a quorum arrived"), r),
  });
  set_job_stops(-1, -1, -1, -1);  // unknown until the run reads the checkpoint directory's history
  // Sitting out's series exist from the start at 0, as counters of known labels should: a
  // dashboard shows "none yet" rather than "no data".
  f_->sync_points.Add({{"closed", "sat_out"}});
  for (const auto& outcome : choice_names<LateWork>()) f_->late_work.Add({{"outcome", outcome}});
  server_ = std::make_unique<httplib::Server>();
  server_->Get("/metrics", [registry = registry_](const httplib::Request&, httplib::Response& res) {
    res.set_content(prometheus::TextSerializer().Serialize(registry->Collect()), "text/plain; version=0.0.4");
  });
  if (!server_->bind_to_port("0.0.0.0", port))
    throw std::runtime_error("metrics.port " + std::to_string(port) + ": cannot listen (port in use?)");
  serving_ = std::make_unique<std::thread>([this] { server_->listen_after_bind(); });
}

RankMetrics::~RankMetrics() {
  if (server_) {
    server_->stop();
    serving_->join();
  }
}

void RankMetrics::set_state(const StateBytes& m, const StateBytes& full) {
  if (!f_) return;
  auto put = [](prometheus::Family<prometheus::Gauge>& fam, const StateBytes& s) {
    fam.Add({{"component", "weights"}}).Set(s.weights);
    fam.Add({{"component", "gradients"}}).Set(s.gradients);
    fam.Add({{"component", "inner_optimizer"}}).Set(s.inner_optimizer);
    fam.Add({{"component", "outer_optimizer"}}).Set(s.outer_optimizer);
    fam.Add({{"component", "offloaded"}}).Set(s.offloaded);
  };
  put(f_->state, m);
  put(f_->state_full, full);
}

void RankMetrics::set_memory(double rss_bytes, double cuda_allocated, double cuda_reserved, double cuda_peak) {
  if (!f_) return;
  f_->rss.Set(rss_bytes);
  f_->cuda_allocated.Set(cuda_allocated);
  f_->cuda_reserved.Set(cuda_reserved);
  f_->cuda_peak.Set(cuda_peak);
}

void RankMetrics::add_step(double flops_executed, double flops_full, double tokens) {
  if (!f_) return;
  f_->flops.Increment(flops_executed);
  f_->flops_full.Increment(flops_full);
  f_->step_flops.Set(flops_executed);
  f_->step_flops_full.Set(flops_full);
  f_->tokens.Increment(tokens);
}

void RankMetrics::set_progress(double step, double steps_target, double remaining_seconds, double loss,
                               double tokens_per_second, double outer_round) {
  if (!f_) return;
  f_->step.Set(step);
  f_->steps_target.Set(steps_target);
  f_->remaining_seconds.Set(remaining_seconds);
  f_->loss.Set(loss);
  f_->train_ppl.Set(std::exp(loss));
  f_->tokens_per_second.Set(tokens_per_second);
  f_->outer_round.Set(outer_round);
}

void RankMetrics::set_eval(double loss, double floor_perplexity) {
  if (!f_) return;
  f_->eval_loss.Set(loss);
  f_->eval_ppl.Set(std::exp(loss));
  if (floor_perplexity > 0) f_->floor.Add({}).Set(floor_perplexity);
}

void RankMetrics::add_sync(const std::string& fragment, double bytes_sent, double bytes_received, double seconds,
                           double wait_seconds) {
  if (!f_) return;
  f_->sync_bytes.Add({{"fragment", fragment}}).Increment(bytes_sent);
  f_->sync_received.Add({{"fragment", fragment}}).Increment(bytes_received);
  f_->network_wait.Add({{"fragment", fragment}}).Increment(wait_seconds);
  f_->sync_seconds.Add({{"fragment", fragment}}).Increment(seconds);
  f_->syncs.Add({{"fragment", fragment}}).Increment();
}

void RankMetrics::set_job_stops(double stops, double rounds_lost, double last_stop_round,
                                double last_stop_resumed_round) {
  if (!f_) return;
  f_->stops.Set(stops);
  f_->rounds_lost.Set(rounds_lost);
  f_->last_stop_round.Set(last_stop_round);
  f_->last_stop_resumed_round.Set(last_stop_resumed_round);
}

void RankMetrics::set_checkpoint_round(double round) {
  if (f_) f_->checkpoint_round.Set(round);
}

void RankMetrics::set_live(double live_ranks, double min_slice_coverage) {
  if (!f_) return;
  f_->live_ranks.Set(live_ranks);
  f_->min_slice_coverage.Set(min_slice_coverage);
}

void RankMetrics::add_checkpoint_failure() {
  if (f_) f_->checkpoint_failures.Increment();
}

void RankMetrics::add_theta_mismatches(int ranks) {
  if (f_) f_->theta_mismatches.Increment(ranks);
}

void RankMetrics::add_degraded_round() {
  if (f_) f_->rounds_degraded.Increment();
}

void RankMetrics::add_recovery(bool lost, double seconds) {
  if (!f_) return;
  if (lost) f_->recoveries.Increment();
  f_->recovery_seconds.Increment(seconds);
}

void RankMetrics::add_fault(const std::string& kind, double seconds_to_recover) {
  if (!f_) return;
  f_->faults.Add({{"kind", kind}}).Increment();
  f_->fault_recovery_seconds.Add({{"kind", kind}}).Increment(seconds_to_recover);
}

void RankMetrics::add_sync_point(const std::string& closed, double wait_seconds, double grace_seconds) {
  if (!f_) return;
  f_->sync_points.Add({{"closed", closed}}).Increment();
  f_->sync_point_wait.Increment(wait_seconds);
  f_->grace.Set(grace_seconds);
}

void RankMetrics::add_late_work(const std::string& outcome) {
  if (f_) f_->late_work.Add({{"outcome", outcome}}).Increment();
}

void RankMetrics::add_skipped_step() {
  if (f_) f_->skipped_steps.Increment();
}

void RankMetrics::add_short_contribution() {
  if (f_) f_->short_contributions.Increment();
}

double process_rss_bytes() {
  std::ifstream in("/proc/self/statm");
  long pages_total = 0, pages_resident = 0;
  in >> pages_total >> pages_resident;
  return static_cast<double>(pages_resident) * static_cast<double>(sysconf(_SC_PAGESIZE));
}

}  // namespace ppu
