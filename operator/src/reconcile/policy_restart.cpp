// Restart: a failed or lost rank restarts the whole gang (ranks resume from the latest
// checkpoint) after an exponential back-off, at most backoffLimit times; exit codes 2 and 4
// fail the job at once because a restart cannot fix them (docs/METRICS.md). With recovery live
// only exit code 3 (the survivors gave up the live group) restarts the gang, and the store is
// recreated with it (fresh keys); other losses, the store's included, are policy_recovery.cpp's.
// Either way the old gang's pods stuck on a lost node are force-deleted (node_health.h) rather
// than waited for: the new gang reuses their names, and a node that never returns would hold
// the restart for ever.
#include <cmath>

#include "core/job_contract.h"
#include "kube/rfc3339.h"
#include "reconcile/job_status.h"
#include "reconcile/node_health.h"
#include "reconcile/object_builder.h"
#include "reconcile/reconcile_pass.h"

namespace ppu::op::detail::policy {

namespace {

// The old gang's pods (ranks, and a live job's store) stuck terminating on a lost node are
// force-deleted like a live job's lost rank (node_health.h), with one PodForceDeleted event each,
// so the new gang is not held for ever. A gang job's old rank cannot reach the new gang: it knew
// the store by the old rank 0's address, which left with that pod.
void release_old_gang(Pass& p, const Gang& g) {
  if (!p.in.options.force_delete_on_lost_node) return;
  std::vector<const json*> old;
  for (const auto& [r, pod] : g.terminating_ranks) old.push_back(pod);
  if (g.rendezvous_terminating && p.in.rendezvous_pod) old.push_back(&*p.in.rendezvous_pod);
  for (const json* pod : old) {
    const StuckPod s = stuck_on_lost_node(*pod, p.in.nodes, p.in.now);
    if (s.wait_s >= 0) p.requeue_in(static_cast<double>(s.wait_s));
    if (!s.force_delete) continue;
    p.force_delete_pod(*pod);
    // Said once: the Restarting condition's message keeps the note (a new restart resets it).
    const std::string key = "force-deleted pod " + name_of(*pod) + " from ", note = key + describe(s);
    const Condition* c = p.status.condition(condition::kRestarting);
    if (!c || c->message.find(key) != std::string::npos) continue;
    p.cond(condition::kRestarting, true, c->reason, c->message + "; " + note);
    p.force_deletions++;
    p.event(event_type::kWarning, reason::kPodForceDeleted,
            "pod " + name_of(*pod) + " of the gang being restarted was stuck terminating on " + describe(s) +
                "; force-deleted it (grace period 0) so that the new gang can be created. If the node comes "
                "back, its kubelet kills the old containers; the new gang meets in a new store");
  }
}

}  // namespace

bool restarting(Pass& p, const Gang& g) {
  if (p.phase() != JobPhase::Restarting) return false;
  // Tear-down first; the new gang is created only once every old pod is gone (names repeat).
  if (!g.by_rank.empty() || g.any_terminating || g.rendezvous) {
    for (const auto& [r, pod] : g.by_rank) p.delete_pod(*pod);
    if (g.rendezvous) p.delete_pod(*g.rendezvous);
    release_old_gang(p, g);  // old pods stuck on a lost node
    return true;
  }
  auto not_before = parse_rfc3339(p.status.next_restart_time.value_or(""));
  if (not_before && *not_before > p.in.now) {
    p.requeue_in(static_cast<double>(*not_before - p.in.now));
    return true;
  }
  p.status.phase = JobPhase::Pending;
  p.status.next_restart_time.reset();
  p.cond(condition::kRestarting, false, reason::kGangRecreated,
         "rank pods recreated; ranks resume from the latest checkpoint");
  p.status.recovering_ranks.reset();  // a new gang: no rank is being replaced
  keep_rendezvous(p, g);
  const std::vector<int> slices = shared_slices(p.spec);
  for (int r = 0; r < g.size; ++r) p.create(ResourceKind::Pod, build_pod(p.spec, r, p.restarts(), slices));
  p.event(event_type::kNormal, reason::kGangCreated,
          "created " + std::to_string(g.size) + " rank pods (restart " + std::to_string(p.restarts()) + ")");
  return true;
}

bool fatal_exit(Pass& p, const Gang& g) {
  for (const auto& [r, pod] : g.by_rank) {
    auto fx = ppu::op::fatal_exit(*pod);
    if (!fx) continue;
    std::string why = fx->message.empty() ? "no termination message" : fx->message;
    finish(p, false,
           fx->exit_code == contract::exit_code::kConfigError ? reason::kConfigurationError
                                                              : reason::kCheckpointOrDataMissing,
           "rank " + std::to_string(r) + " exited with code " + std::to_string(fx->exit_code) + ": " + why);
    return true;
  }
  return false;
}

namespace {

// With recovery live, what ends the live group: a rank whose exit restarts the gang even under
// live (contract::on_exit: 3, live recovery gave up; its termination message says why). A lost
// store is replaced without one (policy_recovery.cpp).
std::string live_group_failure(const Gang& g) {
  for (const auto& [r, pod] : g.by_rank)
    if (const auto code = exit_code(*pod);
        pod_lost(*pod) && code && contract::on_exit(*code, /*live=*/true) == contract::OnExit::RestartGang) {
      const std::string why = termination_message(*pod);
      return "rank " + std::to_string(r) + " failed (" + failure_reason(*pod) + ": " +
             (why.empty() ? "too few ranks or slices left for the live group" : why) + ")";
    }
  return "";
}

}  // namespace

bool rank_failure(Pass& p, const Gang& g) {
  std::string failure;
  bool started = false;
  for (const auto& [r, pod] : g.by_rank) {
    auto ph = pod_phase(*pod);
    if (ph == pod_phase_name::kRunning || ph == pod_phase_name::kSucceeded) started = true;
    if (pod_lost(*pod) && failure.empty())
      failure = "rank " + std::to_string(r) + " failed (" + failure_reason(*pod) + ")";
  }
  if (p.spec.recovery == Recovery::Live) failure = live_group_failure(g);
  // A missing rank is a loss only once the gang has started; before that it is a creation that
  // has not happened (or not been observed) yet, and creating it again is harmless.
  else if (failure.empty() && started && static_cast<int>(g.by_rank.size()) < g.size) {
    for (int r = 0; r < g.size; ++r)
      if (!g.by_rank.count(r)) {
        failure = "rank " + std::to_string(r) + " pod disappeared (deleted, evicted or node lost)";
        break;
      }
  }
  if (failure.empty()) return false;
  return restart_gang(p, g, failure);
}

bool restart_gang(Pass& p, const Gang& g, const std::string& failure) {
  const int limit = p.spec.run_policy.backoff_limit;
  if (p.restarts() >= limit) {
    finish(p, false, reason::kBackoffLimitExceeded,
           failure + "; spec.runPolicy.backoffLimit=" + std::to_string(limit) + " restarts exhausted");
    return true;
  }
  const int n = p.restarts() + 1;
  const double wait = restart_backoff(n, p.in.options);
  p.status.restart_count = n;
  p.status.phase = JobPhase::Restarting;
  p.status.next_restart_time = format_rfc3339(p.in.now + static_cast<int64_t>(std::ceil(wait)));
  p.cond(condition::kRestarting, true, reason::kGangRestart, failure);
  p.cond(condition::kRunning, false, reason::kGangRestart, failure);
  p.gang_restart = true;
  p.event(event_type::kWarning, reason::kGangRestart,
          failure + "; restarting all " + std::to_string(g.size) + " ranks (restart " + std::to_string(n) + " of " +
              std::to_string(limit) + ")");
  for (const auto& [r, pod] : g.by_rank) p.delete_pod(*pod);
  if (g.rendezvous) p.delete_pod(*g.rendezvous);
  return true;
}

}  // namespace ppu::op::detail::policy
