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
//  - The store is a helper, never a dependency: when it does not answer (dead, frozen,
//    restarted), arrive returns at once as closed-by-all, so the sync point closes as under
//    sync_mode all (the collective waits for every member); the next arrive tries a new
//    connection.
// Training thread only.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

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
    double wait_s = 0;        // from this rank's arrival to the close
    bool everyone = true;     // closed with every member arrived (or the store could not say)
    bool store_lost = false;  // the store did not answer: closed as under sync_mode all
    bool aborted = false;     // the group lost a member while this rank waited (see above)
  };
  Arrival arrive(int64_t step, double grace_s);
  // Quorum sync's sitting out (outer.quorum_sit_out): who sits out which sync points, as the
  // members of the sync point after inner step `step` planned it (the lowest of them publishes
  // it), for a rank that sat that sync point out and rejoins at the next: it waits until the
  // plan is there (ticking the progress clock), or throws StoreLost when the store does not
  // answer (a rank cannot rejoin without knowing who is in).
  void publish_plan(int64_t step, const std::string& plan);
  std::string plan(int64_t step);
  int64_t store_requests() const { return store_.requests(); }

 private:
  bool slices_covered(int64_t step);

  const Config& config_;
  Collectives& col_;
  BoundedStore store_;
  int slices_;
};

}  // namespace ppu
