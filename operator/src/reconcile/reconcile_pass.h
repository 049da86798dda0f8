// The inside of reconcile(): one Pass accumulates the decision for one observed state, and the
// policies (one file each) read it and add to it. Each policy is a plain function of the pass:
// it looks at the observed objects and the status written so far, edits status (typed,
// ppujob_status.h), asks for actions (actions.h), and returns true when it settled the pass
// (nothing after it runs). reconciler.cpp calls them in a fixed order; docs/OPERATOR.md
// describes what each one does for users.
#pragma once

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "reconcile/actions.h"
#include "reconcile/job_constants.h"
#include "reconcile/job_spec.h"
#include "reconcile/job_status.h"
#include "reconcile/ppujob_status.h"
#include "reconcile/reconciler.h"

namespace ppu::op::detail {

inline std::string name_of(const json& obj) { return obj["metadata"]["name"].get<std::string>(); }

// Accumulates the decision; status is edited in place and emitted first if it changed.
struct Pass {
  const Observed& in;
  JobSpec spec;
  json observed_status;  // the job's status as read: written back only if `status` differs from it
  PPUJobStatus status;
  std::vector<Action> actions;
  double requeue = -1;
  bool gang_restart = false;
  int force_deletions = 0;    // lost pods force-deleted from their lost node (counted once each)
  int recovery_backoffs = 0;  // replacements that wait for their back-off (counted once each)
  std::set<std::string> deleted;
  // Ranks whose replacement waits for its back-off (policy_recovery.cpp): keep_gang creates none.
  std::set<int> held_ranks;

  explicit Pass(const Observed& o)
      : in(o), spec(parse_job(o.job)), observed_status(o.job.value("status", json::object())) {
    status = observed_status.get<PPUJobStatus>();
  }

  std::optional<JobPhase> phase() const { return status.phase; }
  int restarts() const { return static_cast<int>(status.restart_count.value_or(0)); }

  void requeue_in(double s) {
    s = std::max(s, 0.0);
    if (requeue < 0 || s < requeue) requeue = s;
  }
  void event(const std::string& type, const std::string& why, const std::string& msg) {
    actions.emplace_back(RecordEvent{/*type=*/type, /*reason=*/why, /*message=*/msg});
  }
  void create(ResourceKind kind, json obj) {
    std::string name = name_of(obj);
    actions.emplace_back(CreateObject{kind, std::move(name), std::move(obj)});
  }
  void patch(ResourceKind kind, const std::string& name, json body) {
    actions.emplace_back(PatchObject{kind, name, std::move(body)});
  }
  // Deletes exactly the incarnation observed (uid precondition).
  void delete_object(ResourceKind kind, const json& obj) {
    const json& md = obj["metadata"];
    actions.emplace_back(DeleteObject{kind, name_of(obj), md.value("uid", std::string())});
  }
  // Deletes exactly the incarnation observed (uid precondition), once per pass, never a
  // pod already terminating.
  void delete_pod(const json& pod) {
    if (pod_terminating(pod)) return;
    if (!deleted.insert(name_of(pod)).second) return;
    delete_object(ResourceKind::Pod, pod);
  }
  // Force-deletes a terminating pod: grace period 0, uid precondition (node_health.h says when).
  void force_delete_pod(const json& pod) {
    if (!deleted.insert(name_of(pod)).second) return;
    actions.emplace_back(DeleteObject{ResourceKind::Pod, name_of(pod), pod["metadata"].value("uid", std::string()), 0});
  }
  // Every pod of the job, the rendezvous store's included.
  template <class Pred>
  void delete_pods_if(Pred pred) {
    for (const auto& p : in.pods)
      if (pred(p)) delete_pod(p);
    if (in.rendezvous_pod && pred(*in.rendezvous_pod)) delete_pod(*in.rendezvous_pod);
  }
  void cond(const std::string& type, bool on, const std::string& why, const std::string& msg) {
    status.set_condition(type, on ? condition_status::kTrue : condition_status::kFalse, why, msg, in.now,
                         spec.generation);
  }
  bool creates_anything() const {
    for (const auto& a : actions)
      if (std::holds_alternative<CreateObject>(a)) return true;
    return false;
  }

