// Kubernetes' own words that the operator reads and writes, as named constants: pod phases,
// condition statuses, the condition types it reads on pods, nodes and batch/v1 Jobs, and the
// condition types and reasons of Kueue's Workload. The PPUJob API's own words live in
// reconcile/job_constants.h. Code compares and writes these constants only, never the spelled-out
// string (scripts/check-words.py, ctest lint.words, holds every operator source to it).
#pragma once

namespace ppu::op {

// core/v1 Pod status.phase.
namespace pod_phase_name {
inline constexpr const char* kPending = "Pending";
inline constexpr const char* kRunning = "Running";
inline constexpr const char* kSucceeded = "Succeeded";
inline constexpr const char* kFailed = "Failed";
inline constexpr const char* kUnknown = "Unknown";
}  // namespace pod_phase_name

// status.conditions[].status of every Kubernetes object (metav1.ConditionStatus).
namespace condition_status {
inline constexpr const char* kTrue = "True";
inline constexpr const char* kFalse = "False";
inline constexpr const char* kUnknown = "Unknown";
}  // namespace condition_status

// Condition types of other kinds' objects that the operator reads or sets.
namespace kube_condition {
inline constexpr const char* kReady = "Ready";                        // Pod, Node
inline constexpr const char* kDisruptionTarget = "DisruptionTarget";  // Pod: evicted, preempted, drained
inline constexpr const char* kJobComplete = "Complete";               // batch/v1 Job
inline constexpr const char* kJobFailed = "Failed";                   // batch/v1 Job
inline constexpr const char* kPodScheduled = "PodScheduled";          // Pod: bound to a node
}  // namespace kube_condition
// PodScheduled False's reason when the scheduler found no node that fits the pod.
inline constexpr const char* kUnschedulableReason = "Unschedulable";

// core/v1 Service spec.clusterIP of a headless Service (DNS names resolve to the pods' own IPs).
inline constexpr const char* kHeadlessClusterIP = "None";

// Kueue's Workload (kueue.x-k8s.io/v1beta2): condition types, and the reasons the operator reads
// or writes on them.
namespace kueue_word {
inline constexpr const char* kQuotaReserved = "QuotaReserved";
inline constexpr const char* kAdmitted = "Admitted";
inline constexpr const char* kEvicted = "Evicted";
inline constexpr const char* kFinished = "Finished";
inline constexpr const char* kRequeued = "Requeued";
inline constexpr const char* kPending = "Pending";              // QuotaReserved False
inline constexpr const char* kNoReservation = "NoReservation";  // Admitted False
inline constexpr const char* kPreempted = "Preempted";          // Evicted: Kueue re-queues it
inline constexpr const char* kNodeFailures = "NodeFailures";    // Evicted: Kueue re-queues it
inline constexpr const char* kSucceeded = "Succeeded";          // Finished True
inline constexpr const char* kFailed = "Failed";                // Finished True
}  // namespace kueue_word

}  // namespace ppu::op
