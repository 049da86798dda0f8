// Kueue: a job labelled kueue.x-k8s.io/queue-name runs only while Kueue admits its Workload
// (kueue_workload.h). Waiting is not failing: no restart is counted, the deadline does not run,
// and the reason the job waits is in its status.
#include "reconcile/kueue_workload.h"
#include "reconcile/reconcile_pass.h"

namespace ppu::op::detail::policy {

namespace {

bool any_pod_left(const Gang& g) { return !g.by_rank.empty() || g.rendezvous || g.any_terminating; }

// The job may not run now: no pod of it stays, the active period (and its deadline) starts again
// at admission, and the status says why (condition Admitted False, reason and message).
void hold(Pass& p, const std::string& why, const std::string& message) {
  p.delete_pods_if([](const json&) { return true; });
  p.status.start_time.reset();
  p.status.next_restart_time.reset();
  p.status.recovering_ranks.reset();
  const Condition* c = p.status.condition(condition::kAdmitted);
  const bool news = !c || c->reason != why || c->message != message;
  p.cond(condition::kAdmitted, false, why, message);
  p.status.reason = why;
  p.status.message = message;
  if (p.phase() == JobPhase::Running || p.phase() == JobPhase::Restarting) {
    p.status.phase = JobPhase::Pending;
    p.cond(condition::kRunning, false, why, message);
  }
  if (news) p.event(why == reason::kQueued ? event_type::kNormal : event_type::kWarning, why, message);
}

}  // namespace

bool admission(Pass& p, const Gang& g) {
  if (p.spec.queue_name.empty()) {
    // Not (or no longer) queued: a Workload left from the label gives its quota back.
    if (p.in.workload) p.delete_object(ResourceKind::Workload, *p.in.workload);
    return false;
  }
  if (!p.in.options.kueue) {
    hold(p, reason::kKueueNotEnabled,
         "label " + std::string(kQueueNameLabel) + " is set but ppu-operator runs without --kueue (Helm value " +
             "kueue.enabled): the job waits rather than bypass the queue");
    return true;
  }
  if (!p.in.workload) {
    if (!p.spec.priority_class.empty() && !p.in.priority_value) {
      hold(p, reason::kPriorityClassNotFound,
           "label " + std::string(kPriorityClassLabel) + " names WorkloadPriorityClass '" + p.spec.priority_class +
               "', which does not exist");
      return true;
    }
    p.create(ResourceKind::Workload, build_workload(p.spec, p.in.priority_value));
    hold(p, reason::kQueued,
         "waiting for Kueue to admit Workload " + workload_name(p.spec) + " (LocalQueue " + p.spec.queue_name + ")");
    return true;
  }
  const WorkloadState w = read_workload(*p.in.workload);
  if (w.evicted) {
    // Pods first, quota after: Kueue admits whoever waits for it as soon as it is released.
    hold(p, reason::kEvicted,
         "Kueue evicted the job (" + w.evicted_reason + "): " + w.why + "; it resumes from its last checkpoint " +
             "when admitted again");
    if (w.reserved && !any_pod_left(g) && p.deleted.empty())
      p.actions.emplace_back(
          PatchStatusOf{ResourceKind::Workload, workload_name(p.spec), release_quota_patch(*p.in.workload, p.in.now)});
    return true;
  }
  if (!w.admitted) {
    hold(p, reason::kQueued,
         "waiting for Kueue (LocalQueue " + p.spec.queue_name + ")" + (w.why.empty() ? "" : ": " + w.why));
    return true;
  }
  if (w.ranks >= 0 && w.ranks != slots(p.spec)) {
    // Admitted for another size (replicas changed while suspended and queued again): the quota
    // held is not this gang's. A new Workload asks for the right one.
    p.delete_object(ResourceKind::Workload, *p.in.workload);
    hold(p, reason::kQueued, "Workload " + workload_name(p.spec) + " was for another replicas: queued again");
    return true;
  }
  const Condition* c = p.status.condition(condition::kAdmitted);
  if (!c || !c->is_true()) {
    const std::string message = "admitted by Kueue (ClusterQueue " + w.cluster_queue + ")";
    p.cond(condition::kAdmitted, true, reason::kAdmitted, message);
    p.event(event_type::kNormal, reason::kAdmitted, message);
    const std::string was = p.status.reason.value_or("");
    if (was == reason::kQueued || was == reason::kEvicted || was == reason::kKueueNotEnabled ||
        was == reason::kPriorityClassNotFound) {
      p.status.reason.reset();
      p.status.message.reset();
    }
  }
  return false;
}

void release_workload(Pass& p) {
  if (!p.in.workload) return;
  if (p.phase() == JobPhase::Succeeded || p.phase() == JobPhase::Failed) {
    if (read_workload(*p.in.workload).finished) return;
    const bool ok = p.phase() == JobPhase::Succeeded;
    const Condition* c = p.status.condition(ok ? condition::kSucceeded : condition::kFailed);
    p.actions.emplace_back(PatchStatusOf{ResourceKind::Workload, workload_name(p.spec),
                                         finished_patch(*p.in.workload, ok, c ? c->message : "", p.in.now)});
    return;
  }
  // Suspended: the quota goes back at once; resuming queues the job again.
  p.delete_object(ResourceKind::Workload, *p.in.workload);
}

}  // namespace ppu::op::detail::policy
