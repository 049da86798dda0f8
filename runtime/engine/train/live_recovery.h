// LiveRecovery: a run's network.recovery=live path (docs/RECOVERY.md): the survivors of a lost
// rank go on training and take its replacement back at the next admission (a round boundary, or a
// fragment's sync point inside a round: admit_joiners). Contracts:
//  - until_one_generation_completes(work) runs `work` (collectives of the group) until it
//    completes on every member of one generation; attempt(work) runs it once and agrees with
//    every member whether it did (LiveGroup::commit). A failed attempt's result is dropped and
//    the survivors re-form, so the members of a generation leave every collective together.
//  - A re-formed group updates the owner counts (OuterOptimizer::set_owners) and gives its
//    newcomers θ, the momentum, the run's position and (network.replacement_inner_state)
//    a co-owner's inner state; a replacement process takes them in rejoin().
//  - round_end() and bound_degraded() apply the coverage rules at a round boundary
//    (network.max_uncovered_rounds, network.max_degraded_rounds with network.max_degraded_s,
//    network.min_live_fraction):
//    past them live recovery gives up (LiveRecoveryGaveUp, exit 3: gang restart), noting why
//    in the checkpoint directory (kFallbackNote).
//  - let_go() re-forms without members that left on a notice, without waiting for them.
//  - Each loss or let-go is an interruption costing no round, with the rounds it left the job
//    degraded (summary recovery.interruptions, core/interruptions.h).
//  - Faults by kind, recoveries, rejoins and degraded rounds go to the run's RecoverySummary
//    and its metrics (summary recovery.*, ppu_faults_total). A kind names the fault, not how it
//    was detected: killed, stopped, hung, unreachable (LiveGroup::fault_kinds), preempted
//    (let_go), store (an outage of the rendezvous store); each lost rank is one, a rank lost
//    while the group re-formed after another included.
// It reads and changes the run's parts, given by reference: they outlive it. Training thread
// only, except PendingFault::note and on_heartbeat_lost (the heartbeat's thread too).
#pragma once

#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/interruptions.h"
#include "core/run_summary.h"
#include "core/slice_plan.h"
#include "data/data_loader.h"
#include "engine/comm/bounded_store.h"
#include "engine/comm/collectives.h"
#include "engine/comm/heartbeat.h"
#include "engine/comm/live_group.h"
#include "engine/obs/rank_metrics.h"
#include "engine/optim/inner_optimizer.h"
#include "engine/optim/outer_optimizer.h"
#include "engine/state/checkpoint_store.h"
#include "engine/train/progress.h"
#include "engine/train/run_parts.h"

namespace ppu {

// The first fault since the group last re-formed, noted by whichever thread saw it and taken,
// with the seconds since, by the re-formation that recovers from it.
class PendingFault {
 public:
  struct Taken {
    std::string kind;
    double seconds;  // from noted to taken
  };
  void note(const char* kind);  // a no-op while one is pending
  std::optional<Taken> take();

 private:
  using Clock = std::chrono::steady_clock;
  std::mutex mutex_;
  std::optional<std::pair<std::string, Clock::time_point>> fault_;
};

// The heartbeat found a peer (lost.rank) or the store (-1) silent; from its thread, while the
// training thread may be blocked in a collective that waits for the peer. Without live recovery
// this rank stops as a dead peer makes it stop (exit 3, the gang is restarted), now rather than
// after network.timeout_s. With it, a silent peer's collectives are abandoned (a re-formation
// follows); a silent store changes nothing yet (the next store request waits for it).
void on_heartbeat_lost(const Heartbeat::Lost& lost, bool live, PendingFault& fault, Collectives& collectives);

// Before a LiveRecovery is formed: no wait of the live path may outlast a few heartbeat windows
// (a member that died while a group formed must not hold the others for network.timeout_s).
// ConfigError unless the store is external (rank 0's store would die with rank 0).
void prepare_live_recovery(const Config& c, const RendezvousInfo& rendezvous, Collectives& collectives);

// The job ranks that are not members of the group now, ascending.
std::vector<int> missing_ranks(const Collectives& collectives);

class LiveRecovery {
 public:
  // After prepare_live_recovery: forms the LiveGroup on `collectives` (this is job rank `rank`),
  // bounds its store requests and has the heartbeat announce this member's account. `store`:
  // null without a checkpoint directory.
  LiveRecovery(const Config& c, int rank, Collectives& collectives, Heartbeat& heartbeat, const SlicePlan& plan,
               RunParts run, PendingFault& fault, const CheckpointStore* store);
  LiveRecovery(const LiveRecovery&) = delete;
  LiveRecovery& operator=(const LiveRecovery&) = delete;

  // Runs `work` until it completes on every member of one generation.
  template <class F>
  auto until_one_generation_completes(F&& work) -> decltype(work()) {
    for (;;)
      if (auto result = attempt(work)) return std::move(*result);
  }

  // Runs `work` once; its result if every member completed it, else none (the survivors have
  // re-formed). A member can complete an all-gather that another saw fail: only the commit
  // tells.
  template <class F>
  auto attempt(F&& work) -> std::optional<decltype(work())> {
    std::optional<decltype(work())> result;
    std::string failure;
    try {
      result.emplace(work());
    } catch (const StoreLost& e) {  // counted by the commit that finds the store again
      failure = e.what();
    } catch (const PeerError& e) {
      failure = e.what();
      fault_.note("peer_failed");
    }
    if (settle(failure)) return result;
    return std::nullopt;
  }

