// Suspend: spec.runPolicy.suspend deletes the rank pods and holds the job in Suspended;
// clearing it resumes the job as a new active period (batch/v1 Job semantics).
#include "kube/rfc3339.h"
#include "reconcile/reconcile_pass.h"

namespace ppu::op::detail::policy {

bool suspend(Pass& p) {
  if (!p.spec.run_policy.suspend) return false;
  p.delete_pods_if([](const json&) { return true; });
  if (p.phase() != JobPhase::Suspended) {
    p.status.phase = JobPhase::Suspended;
    p.status.next_restart_time.reset();
    p.status.recovering_ranks.reset();
    p.cond(condition::kSuspended, true, reason::kSuspended, "spec.runPolicy.suspend is true; rank pods deleted");
    p.cond(condition::kRunning, false, reason::kSuspended, "job is suspended");
    p.event(event_type::kNormal, reason::kSuspended, "job suspended, rank pods deleted");
  }
  return true;
}

void resume(Pass& p) {
  if (p.phase() != JobPhase::Suspended) return;
  // Resuming starts a new active period: the deadline counts from now, like batch/v1 Jobs.
  p.status.phase = JobPhase::Pending;
  p.status.start_time = format_rfc3339(p.in.now);
  p.cond(condition::kSuspended, false, reason::kResumed, "spec.runPolicy.suspend is false");
  p.event(event_type::kNormal, reason::kResumed, "job resumed, recreating rank pods");
}

}  // namespace ppu::op::detail::policy
