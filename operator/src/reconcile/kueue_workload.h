// The Kueue Workload of a queued PPUJob, built and read as plain values (no I/O). A job labelled
// kueue.x-k8s.io/queue-name is one Workload (kueue.x-k8s.io/v1beta2) named ppujob-<job>, owned
// by the job: pod set `ranks` (K copies of the rank pod's spec) and, with recovery live,
// `rendezvous` (the store's pod), so that Kueue reserves quota for the whole gang at once.
// Kueue admits or evicts it; the operator, in the role Kueue's job integrations play for the
// kinds Kueue knows, releases the quota after an eviction once the pods are gone and marks the
// Workload Finished when the job ends (policy_queue.cpp, docs/OPERATOR.md "Queueing with Kueue").
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "reconcile/job_spec.h"

namespace ppu::op {

std::string workload_name(const JobSpec& j);  // ppujob-<job>

// The Workload to create: queueName from the label; with a priority class, its reference and
// `priority` (its value: Kueue's CEL requires both, and only its job integrations fill it). Pod
// set `ranks` counts the job's slots: an elastic job asks for the quota of its maxReplicas, the
// most it can grow to, so that a resize within its range needs no new admission (Kueue's elastic
// workload slices are not used yet; docs/RESIZE.md).
json build_workload(const JobSpec& j, std::optional<int64_t> priority);

// A Workload's state as Kueue set it.
struct WorkloadState {
  bool reserved = false;       // QuotaReserved True: quota is held (Kueue admitted, or evicted and not yet released)
  bool admitted = false;       // Admitted True
  bool evicted = false;        // Evicted True: the pods must go, then the quota is given back
  bool finished = false;       // Finished True: quota released for good
  std::string why;             // the message of Evicted (evicted), else of QuotaReserved False (waiting)
  std::string evicted_reason;  // Preempted, PodsReadyTimeout, ClusterQueueStopped, ...
  std::string cluster_queue;   // status.admission.clusterQueue once admitted
  int64_t ranks = -1;          // count of pod set `ranks`; -1 when absent
};
WorkloadState read_workload(const json& workload);

// /status merge patches, guarded by the Workload's resourceVersion (a concurrent change by Kueue
// makes the server refuse them and the next pass reads its new state).
// After an eviction, once the job's pods are gone: no admission, QuotaReserved and Admitted
// False, Requeued True when Kueue will admit it again by itself (preempted, node failures).
json release_quota_patch(const json& workload, int64_t now);
// The job ended: Finished True (reason Succeeded or Failed), so Kueue frees its quota.
json finished_patch(const json& workload, bool succeeded, const std::string& message, int64_t now);

}  // namespace ppu::op
