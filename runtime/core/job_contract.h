// job_contract: the names and numbers ppu-train, ppu-launch and ppu-operator agree on — exit
// codes, the environment a rank reads, the termination-message file, and the rank metrics the
// operator scrapes. Both sides include this header, so a rename cannot break one of them
// silently; docs/METRICS.md documents the same values and JobContract.* tests check the docs.
// Plain constants only: no LibTorch, no dependencies.
#pragma once

namespace ppu::contract {

// Exit codes of ppu-train (ppu-launch returns the first failing rank's).
namespace exit_code {
inline constexpr int kDone = 0;
inline constexpr int kRuntimeFailure = 1;  // crash or I/O error: the operator restarts the gang
inline constexpr int kConfigError = 2;     // bad key, flag or slicing: the job fails at once
inline constexpr int kPeerFailure = 3;     // a peer died or a collective timed out: gang restart
inline constexpr int kDataError = 4;       // data (or a required checkpoint) missing or unusable: fails at once
// network.recovery=live: this rank is out of the live group (silent past the heartbeat window,
// then resumed; or restarted while the group moved on without it). Restart only this rank: it
// rejoins at the next round boundary or fragment sync point. With recovery gang it is handled like 3.
inline constexpr int kRejoin = 5;
// 128 + the signal (143 for SIGTERM, 130 for SIGINT): the rank acted on a notice and left at a
// round boundary (core/exit_status.h, LeftOnNotice); a supervisor replaces it like any rank that
// is gone (on_exit: not permanent, not 3).
inline constexpr int kNoticeBase = 128;
}  // namespace exit_code

constexpr int left_on_notice(int signal) { return exit_code::kNoticeBase + signal; }

// Whether a rank's exit code means no restart can succeed (the operator marks the job Failed).
constexpr bool exit_is_permanent(int code) { return code == exit_code::kConfigError || code == exit_code::kDataError; }

// What a supervisor does when a rank's process ends with `code`: the one restart decision that
// ppu-launch (locally) and the operator (in a cluster) both take from here. docs/METRICS.md's
// exit-code table states it for users; JobContract.* checks the two agree.
enum class OnExit {
  Finished,     // 0: the rank is done
  FailJob,      // 2, 4: no restart can succeed; the job fails with the rank's message
  RestartRank,  // network.recovery live, every other code but 3 (5 above all; a crash, a kill):
                // only this rank starts again and rejoins the live group
  RestartGang,  // 3 always (a peer failed; under live, live recovery gave up); under gang, any failure
};
constexpr OnExit on_exit(int code, bool live) {
  if (code == exit_code::kDone) return OnExit::Finished;
  if (exit_is_permanent(code)) return OnExit::FailJob;
  if (live && code != exit_code::kPeerFailure) return OnExit::RestartRank;
  return OnExit::RestartGang;
}

// The environment of a rank (set by ppu-launch locally, by the operator's pod template in a cluster).
namespace env {
inline constexpr const char* kRank = "RANK";
inline constexpr const char* kWorldSize = "WORLD_SIZE";
inline constexpr const char* kLocalRank = "LOCAL_RANK";
inline constexpr const char* kMasterAddr = "MASTER_ADDR";
inline constexpr const char* kMasterPort = "MASTER_PORT";
inline constexpr const char* kConfig = "PPU_CONFIG";                       // path of the training YAML
inline constexpr const char* kRunId = "PPU_RUN_ID";                        // the run_id label of every metric
inline constexpr const char* kCheckpointDir = "PPU_CHECKPOINT_DIR";        // overrides checkpoint.dir
inline constexpr const char* kMetricsPort = "PPU_METRICS_PORT";            // overrides metrics.port
inline constexpr const char* kLogPrefixed = "PPU_LOG_PREFIXED";            // ppu-launch prefixes lines itself
inline constexpr const char* kOneDnn = "PPU_ONEDNN";                       // off: no oneDNN (the AVX2-only bf16 path)
inline constexpr const char* kTerminationLogPath = "PPU_TERMINATION_LOG";  // write the message here (ppu-launch, tests)
// "1": the rendezvous store at MASTER_ADDR:MASTER_PORT is served by ppu-rendezvous (ppu-launch's
// child, or the job's rendezvous pod), not by rank 0, so it outlives any rank. Required by
// network.recovery=live; without it rank 0 hosts the store.
inline constexpr const char* kExternalStore = "PPU_EXTERNAL_STORE";
}  // namespace env

// The image's binaries the operator runs: the rank (a pod's default command), the store server every
// rank of a live-recovery job connects to (`ppu-rendezvous --port P`), and the model export.
inline constexpr const char* kTrainBinary = "ppu-train";
inline constexpr const char* kRendezvousBinary = "ppu-rendezvous";
inline constexpr const char* kExportBinary = "ppu-export";
// The rendezvous port: a live job's store is always on it, and it is the default of a gang job's
// masterPort (the operator) and of MASTER_PORT (ppu-train).
inline constexpr int kRendezvousPort = 29500;
// ppu-rendezvous sets this store key, once, to a value no other start of it has: a rank that
// reconnects and reads another value knows the store restarted and lost its keys (LiveGroup then
// rebuilds the live group's state from the ranks, docs/RECOVERY.md).
inline constexpr const char* kStoreIncarnationKey = "ppu/store/incarnation";

// ppu-train writes its last error line here when the file is writable, or on success its result
// (core/run_result.h); the pod template sets it as terminationMessagePath, so the operator can
// quote a failure in the job's Failed condition and set a finished job's status from the results.
inline constexpr const char* kTerminationLog = "/dev/termination-log";
// How the termination message of a rank that retired begins (exit 0 like a finished rank; an
// elastic job shrank past its slot, docs/RESIZE.md): a supervisor that has grown the job back to
// that slot meanwhile starts it again; otherwise the slot stays vacant.
inline constexpr const char* kRetiredMessagePrefix = "retired: ";
constexpr bool is_retired_message(const char* message) {
  for (const char *p = kRetiredMessagePrefix, *m = message; *p; ++p, ++m)
    if (*m != *p) return false;
  return true;
}

// Every metric a rank exports, one line each: M(constant, "name"). rank_metrics.cpp registers
// them (with their help text), the operator scrapes some into job metrics, ppu-contract lists them
// all for Python (the dashboards' generator), docs/METRICS.md documents them. Notes:
//   kStep, kStepsTarget          inner steps completed, configured
//   kRemainingSeconds            seconds to this rank's last step at its measured rate (training
//                                time, evaluations excluded)
//   kLiveRanks, kMinSliceCoverage, kRoundsDegraded   network.recovery=live: every rank reports
//                                the live group's view; the operator takes the smallest live count
//                                and coverage and the largest counters. Coverage is the min over
//                                elements of live/all owners; degraded rounds ran with a rank missing
//   kRoundsLost, kStops          outer rounds the job lost to stops of the whole job over its life,
//                                and how many stops (core/interruptions.h)
//   kLastStopRound, kLastStopResumedRound   the job's last stop: the round it had reached and the
//                                round the run after it resumed from (-1, -1: none recorded)
//   kRecoveries                  groups re-formed without a gang restart
// clang-format off
#define PPU_RANK_METRICS(M)                                                 \
  M(kStateBytes,                 "ppu_state_bytes")                         \
  M(kStateFullTrainingBytes,     "ppu_state_full_training_bytes")           \
  M(kProcessResidentMemoryBytes, "ppu_process_resident_memory_bytes")       \
  M(kCudaMemoryAllocatedBytes,   "ppu_cuda_memory_allocated_bytes")         \
  M(kCudaMemoryReservedBytes,    "ppu_cuda_memory_reserved_bytes")          \
  M(kCudaMemoryPeakBytes,        "ppu_cuda_memory_peak_bytes")              \
  M(kFlopsExecuted,              "ppu_flops_executed_total")                \
  M(kFlopsFullBackward,          "ppu_flops_full_backward_total")           \
  M(kStepFlopsExecuted,          "ppu_step_flops_executed")                 \
  M(kStepFlopsFullBackward,      "ppu_step_flops_full_backward")            \
  M(kLoss,                       "ppu_loss")                                \
  M(kTrainPerplexity,            "ppu_train_perplexity")                    \
  M(kEvalLoss,                   "ppu_eval_loss")                           \
  M(kEvalPerplexity,             "ppu_eval_perplexity")                     \
  M(kEvalPerplexityFloor,        "ppu_eval_perplexity_floor")               \
  M(kTokens,                     "ppu_tokens_total")                        \
  M(kTokensPerSecond,            "ppu_tokens_per_second")                   \
  M(kStep,                       "ppu_step")                                \
  M(kStepsTarget,                "ppu_steps_target")                        \
  M(kRemainingSeconds,           "ppu_remaining_seconds")                   \
  M(kOuterRound,                 "ppu_outer_round")                         \
  M(kOuterSyncBytes,             "ppu_outer_sync_bytes_total")              \
  M(kOuterSyncSeconds,           "ppu_outer_sync_seconds_total")            \
  M(kOuterSyncs,                 "ppu_outer_syncs_total")                   \
  M(kCheckpointRound,            "ppu_checkpoint_round")                    \
  M(kOuterSyncReceivedBytes,     "ppu_outer_sync_received_bytes_total")     \
  M(kNetworkWaitSeconds,         "ppu_network_wait_seconds_total")          \
  M(kLiveRanks,                  "ppu_live_ranks")                          \
  M(kMinSliceCoverage,           "ppu_min_slice_coverage")                  \
  M(kRoundsDegraded,             "ppu_rounds_degraded_total")               \
  M(kRecoveries,                 "ppu_recoveries_total")                    \
  M(kRecoverySeconds,            "ppu_recovery_seconds_total")              \
  M(kThetaMismatches,            "ppu_theta_mismatches_total")              \
  M(kCheckpointFailures,         "ppu_checkpoint_failures_total")           \
  M(kFaults,                     "ppu_faults_total")                        \
  M(kFaultRecoverySeconds,       "ppu_fault_recovery_seconds_total")        \
  M(kRoundsLost,                 "ppu_rounds_lost")                         \
  M(kStops,                      "ppu_stops")                               \
  M(kLastStopRound,              "ppu_last_stop_round")                     \
  M(kLastStopResumedRound,       "ppu_last_stop_resumed_round")             \
  M(kSyncPoints,                 "ppu_sync_points_total")                   \
  M(kSyncPointWaitSeconds,       "ppu_sync_point_wait_seconds_total")       \
  M(kInnerStepsSkipped,          "ppu_inner_steps_skipped_total")           \
  M(kShortContributions,         "ppu_short_contributions_total")           \
  M(kLateWork,                   "ppu_late_work_total")                     \
  M(kQuorumGraceSeconds,         "ppu_quorum_grace_seconds")
// clang-format on
namespace metric {
#define PPU_DECLARE_RANK_METRIC(constant, name) inline constexpr const char* constant = name;
PPU_RANK_METRICS(PPU_DECLARE_RANK_METRIC)
#undef PPU_DECLARE_RANK_METRIC
}  // namespace metric

}  // namespace ppu::contract
