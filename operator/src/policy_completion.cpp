// Completion and TTL: how a job ends (Succeeded when every rank succeeded, Failed from the
// other policies) and what happens after: cleanPodPolicy, then ttlSecondsAfterFinished.
#include "reconcile_pass.h"
#include "rfc3339.h"

namespace ppu::op::detail::policy {

void finish(Pass& p, bool succeeded, const std::string& why, const std::string& message) {
  p.status["phase"] = succeeded ? phase::kSucceeded : phase::kFailed;
  p.status["completionTime"] = format_rfc3339(p.in.now);
  p.status.erase("nextRestartTime");
  p.cond(succeeded ? condition::kSucceeded : condition::kFailed, true, why, message);
  p.cond(condition::kRunning, false, why, message);
  if (const json* c = find_condition(p.status, condition::kPodCreationFailed); c && c->value("status", "") == "True")
    p.cond(condition::kPodCreationFailed, false, why, "job finished");
  if (succeeded) {
    p.status.erase("reason");
    p.status.erase("message");
  } else {
    p.status["reason"] = why;
    p.status["message"] = message;
  }
  p.event(succeeded ? event_type::kNormal : event_type::kWarning, why, message);
  // Peers of a failed job would wait for rendezvous forever: remove active pods whatever
  // cleanPodPolicy says (it governs the finished ones, see finished()).
  p.delete_pods_if(pod_active);
  finished(p);
}

void finished(Pass& p) {
  const auto& policy = p.spec.run_policy.clean_pod_policy;
  if (policy == "All") p.delete_pods_if([](const json&) { return true; });
  else if (policy == "Running") p.delete_pods_if(pod_active);
  if (p.spec.run_policy.ttl_seconds_after_finished) {
    auto done = parse_rfc3339(p.status.value("completionTime", std::string()));
    int64_t at = done.value_or(p.in.now) + *p.spec.run_policy.ttl_seconds_after_finished;
    if (at <= p.in.now) p.actions.push_back(Action{ActionKind::DeleteJob, "ppujobs", p.spec.name, {}, "", "", ""});
    else p.requeue_in(static_cast<double>(at - p.in.now));
  }
}

bool completion(Pass& p, const Gang& g) {
  int succeeded = 0;
  for (const auto& [r, pod] : g.by_rank)
    if (pod_phase(*pod) == pod_phase_name::kSucceeded) ++succeeded;
  if (succeeded < g.size) return false;
  finish(p, true, reason::kAllRanksSucceeded, "all " + std::to_string(g.size) + " ranks finished");
  return true;
}

}  // namespace ppu::op::detail::policy