  // Status (if changed) first, then the actions in the order asked for.
  Decision result();
};

// A pod that has not finished: Pending, Running, or Unknown (its node stopped reporting).
inline bool pod_active(const json& p) {
  const auto ph = pod_phase(p);
  return ph == pod_phase_name::kPending || ph == pod_phase_name::kRunning || ph == pod_phase_name::kUnknown;
}

// A pod that failed or was lost: Failed, or Unknown (its node stopped reporting).
inline bool pod_lost(const json& p) {
  const auto ph = pod_phase(p);
  return ph == pod_phase_name::kFailed || ph == pod_phase_name::kUnknown;
}

// The K rank pods as the policies see them: rank -> pod, terminating pods set aside; with recovery
// live also the rendezvous store's pod.
struct Gang {
  int size = 0;  // K = spec.replicas
  // An elastic job shrunk below them: ranks of vacant slots whose pods still run. Each retires
  // at the job's next round boundary (exit 0, its pod Succeeded) and is deleted then; deleting
  // it now would be a notice to the rank instead (docs/RESIZE.md).
  std::map<int, const json*> retiring;
  std::map<int, const json*> by_rank;
  // rank -> its pod, terminating (its name is not free yet)
  std::map<int, const json*> terminating_ranks;
  bool any_terminating = false;      // a rank's or the store's pod is terminating
  const json* rendezvous = nullptr;  // the store's pod, when not terminating (recovery live)
  bool rendezvous_terminating = false;
};
// Also asks to delete every pod that is not one of the K ranks (e.g. left from a larger replicas),
// except an elastic job's running ranks of vacant slots (Gang::retiring), and the rendezvous pod of
// a job whose recovery is gang.
Gang observe_gang(Pass& p);

namespace policy {

// Completion and TTL (policy_completion.cpp).
// Enters Succeeded or Failed: completion time, conditions, event, active pods removed, then finished().
void finish(Pass& p, bool succeeded, const std::string& why, const std::string& message);
// In Succeeded/Failed: cleanPodPolicy (All | Running | None), the export (export_model), then
// ttlSecondsAfterFinished deletes the job (or requeues for when it is due) once no export is pending.
void finished(Pass& p);

// Export (policy_export.cpp).
// Succeeded with spec.export: the export Job is created once and followed; condition Exported and
// status.export report it. Never changes the phase.
void export_model(Pass& p);
// An export is asked for and has not ended (neither ModelExported nor ExportFailed): TTL waits.
bool export_pending(const Pass& p);
// All K ranks Succeeded => the job Succeeded.
bool completion(Pass& p, const Gang& g);

// Suspend (policy_suspend.cpp).
// spec.runPolicy.suspend => every pod deleted, phase Suspended (once); true while suspended.
bool suspend(Pass& p);
// Phase Suspended and suspend now false => Pending; the active deadline counts from now.
void resume(Pass& p);

// Deadline (policy_deadline.cpp).
// activeDeadlineSeconds since status.startTime passed => Failed (DeadlineExceeded); otherwise
// a requeue at the deadline.
bool deadline(Pass& p);

// Restart (policy_restart.cpp).
// Phase Restarting: old pods are deleted (a live job's stuck on a lost node force-deleted,
// node_health.h); once all are gone and nextRestartTime has passed, a new gang is created
// (phase Pending). Always settles the pass while Restarting.
bool restarting(Pass& p, const Gang& g);
// A rank exited 2 (configuration) or 4 (checkpoint or data missing) => Failed at once.
bool fatal_exit(Pass& p, const Gang& g);
// A rank failed or vanished after the gang started => gang restart with back-off, or Failed
// once restartCount reached backoffLimit. With recovery live only what the live group cannot
// survive: a rank that exited 3 (its peers fell back to a gang restart), or the store's pod lost.
bool rank_failure(Pass& p, const Gang& g);
// The gang restart itself, for `failure` (the Restarting condition's message): back-off, restart
// count, every pod (a live job's store too) deleted; Failed (BackoffLimitExceeded) once
// restartCount reached backoffLimit. Always true.
bool restart_gang(Pass& p, const Gang& g, const std::string& failure);

// Kueue (policy_queue.cpp), jobs labelled kueue.x-k8s.io/queue-name only.
// Creates the job's Workload (its priority from the class the label names). Until Kueue admits
// it, and after Kueue evicts it (preemption), the job holds no pod: every pod is deleted, then
// an evicted Workload's quota is released; phase Pending, condition Admitted False and
// status.reason/message say why (Queued with Kueue's message, Evicted, KueueNotEnabled,
// PriorityClassNotFound). No restart is counted and the deadline counts from admission. A
// Workload admitted for another replicas is replaced. True while the job may not run.
bool admission(Pass& p, const Gang& g);
// Suspended: the Workload is deleted (its quota freed; resuming queues the job again).
// Succeeded/Failed: the Workload is marked Finished, which frees its quota.
void release_workload(Pass& p);

// Live recovery (policy_recovery.cpp), recovery live only.
// A rank pod lost for any other reason (exit 5, 1, a signal; Unknown; deleted or gone with its
// node) is deleted if still there and recreated alone by the pass's missing ranks (same name and
// rank): status.recoveries + 1, once per lost pod (status.recoveringRanks). Past
// spec.runPolicy.maxRecoveries loss events within recoveryWindowSeconds (recovery_pacing.h: the
// pods one node takes with it are one event) the job falls back to a gang restart from its
// latest checkpoint (event RecoveryLimitExceeded; restart_gang, so backoffLimit bounds it). A
// rank lost again within the window is held (Pass::held_ranks) until its back-off has passed,
// with a requeue for then. A rank pod stuck terminating on a lost node is force-deleted
// (node_health.h) and counted as lost. True only when it restarted or failed the job.
bool live_recovery(Pass& p, const Gang& g);
// Creates the store's pod when there is none (before any rank, so a refusal stops the ranks too).
void keep_rendezvous(Pass& p, const Gang& g);
// An elastic job's store pod carries the desired size (kDesiredRanksAnnotation) once the observed
// ConfigMap has it: patching the pod is what makes its kubelet refresh the volume the store reads
// the size from now rather than within a minute. Level-triggered: one patch per change.
void keep_store_size(Pass& p, const Gang& g);
// Condition PodsUnschedulable from the pods the scheduler has no node for (policy_scheduling.cpp),
// with a Warning event when it turns True; the pods this pass deletes are left out.
void unschedulable(Pass& p);
// Condition Degraded from status.liveRanks / minSliceCoverage and the phase (after the policies).
void degraded(Pass& p);
// spec.elastic: status.desiredReplicas follows spec.replicas; a change is a resize (event
// Resized, status.lastResize). Without it, desiredReplicas is unset.
void resized(Pass& p);

}  // namespace policy
}  // namespace ppu::op::detail
