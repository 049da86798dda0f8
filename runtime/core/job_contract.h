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
// rejoins at a round boundary. With recovery gang it is handled like 3.
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
inline constexpr const char* kTerminationLogPath = "PPU_TERMINATION_LOG";  // tests: write the message here
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

// Rank metrics the operator aggregates into job metrics (the full list: docs/METRICS.md).
namespace metric {
inline constexpr const char* kStateBytes = "ppu_state_bytes";
inline constexpr const char* kFlopsExecuted = "ppu_flops_executed_total";
inline constexpr const char* kFlopsFullBackward = "ppu_flops_full_backward_total";
inline constexpr const char* kEvalPerplexity = "ppu_eval_perplexity";
inline constexpr const char* kLoss = "ppu_loss";
inline constexpr const char* kTokensPerSecond = "ppu_tokens_per_second";
inline constexpr const char* kOuterRound = "ppu_outer_round";
inline constexpr const char* kCheckpointRound = "ppu_checkpoint_round";
inline constexpr const char* kStep = "ppu_step";                 // inner steps completed
inline constexpr const char* kStepsTarget = "ppu_steps_target";  // inner steps configured
// Seconds to this rank's last step at its measured rate (training time, evaluations excluded).
inline constexpr const char* kRemainingSeconds = "ppu_remaining_seconds";
// network.recovery=live (every rank reports the live group's view; the operator takes the
// smallest live count and coverage and the largest counters).
inline constexpr const char* kLiveRanks = "ppu_live_ranks";                  // ranks in the current group
inline constexpr const char* kMinSliceCoverage = "ppu_min_slice_coverage";   // min over elements of live/all owners
inline constexpr const char* kRoundsDegraded = "ppu_rounds_degraded_total";  // rounds run with a rank missing
// Outer rounds the job lost to stops of the whole job over its life (core/interruptions.h).
inline constexpr const char* kRoundsLost = "ppu_rounds_lost";
// Stops of the whole job over its life (each one a run that resumed after it).
inline constexpr const char* kStops = "ppu_stops";
// The job's last stop: the round it had reached and the round the run after it resumed from
// (-1, -1: none recorded).
inline constexpr const char* kLastStopRound = "ppu_last_stop_round";
inline constexpr const char* kLastStopResumedRound = "ppu_last_stop_resumed_round";
inline constexpr const char* kRecoveries = "ppu_recoveries_total";  // groups re-formed without a gang restart
}  // namespace metric

}  // namespace ppu::contract