  // One outer sync that survives the loss of ranks: the exchange takes effect only if every
  // member completed it; otherwise the survivors run it again with their own deltas, normalised
  // by the live owners of each element.
  SyncResult sync(int fragment, bool plain_average);

  // A replacement process: joins the live group where the members next admit (admit_joiners)
  // and takes the state from a live member. False when the job finished before it could
  // (finished_without_this_rank); OutOfGroup (exit 5) when taking the state failed.
  bool rejoin();

  // The job's result, as a member summarised it, for a replacement that the job finished
  // without: nothing trained by this process.
  RunSummary finished_without_this_rank() const;

  // At a round boundary (progress.rounds counts it), before its checkpoint: count a degraded
  // round, give up when a slice has gone without a live owner too long, and take replacements
  // back (admit_joiners).
  void round_end();

  // Take back the replacements that asked to rejoin (not after the last step): a collective of
  // the members, at a round boundary or right after a fragment's outer sync (sync mode all),
  // where every member holds the same θ and position. A replacement that waited for the
  // boundary lost, fragment by fragment, the work from its predecessor's last sync to the
  // boundary; a fragment's sync point comes every H / F steps.
  void admit_joiners();

  // After the round boundary's checkpoint: give up when the job has been missing a rank for more
  // consecutive rounds than network.max_degraded_rounds and for network.max_degraded_s
  // (`degraded_s`: the longest any member counted, agreed at the boundary) (not after the last
  // step).
  void bound_degraded(double degraded_s);
  // Seconds since this member saw the job begin missing a rank (at a round boundary); 0 while
  // every rank is a member.
  double degraded_seconds() const;

  // An elastic job's desired size as the store holds it now (network.min_ranks; none otherwise,
  // or when the store cannot tell): the boundary's vote agrees on one member's reading.
  std::optional<int> desired_ranks() { return group_.desired_ranks(); }
  // At a round boundary, after its vote and checkpoint, an elastic job (network.min_ranks) takes
  // `asked` (the vote's desired size, clamped to [min_ranks, slots]; none: the size it has) as
  // its size: the members in slots at or above it retire (this rank: Retired, exit 0; the others
  // re-form without them at once, nobody waits), unless a slice would be left with no member (a
  // slot below it missing: logged, and asked again at the next boundary). Growing needs nothing
  // here: the new slots' processes join as replacements do, at the next admission. Each change
  // of the members or the size is an entry of the summary's recovery.size_history.
  void resize(std::optional<int> asked);
  // Fewer members than the job requires: every slot, or an elastic job's network.min_ranks.
  bool degraded() const;

  // The members that stay, at a round boundary where `leavers` (every member agreed) left on a
  // notice: the next generation without them, at once (fault kind "preempted").
  void let_go(const std::vector<int>& leavers);

  // Quorum sync's gate closed without `ranks` and their processes do not answer (stopped,
  // killed, cut off): fence them now (the collective after the gate is abandoned and the
  // survivors re-form without them) rather than wait for the heartbeat to find them silent.
  // `step`: the sync point's inner step, for the log.
  void fence_at_gate(const std::vector<int>& ranks, int64_t step);
  // The members' reach addresses by job rank (QuorumGate::ask_missing_with).
  std::map<int, std::string> member_addresses() { return group_.member_addresses(); }

  // Store requests the live group made so far (summary recovery.store_requests.group).
  int64_t store_requests() const { return group_.store_requests(); }

  // The job is done: rank 0 leaves `result` in the store for replacements still waiting.
  void finish(const RunSummary& result);

 private:
  using Clock = std::chrono::steady_clock;

  bool settle(const std::string& failure);
  void recover(std::string why);
  std::chrono::milliseconds reform_patience() const;
  bool take_in_newcomers();
  void after_reform();
  void share_state(bool newcomer);
  void share_inner_state(int root);
  void note_degraded_round();
  void note_size();
  int64_t admission_round() const;
  [[noreturn]] void give_up(const std::string& why);
  void fault_recovered(const std::vector<int>& lost);
  void tally_fault(const std::string& kind, double seconds);
  void count_store_outages();

  const Config& config_;
  const int rank_;
  Collectives& collectives_;
  Heartbeat& heartbeat_;
  const SlicePlan& plan_;
  RunParts run_;
  PendingFault& fault_;
  const CheckpointStore* store_;
  LiveGroup group_;
  std::optional<Clock::time_point> degraded_since_;  // the first degraded boundary of this span
  bool store_fault_ = false;                         // a store outage was counted since the last recovery
  LiveInterruptions interruptions_;                  // summary recovery.interruptions: this run's losses
  int desired_ = 0;             // an elastic job's size as last agreed (a replacement's: with the state, share_state)
  std::string shrink_refused_;  // why the last boundary could not shrink ("": it could), logged once
};

// The trainer's collectives, with or without live recovery: through `live_recovery` (null under
// network.recovery=gang, or with one rank) until one generation completes `work`; without it
// `work` runs once, and a lost peer is the gang's restart (PeerError).
template <class F>
auto until_one_generation_completes(LiveRecovery* live_recovery, F&& work) -> decltype(work()) {
  if (live_recovery) return live_recovery->until_one_generation_completes(work);
  return work();
}

}  // namespace ppu
