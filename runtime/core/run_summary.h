// RunSummary: what one rank reports at the end of a run, written by `ppu-train --summary FILE` as
// JSON and read by ppu-launch's callers, the benches and the tests. Its fields are listed once,
// below (name, type, one-line doc); docs/RUN_SUMMARY.md is rendered from the same list by
// ppu-schema, and to_json writes exactly these keys (an optional field only when it is set).
// Adding a field is one FIELD(...) line, then `ninja -C build generate-schema`.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/run_result.h"

namespace ppu {

struct SlicingSummary {
  std::string mode;  // slicing.mode in effect
  int slices = 1;    // N in effect
  std::string jacobian;
};

// Bytes of per-rank training state by component (the paper's Table 1 columns).
struct StateBytesSummary {
  double weights = 0, gradients = 0, inner_optimizer = 0, outer_optimizer = 0, offloaded = 0, total = 0;
};

struct CudaMemorySummary {
  double allocated = 0, reserved = 0, peak = 0;
};

// Median seconds per inner step of each phase, after the first steps.
struct StepPhasesSummary {
  double batch = 0, forward = 0, backward = 0, gradient_allreduce = 0, optimizer = 0;
};

struct OneDnnSummary {
  bool enabled = false, bf16_matmul = false;
};

// Consecutive outer rounds [first_round, last_round] that this rank finished with the same job
// ranks missing from its group.
struct DegradedSpan {
  int64_t first_round = 0, last_round = 0;
  std::vector<int> missing;
};

// An elastic job's size from a round on (network.min_ranks, docs/RESIZE.md): the members this
// rank's group had and the desired size agreed at that round's boundary.
struct SizeChange {
  int64_t round = 0;
  int ranks = 0;
  int desired = 0;
};

// Faults of one kind this rank saw and recovered from, and the seconds from each fault's
// detection until the group had re-formed (docs/RECOVERY.md lists the kinds).
struct FaultTally {
  int64_t count = 0;
  double recover_seconds = 0;
};

// One notice or loss and what it cost in outer rounds (core/interruptions.h): a stop of the whole
// job (kind notice, fallback, restart; ranks empty) or ranks the live group trained on without
// (kind: the fault's, or preempted).
struct Interruption {
  int64_t round = 0;            // the round the job had reached
  std::string kind;             // notice, fallback, restart; or killed, stopped, hung, unreachable, lost, preempted
  std::vector<int> ranks;       // the ranks lost or let go (a live interruption)
  int64_t resumed_round = 0;    // the round training went on from
  int64_t rounds_lost = 0;      // round - resumed_round
  int64_t rounds_degraded = 0;  // rounds finished while any of `ranks` was missing
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Interruption, round, kind, ranks, resumed_round, rounds_lost, rounds_degraded)

// The rendezvous store requests of this rank's failure detection and live group: what the
// heartbeat and re-formation cost the store (O(K) for the job, docs/RECOVERY.md).
struct StoreRequestCount {
  int64_t heartbeat = 0;  // beats on the board and this member's account
  int64_t group = 0;      // LiveGroup: agreements, re-formations, join requests, abort probes
};

// network.recovery=live (the defaults for gang runs: all ranks live, nothing recovered).
struct RecoverySummary {
  std::string policy = "gang";         // network.recovery
  int live_ranks = 0;                  // ranks in the final group
  double min_slice_coverage = 1;       // smallest live/all owners over elements, in the final group
  int64_t rounds_degraded = 0;         // rounds this rank finished with a rank missing
  int64_t recoveries = 0;              // groups this rank re-formed in place after losing ranks
  int64_t rejoins = 0;                 // groups this rank re-formed to take replacements back
  double recovery_seconds = 0;         // wall time those re-formations took (agreeing, forming, state)
  int64_t rejoined_at_step = -1;       // a replacement: the step it rejoined at; -1: started with the job
  int64_t theta_mismatches = 0;        // ranks found with another θ than the others before a sync (repaired)
  int64_t checkpoints_failed = 0;      // checkpoint rounds that could not be written (a full disk); training went on
  std::vector<DegradedSpan> degraded;  // which rounds ran degraded, and without which ranks
  std::map<std::string, FaultTally> faults;  // by kind: killed, stopped, hung, unreachable, lost, preempted, store
  std::string fallback;                      // this run is the gang restart live recovery fell back to: why; else ""
  int64_t resumed_after_notice = -1;  // resumed from the checkpoint a notice saved: its round (none lost); -1: not
  StoreRequestCount store_requests;   // any policy with a heartbeat
  std::vector<Interruption> interruptions;  // the job's stops (from the checkpoint directory) and this run's losses
  int64_t rounds_lost = 0;                  // the job's, over every stop of the whole job so far
  int64_t stops = 0;                        // stops of the whole job so far
  std::vector<SizeChange> size_history;     // an elastic job: its members and desired size, round by round
};

// One job rank's part in the outer steps as quorum sync weighed them (outer.sync_mode quorum).
struct ContributionSummary {
  int rank = 0;
  double tokens = 0;  // tokens it had trained at the last sync point this rank saw it at
  double share = 0;   // its weights over the weights of its slice's owners, summed over outer steps
};

// How this rank met the others at its sync points (outer.sync_mode; docs/QUORUM_SYNC.md).
struct OuterSyncSummary {
  std::string mode = "all";                // outer.sync_mode
  int64_t sync_points = 0;                 // sync points this rank passed (quorum)
  int64_t closed_by_grace = 0;             // of which closed before every member arrived
  int64_t steps_skipped = 0;               // inner steps this rank skipped to reach a closed sync point
  int64_t steps_skipped_ahead = 0;         // of which skipped before the close, predicted to end after it
  int64_t short_contributions = 0;         // outer steps its delta entered with a weight below 1
  int64_t uncovered = 0;                   // fragment outer steps with a slice whose owners all weighed 0
  int64_t sat_out = 0;                     // sync points this rank sat out (outer.quorum_sit_out)
  int64_t late_merged = 0;                 // fragments it rejoined with its work of the outer steps it sat out merged
  int64_t late_dropped = 0;                // ... and with that work dropped (outer.quorum_late_work)
  int64_t fenced_at_gate = 0;              // members it fenced at a close: not arrived, process not answering
  double wait_seconds = 0;                 // seconds it waited at sync points for the close
  double max_wait_seconds = 0;             // the longest such wait
  double grace_seconds = 0;                // the grace window at the end
  std::vector<ContributionSummary> ranks;  // every job rank seen, ascending
};

// How this rank's checkpoints were written (checkpoint.upload; docs/OBJECT_STORAGE.md).
struct CheckpointWriteSummary {
  std::string upload = "inline";  // inline or background, as checkpoint.upload resolved
  int64_t rounds = 0;             // rounds whose parts this rank wrote
  int64_t skipped = 0;            // background: rounds not handed over (a member had max_in_flight in flight)
  double bytes = 0;               // bytes this rank wrote for them
  double write_seconds = 0;       // seconds writing them (background: on the upload thread)
  // Seconds the training thread spent on them while training went on (background: copying the
  // state, handing it over, waiting for room), and at its end: the checkpoint that ends training
  // (the last round's, a notice's) and the wait for the uploads still in flight.
  double training_wait_seconds = 0;
  double end_wait_seconds = 0;
};

struct BlasSummary {
  std::string library, variant;
  int threads = 0, intra_op_threads = 0;
  std::string libtorch, torch_blas;
  std::string core, core_detected, core_source, core_env;  // OpenBLAS's kernels and who chose them
  std::string cpu_vectors;                                 // avx512, avx2 or older
  bool cpu_avx512 = false;
};

// What decides a CPU run's floating-point results besides its config and seed: runs that agree
// on openblas_core, aten_capability and onednn compute the same bits on any CPU that runs them
// (bench/study pins one such path; report.py pairs runs only on equal paths).
struct KernelPathSummary {
  std::string cpu_model;        // /proc/cpuinfo's model name
  std::string openblas_core;    // OpenBLAS's kernels ("" when the BLAS is not OpenBLAS)
  std::string aten_capability;  // ATen's CPU kernels: default, avx2 or avx512 (ATEN_CPU_CAPABILITY caps it)
  bool onednn = false;          // LibTorch may send ops to oneDNN
};

// clang-format off
#define PPU_RUN_SUMMARY_FIELDS(FIELD) \
  FIELD(rank,                       int,                              "this rank's index") \
  FIELD(world_size,                 int,                              "K, the ranks of the run") \
  FIELD(method,                     std::string,                      "the config's method") \
  FIELD(slicing,                    SlicingSummary,                   "{mode, slices, jacobian} in effect (slices is 1 for methods that do not slice)") \
  FIELD(steps,                      int64_t,                          "inner steps trained") \
  FIELD(final_loss,                 double,                           "training loss of the last inner step (nats/token)") \
  FIELD(eval_loss,                  double,                           "eval loss of the final global parameters (nats/token)") \
  FIELD(eval_perplexity,            double,                           "exp(eval_loss)") \
  FIELD(eval_perplexity_floor,      std::optional<double>,            "synthetic corpus only: the perplexity of its true distribution") \
  FIELD(tokens,                     double,                           "tokens this rank trained on") \
  FIELD(flops_executed,             double,                           "matmul FLOPs this rank executed") \
  FIELD(flops_full_backward,        double,                           "the same steps' FLOPs with a full backward pass") \
  FIELD(flops_saved_fraction,       double,                           "1 - flops_executed / flops_full_backward") \
  FIELD(state_bytes,                StateBytesSummary,                "training state measured on this rank: {weights, gradients, inner_optimizer, outer_optimizer, offloaded, total}") \
  FIELD(state_bytes_full_training,  StateBytesSummary,                "the same with every parameter trainable (the Streaming DiLoCo baseline)") \
  FIELD(trainable_params,           int64_t,                          "parameters this rank trains") \
  FIELD(total_params,               int64_t,                          "parameters of the model") \
  FIELD(outer_rounds,               int64_t,                          "outer rounds completed") \
  FIELD(last_checkpoint_round,      int64_t,                          "the last checkpoint written or resumed from; -1: none") \
  FIELD(bytes_sent,                 double,                           "bytes this rank sent in collectives") \
  FIELD(bytes_received,             double,                           "bytes this rank received in collectives") \
  FIELD(bytes_allreduced,           double,                           "the same as bytes_sent (an older name, kept for readers of it)") \
  FIELD(network_wait_seconds,       double,                           "seconds spent waiting on collectives") \
  FIELD(sync_seconds,               double,                           "seconds spent in outer synchronisation") \
  FIELD(param_checksum,             std::string,                      "hex digest of the final global parameters; equal on every rank") \
  FIELD(seconds,                    double,                           "wall time of the run") \
  FIELD(eval_seconds,               double,                           "seconds of evaluation (not training time)") \
  FIELD(eval_batches_evaluated,     int64_t,                          "eval batches this rank computed (its share of every evaluation)") \
  FIELD(eval_tokens,                uint64_t,                         "tokens in one evaluation") \
  FIELD(val_tokens,                 uint64_t,                         "tokens in the validation split") \
  FIELD(data_sampling,              std::string,                      "data.sampling in effect") \
  FIELD(eval_parameters,            std::string,                      "which parameters were evaluated: always global") \
  FIELD(final_sync,                 std::string,                      "outer.final_sync in effect (none for ddp)") \
  FIELD(step_seconds,               double,                           "mean seconds per inner step") \
  FIELD(inner_step_seconds_median,  double,                           "median seconds per inner step after the first ones") \
  FIELD(inner_step_phases_median,   StepPhasesSummary,                "median seconds per phase: {batch, forward, backward, gradient_allreduce, optimizer}") \
  FIELD(device,                     std::optional<std::string>,       "CUDA runs only: the device, e.g. cuda:0") \
  FIELD(cuda_memory_bytes,          std::optional<CudaMemorySummary>, "CUDA runs only: {allocated, reserved, peak} bytes at the end; peak since the process started") \
  FIELD(recovery,                   RecoverySummary,                  "live recovery: {policy, live_ranks, min_slice_coverage, rounds_degraded, recoveries, rejoins, recovery_seconds, rejoined_at_step, theta_mismatches, checkpoints_failed, degraded, faults, fallback, resumed_after_notice, store_requests, interruptions, rounds_lost, stops, size_history}; size_history (an elastic job, network.min_ranks > 0): [{round, ranks, desired}], an entry from the first round on and at each round boundary where this rank's group had other members or the job another desired size than at the last entry (resizes, losses, rejoins); interruptions (any policy with a checkpoint.dir; live losses under live): [{round, kind, ranks, resumed_round, rounds_lost, rounds_degraded}], what each notice or loss cost in outer rounds: the job's last 32 stops of the whole job (kind notice, fallback or restart, from the checkpoint directory: rounds_lost = the round the job had reached - the round the next run resumed from) and this rank's live losses and let-go ranks (kind as in faults, rounds_lost 0, rounds_degraded = rounds finished while any of its ranks was missing); rounds_lost and stops: the job's rounds lost over its stops of the whole job so far, and how many there were; store_requests (any policy with a heartbeat): {heartbeat, group}, the rendezvous store requests this rank's heartbeat (beats and account) and live group (agreements, re-formations, join requests, abort probes) made; degraded: [{first_round, last_round, missing}], the rounds this rank finished with job ranks missing, span by span; faults: {kind: {count, recover_seconds}}, one per rank lost (a rank lost while the group re-formed after another included) or store outage, by what happened: killed (its process was gone: crashed, killed, exited), stopped (its process was there but silent: SIGSTOP, a paused VM), hung (it said its training thread made no progress), unreachable (its host or the path to it did not answer: a cut, a lost node; also a collective that failed and lost nobody), lost (nothing to probe: the store restarted while it was silent), preempted (members left on a notice, SIGTERM or SIGINT, and the others let them go), store (the rendezvous store was unreachable or restarted), recover_seconds from detection to the re-formed group; checkpoints_failed (any policy): checkpoint rounds that could not be written (a full disk), training going on; theta_mismatches (any policy): ranks found holding another global θ than the others before a sync, each resynchronised; resumed_after_notice (any policy): the round of the checkpoint the job saved when it last stopped on a notice, when this run resumed from it (no round was lost to the notice), else -1; fallback: when this run is the gang restart that live recovery fell back to (network.min_live_fraction, max_uncovered_rounds, max_degraded_rounds with max_degraded_s, every rank lost at once), the reason it gave, else empty") \
  FIELD(outer_sync,                 OuterSyncSummary,                 "{mode, sync_points, closed_by_grace, steps_skipped, steps_skipped_ahead, short_contributions, uncovered, sat_out, late_merged, late_dropped, fenced_at_gate, wait_seconds, max_wait_seconds, grace_seconds, ranks}: how this rank met the others at its sync points (docs/QUORUM_SYNC.md); under outer.sync_mode quorum: sync points passed and how many closed before every member arrived, inner steps skipped to reach a closed one and how many of them this rank skipped before the close because it predicted they would end after it (a rank slower than the quorum), outer steps its delta entered with a weight below 1, fragment outer steps in which every owner of a slice weighed 0 (0 unless a slice had no owner left), sync points it sat out (outer.quorum_sit_out) and, of the fragments whose outer steps it sat out, how many it rejoined with its work merged or dropped (outer.quorum_late_work), members it fenced at a sync point's close because they had not arrived and their processes did not answer (network.recovery live), seconds waited for the close (total and longest), the grace window at the end, and ranks: [{rank, tokens, share}], each job rank's trained tokens and its share of its slice's updates (its weights over all its slice owners' weights); under all: mode alone") \
  FIELD(checkpoint_writes,          CheckpointWriteSummary,           "{upload, rounds, skipped, bytes, write_seconds, training_wait_seconds, end_wait_seconds}: how this rank's checkpoints were written (docs/OBJECT_STORAGE.md): checkpoint.upload as resolved (inline or background), the rounds whose parts it wrote, the rounds skipped because a member still had checkpoint.max_in_flight rounds being written (background), the bytes and seconds of those writes (background: on the upload thread), the seconds the training thread spent on checkpoints while training went on (inline: the whole writes; background: copying the state and handing it over), and those it spent at the end: the checkpoint that ends training (the last round's or a notice's, which waits for room) and the wait for the uploads still in flight") \
  FIELD(onednn,                     OneDnnSummary,                    "{enabled, bf16_matmul}: whether LibTorch used oneDNN, and for bf16 matmuls") \
  FIELD(kernel_path,                KernelPathSummary,                "{cpu_model, openblas_core, aten_capability, onednn}: the kernels that decide a CPU run's bits besides config and seed") \
  FIELD(optimizer_settings,         nlohmann::json,                   "{inner, outer}: every inner.* and outer.* key as the run resolved it (defaults filled in)") \
  FIELD(blas,                       BlasSummary,                      "the BLAS the process loaded: {library, variant, threads, intra_op_threads, libtorch, torch_blas, core, core_detected, core_source, core_env, cpu_vectors, cpu_avx512}; core_source: detected (OpenBLAS's choice), runtime (OpenBLAS fell back to narrower kernels than the CPU runs, so ppu chose) or environment (OPENBLAS_CORETYPE)")
// clang-format on

struct RunSummary {
#define PPU_DECLARE_SUMMARY_FIELD(name, type, doc) type name{};
  PPU_RUN_SUMMARY_FIELDS(PPU_DECLARE_SUMMARY_FIELD)
#undef PPU_DECLARE_SUMMARY_FIELD
};

void to_json(nlohmann::json& j, const RunSummary& s);
void from_json(const nlohmann::json& j, RunSummary& s);  // throws nlohmann::json::exception on a missing field

// The file of one rank's summary in `ppu-launch --summary-dir DIR`: DIR/rank-<r>.json.
inline constexpr const char* kRankSummaryFormat = "rank-%d.json";  // printf, of the job rank
std::string rank_summary_file(int job_rank);

// The termination-message result the operator reads, from the summary.
RunResult run_result_from(const RunSummary& s);

// One row per field, for docs/RUN_SUMMARY.md: name, JSON type, doc.
struct SummaryFieldDoc {
  std::string name, type, doc;
};
std::vector<SummaryFieldDoc> run_summary_schema();
// docs/RUN_SUMMARY.md.
std::string run_summary_reference_markdown();

}  // namespace ppu
