// QuorumGate: where a rank meets the others at a sync point under outer.sync_mode = quorum
// (docs/QUORUM_SYNC.md; the rules themselves are core/quorum_rule.h). Through the rendezvous
// store, on a connection of its own, every request bounded (comm/bounded_store.h).
// Contracts:
//  - arrive(step, grace_s): this rank reached the sync point after inner step `step`; returns
//    once that sync point has closed: every member of the group arrived ("all"), or a quorum
//    (outer.quorum_fraction of the members, with an owner of every slice that has a member)
//    arrived and `grace_s` passed since this rank saw it ("grace"). The first rank to close it
//    decides which; every rank reads the same answer. Waiting ticks the progress clock (it is
//    waiting on peers, not hung).
//  - Whether a sync point has closed before this rank arrived (it is behind, and skips its
//    remaining inner steps) is QuorumCloseWatch's, off the training thread.
//  - A member lost while the others wait (the heartbeat aborted the group, Collectives::abort)
//    ends the wait at once: a quorum of the old group may never arrive (a node of several ranks
//    lost), and the collective after the gate re-forms the group without the lost ones.
//  - Fencing at the gate (ask_missing_with, live recovery): from the moment a quorum arrived the
//    gate asks the members not arrived yet whether their processes answer (reach_probe.h
//    processes_answer, within the grace window clamped to [0.25 s, 1 s]); a sync point that closes
//    without them asks those that did not once more (1 s) and names those that still do not and
//    have still not arrived (Arrival::unanswering): stopped, killed or cut off. The trainer fences them at once,
//    instead of waiting in the collective that follows until the heartbeat finds them silent (network.heartbeat_s). A
//    straggler that is merely slow answers (its listener is a thread of its own) and is waited for.
//  - The store is a helper, never a dependency: when it does not answer (dead, frozen,
//    restarted), arrive returns at once as closed-by-all, so the sync point closes as under
//    sync_mode all (the collective waits for every member); the next arrive tries a new
//    connection.
// Training thread only.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <future>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/config.h"
#include "engine/comm/bounded_store.h"
#include "engine/comm/collectives.h"

namespace ppu {

// How long one of quorum sync's store requests may take: network.timeout_s, at most 1 s (the
// gate's and QuorumCloseWatch's).
std::chrono::milliseconds quorum_request_timeout(const Config& config);

class QuorumGate {
 public:
  QuorumGate(const Config& config, Collectives& collectives);

  struct Arrival {
    double wait_s = 0;             // from this rank's arrival to the close
    bool everyone = true;          // closed with every member arrived (or the store could not say)
    bool store_lost = false;       // the store did not answer: closed as under sync_mode all
    bool aborted = false;          // the group lost a member while this rank waited (see above)
    std::vector<int> unanswering;  // closed without these members, whose processes do not answer
  };
  Arrival arrive(int64_t step, double grace_s);
  // Fencing at the gate: `addresses` gives the members' reach addresses by job rank
  // (LiveGroup::member_addresses). Without it the gate asks nobody.
  using Addresses = std::function<std::map<int, std::string>()>;
  void ask_missing_with(Addresses addresses) { addresses_ = std::move(addresses); }
  // Quorum sync's sitting out (outer.quorum_sit_out): who sits out which sync points, as the
  // members of the sync point after inner step `step` planned it (the lowest of them publishes
  // it), for a rank that sat that sync point out and rejoins at the next: it waits until the
  // plan is there (ticking the progress clock), or throws StoreLost when the store does not
  // answer (a rank cannot rejoin without knowing who is in). Nothing when the job stopped on a
  // notice meanwhile (say_job_stopped): the members never meet there.
  void publish_plan(int64_t step, const std::string& plan);
  std::optional<std::string> plan(int64_t step);
  // Notices while sitting out: a rank away says it had one (say_notice); the members read which
  // of `ranks` did (noticed) at their round boundary, and say when the job stops on a notice
  // (say_job_stopped), which the ranks away read (job_stopped). StoreLost when the store does not
  // answer.
  void say_notice();
  std::vector<int> noticed(const std::vector<int>& ranks);
  void say_job_stopped();
  bool job_stopped();
  int64_t store_requests() const { return store_.requests(); }

 private:
  bool slices_covered(int64_t step);
  // A lost connection is opened again (briefly) before a request; StoreLost if it cannot be.
  void reconnect_if_lost();
  // The members not arrived at the sync point after `step`, and whether each one's process
  // answered (asked once the quorum arrived).
  struct Asked {
    std::vector<int> ranks;
    std::vector<std::string> addresses;  // theirs, in that order
    std::future<std::vector<bool>> answers;
  };
  std::optional<Asked> ask_missing(int64_t step, double grace_s);
  std::vector<int> unanswering(int64_t step, Asked& asked);
  std::vector<int> not_arrived(int64_t step, const std::vector<int>& ranks);

  const Config& config_;
  Collectives& col_;
  BoundedStore store_;
  int slices_;
  Addresses addresses_;
};

}  // namespace ppu
