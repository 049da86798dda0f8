// The words of the PPUJob API the operator writes and reads: status.phase values, condition
// types, event reasons and event types, spec.runPolicy.cleanPodPolicy. docs/OPERATOR.md lists
// them for users; code compares and writes these constants only, never a spelled-out string
// (scripts/check-words.py, ctest lint.words). Kubernetes' own words: kube/kube_words.h.
#pragma once

#include "kube/kube_words.h"

namespace ppu::op {

// status.phase of a PPUJob.
namespace phase {
inline constexpr const char* kPending = "Pending";
inline constexpr const char* kRunning = "Running";
inline constexpr const char* kRestarting = "Restarting";
inline constexpr const char* kSucceeded = "Succeeded";
inline constexpr const char* kFailed = "Failed";
inline constexpr const char* kSuspended = "Suspended";
inline constexpr const char* kAll[] = {kPending, kRunning, kRestarting, kSucceeded, kFailed, kSuspended};
}  // namespace phase

// status.conditions[].type of a PPUJob.
namespace condition {
inline constexpr const char* kCreated = "Created";
inline constexpr const char* kRunning = "Running";
inline constexpr const char* kRestarting = "Restarting";
inline constexpr const char* kSuspended = "Suspended";
inline constexpr const char* kSucceeded = "Succeeded";
inline constexpr const char* kFailed = "Failed";
inline constexpr const char* kPodCreationFailed = "PodCreationFailed";
// True: status.outerRound/perplexity/lastCheckpointRound/result are the ranks' own final results
// (their termination messages); False: a rank succeeded without a readable result.
inline constexpr const char* kResultReported = "ResultReported";
// spec.export of a Succeeded job. True: the model is on the checkpoint volume (status.export says
// where); False while the export Job runs or is refused, or once it failed (reasons below).
inline constexpr const char* kExported = "Exported";
// recovery live only. True while Running with fewer ranks in the live group than replicas, or a
// slice element without a live owner (status.liveRanks, status.minSliceCoverage); False otherwise.
inline constexpr const char* kDegraded = "Degraded";
// Jobs labelled kueue.x-k8s.io/queue-name: True once Kueue admitted the job's Workload (its
// reason says why not: Queued, Evicted, KueueNotEnabled, PriorityClassNotFound).
inline constexpr const char* kAdmitted = "Admitted";
// True while the scheduler has no node for one of the job's pods (a rank or the store; their
// PodScheduled False, reason Unschedulable): the message names them, since when, and the
// scheduler's reason. False (reason Scheduled) once every pod has a node; absent until a pod
// had none.
inline constexpr const char* kPodsUnschedulable = "PodsUnschedulable";
}  // namespace condition

// Reasons: of events, of conditions and of status.reason (the same word where they coincide).
namespace reason {
inline constexpr const char* kCreated = "Created";  // job accepted; refused objects created later
inline constexpr const char* kNothingToCreate = "NothingToCreate";
inline constexpr const char* kGangCreated = "GangCreated";      // event: K rank pods created
inline constexpr const char* kGangRecreated = "GangRecreated";  // condition Restarting -> False
inline constexpr const char* kGangRestart = "GangRestart";
inline constexpr const char* kAllRanksRunning = "AllRanksRunning";
inline constexpr const char* kRunning = "Running";  // event when the job enters Running
inline constexpr const char* kAllRanksSucceeded = "AllRanksSucceeded";
inline constexpr const char* kRanksReported = "RanksReported";  // ResultReported True
inline constexpr const char* kResultMissing = "ResultMissing";  // ResultReported False
inline constexpr const char* kRanksDisagree = "RanksDisagree";  // ranks ended with different parameters
inline constexpr const char* kSuspended = "Suspended";
inline constexpr const char* kResumed = "Resumed";
inline constexpr const char* kDeadlineExceeded = "DeadlineExceeded";
inline constexpr const char* kBackoffLimitExceeded = "BackoffLimitExceeded";
inline constexpr const char* kConfigurationError = "ConfigurationError";            // a rank exited 2
inline constexpr const char* kCheckpointOrDataMissing = "CheckpointOrDataMissing";  // a rank exited 4
inline constexpr const char* kPodCreationFailed = "PodCreationFailed";              // event of a refusal
// PodsUnschedulable True (and its Warning event) / False.
inline constexpr const char* kUnschedulable = "Unschedulable";
inline constexpr const char* kScheduled = "Scheduled";
// recovery live.
// Event: the job's ranks resumed after a stop of the whole job and said what it cost (status.lastStop).
inline constexpr const char* kRoundsLost = "RoundsLost";
inline constexpr const char* kRankRecovery = "RankRecovery";    // event: one rank pod lost, recreated alone
inline constexpr const char* kStoreReplaced = "StoreReplaced";  // event: the store's pod lost, recreated alone
inline constexpr const char* kRecoveryLimitExceeded =
    "RecoveryLimitExceeded";                                            // event: maxRecoveries spent, gang restart
inline constexpr const char* kLiveGroupDegraded = "LiveGroupDegraded";  // Degraded True
inline constexpr const char* kLiveGroupComplete = "LiveGroupComplete";  // Degraded False: all ranks live
inline constexpr const char* kLiveGroupNotReported = "LiveGroupNotReported";  // Degraded False: no figures yet
inline constexpr const char* kNotRunning = "NotRunning";                      // Degraded False: phase not Running
// Event: an elastic job's spec.replicas changed (status.lastResize; docs/RESIZE.md).
inline constexpr const char* kResized = "Resized";
// Events: a lost rank's pod stuck terminating on a NotReady, unreachable or deleted node was
// force-deleted; a rank lost again within the recovery window waits for its back-off.
inline constexpr const char* kPodForceDeleted = "PodForceDeleted";
inline constexpr const char* kRankRecoveryBackoff = "RankRecoveryBackoff";
// The export (condition Exported; the same words as events, ExportStarted an event only).
inline constexpr const char* kExportStarted = "ExportStarted";  // event: the export Job was created
inline constexpr const char* kExportRunning = "ExportRunning";  // Exported False: ppu-export runs
inline constexpr const char* kModelExported = "ModelExported";  // Exported True
inline constexpr const char* kExportFailed = "ExportFailed";    // Exported False, final until the Job is deleted
inline constexpr const char* kExportJobRefused =
    "ExportJobRefused";  // Exported False: creating the Job refused, retried
inline constexpr const char* kExportReasons[] = {kExportRunning, kModelExported, kExportFailed, kExportJobRefused};
// Kueue (condition Admitted; Queued and Evicted are also status.reason while the job waits).
inline constexpr const char* kQueued = "Queued";                    // waiting for Kueue to admit the Workload
inline constexpr const char* kAdmitted = "Admitted";                // Admitted True; event
inline constexpr const char* kEvicted = "Evicted";                  // Kueue evicted it (preempted...): pods removed
inline constexpr const char* kKueueNotEnabled = "KueueNotEnabled";  // queue label, operator without --kueue
inline constexpr const char* kPriorityClassNotFound = "PriorityClassNotFound";
}  // namespace reason

// core/v1 Event.type.
namespace event_type {
inline constexpr const char* kNormal = "Normal";
inline constexpr const char* kWarning = "Warning";
}  // namespace event_type

// spec.runPolicy.cleanPodPolicy: the pods deleted when the job finishes (the CRD's enum).
namespace clean_pod_policy {
inline constexpr const char* kAll = "All";
inline constexpr const char* kRunning = "Running";  // only the pods still running
inline constexpr const char* kNone = "None";
}  // namespace clean_pod_policy

}  // namespace ppu::op
