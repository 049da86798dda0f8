// Completion and TTL: how a job ends (Succeeded when every rank succeeded, Failed from the
// other policies) and what happens after: cleanPodPolicy, the export (policy_export.cpp), then
// ttlSecondsAfterFinished, which waits for the export.
// A succeeded job's final status comes from the ranks' results (their termination messages,
// core/run_result.h), never from the last metrics scrape, which is always older.
#include <cstdio>
#include <map>
#include <optional>

#include "core/run_result.h"
#include "kube/rfc3339.h"
#include "reconcile/reconcile_pass.h"

namespace ppu::op::detail::policy {

void finish(Pass& p, bool succeeded, const std::string& why, const std::string& message) {
  p.status.phase = succeeded ? JobPhase::Succeeded : JobPhase::Failed;
  p.status.completion_time = format_rfc3339(p.in.now);
  p.status.next_restart_time.reset();
  p.status.recovering_ranks.reset();
  p.cond(succeeded ? condition::kSucceeded : condition::kFailed, true, why, message);
  p.cond(condition::kRunning, false, why, message);
  if (const Condition* c = p.status.condition(condition::kPodCreationFailed); c && c->is_true())
    p.cond(condition::kPodCreationFailed, false, why, "job finished");
  if (succeeded) {
    p.status.reason.reset();
    p.status.message.reset();
    p.status.progress_percentage = 100;
    p.status.estimated_remaining_seconds = 0;
  } else {
    p.status.estimated_remaining_seconds.reset();  // it will not finish
    p.status.reason = why;
    p.status.message = message;
  }
  p.event(succeeded ? event_type::kNormal : event_type::kWarning, why, message);
  // Peers of a failed job would wait for rendezvous forever: remove active pods whatever
  // cleanPodPolicy says (it governs the finished ones, see finished()).
  p.delete_pods_if(pod_active);
  finished(p);
}

void finished(Pass& p) {
  const auto& policy = p.spec.run_policy.clean_pod_policy;
  if (policy == clean_pod_policy::kAll) p.delete_pods_if([](const json&) { return true; });
  else if (policy == clean_pod_policy::kRunning) p.delete_pods_if(pod_active);
  export_model(p);
  // Deleting the job would take the export Job with it: wait until it ended (a change of its
  // status brings the next pass). The TTL still counts from completionTime.
  if (export_pending(p)) return;
  if (p.spec.run_policy.ttl_seconds_after_finished) {
    auto done = parse_rfc3339(p.status.completion_time.value_or(""));
    int64_t at = done.value_or(p.in.now) + *p.spec.run_policy.ttl_seconds_after_finished;
    if (at <= p.in.now) p.actions.emplace_back(DeletePPUJob{p.spec.name});
    else p.requeue_in(static_cast<double>(at - p.in.now));
  }
}

namespace {

std::string rank_list(const std::vector<int>& ranks) {
  std::string out;
  for (int r : ranks) out += (out.empty() ? "" : ", ") + std::to_string(r);
  return out;
}

std::string decimal(double v, const char* format) {
  char buf[48];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

// The figures a run reports while it runs, removed when no final result replaces them: a stale
// scrape must not read as the job's result.
void forget_progress(Pass& p) {
  p.status.outer_round.reset();
  p.status.perplexity.reset();
  p.status.last_checkpoint_round.reset();
  p.status.result.reset();
}

}  // namespace

bool completion(Pass& p, const Gang& g) {
  int succeeded = 0;
  for (const auto& [r, pod] : g.by_rank)
    if (pod_phase(*pod) == pod_phase_name::kSucceeded) ++succeeded;
  if (succeeded < g.size) return false;
  const std::string all = "all " + std::to_string(g.size) + " ranks finished";

  std::map<int, RunResult> results;
  std::vector<int> missing;
  for (const auto& [r, pod] : g.by_rank) {
    if (auto res = parse_run_result(termination_message(*pod))) results[r] = *res;
    else missing.push_back(r);
  }
  if (!missing.empty()) {
    forget_progress(p);
    const std::string why = "rank(s) " + rank_list(missing) +
                            " ended without a readable result (an older image, or a truncated termination "
                            "message): the final round, perplexity and checkpoint are unknown";
    p.cond(condition::kResultReported, false, reason::kResultMissing, why);
    p.event(event_type::kWarning, reason::kResultMissing, why);
    finish(p, true, reason::kAllRanksSucceeded, all + "; final figures missing");
    return true;
  }

  // Every rank ends with the same global parameters; if not, the result is not the job's.
  std::map<std::string, std::vector<int>> by_checksum;
  for (const auto& [r, res] : results) by_checksum[res.checksum].push_back(r);
  if (by_checksum.size() > 1) {
    forget_progress(p);
    std::string which;
    for (const auto& [sum, ranks] : by_checksum)
      which += (which.empty() ? "" : "; ") + sum + " on rank(s) " + rank_list(ranks);
    const std::string why = "the ranks ended with different global parameters (" + which + ")";
    p.cond(condition::kResultReported, false, reason::kRanksDisagree, why);
    finish(p, false, reason::kRanksDisagree, why);
    return true;
  }

  const RunResult& first = results.begin()->second;
  int64_t tokens = 0, steps = 0;
  double seconds = 0;
  for (const auto& [r, res] : results) {
    tokens += res.tokens;
    steps = std::max(steps, res.steps);
    seconds = std::max(seconds, res.seconds);
  }
  p.status.outer_round = first.round;
  p.status.step = p.status.steps = steps;  // every step done (finish() sets 100 %)
  p.status.perplexity = decimal(first.perplexity, "%.3f");
  if (first.checkpoint_round >= 0) p.status.last_checkpoint_round = first.checkpoint_round;
  else p.status.last_checkpoint_round.reset();
  JobResult res;
  res.outer_round = first.round;
  res.eval_loss = decimal(first.eval_loss, "%.6f");
  res.perplexity = decimal(first.perplexity, "%.4f");
  res.steps = steps;
  res.tokens = tokens;
  res.duration_seconds = decimal(seconds, "%.1f");
  res.parameter_checksum = first.checksum;
  res.ranks_reported = static_cast<int64_t>(results.size());
  if (first.checkpoint_round >= 0) res.last_checkpoint_round = first.checkpoint_round;
  p.status.result = res;
  p.cond(condition::kResultReported, true, reason::kRanksReported,
         "final figures from the termination messages of all " + std::to_string(g.size) + " ranks");
  finish(p, true, reason::kAllRanksSucceeded,
         all + ": round " + std::to_string(first.round) + ", eval perplexity " + decimal(first.perplexity, "%.3f"));
  return true;
}

}  // namespace ppu::op::detail::policy
