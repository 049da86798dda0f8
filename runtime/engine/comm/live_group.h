// LiveGroup: how the ranks of a network.recovery=live job agree, through the external
// rendezvous store, on what a failure changes — which exchanges took effect, who is in the
// next group, and when a replacement comes back. Collectives carries out the decisions
// (reform); the trainer decides what to do with them (docs/RECOVERY.md).
//
// Store keys (every rank sees the same store, which outlives all of them):
//   live/g<n>/members        the job ranks of generation n, ascending ("0,1,3"); written once
//                            by compare-and-set, so every rank reads the same list
//   live/g<n>/reforming      a member began re-forming after a failure: every member abandons
//                            the collective it waits in (Collectives' abort probe)
//   live/g<n>/arrived/<r>    rank r reached the re-formation of generation n after a failure
//   live/g<n>/source         the job rank that sends the state to generation n's newcomers
//   live/g<n>/x<s>/done      how many members completed collective s of generation n
//   live/g<n>/x<s>/outcome   "commit" or "abort", compare-and-set: the collective's fate
//   live/joins, live/join/<i> replacements asking to come back, in order of arrival
//   live/done                the job finished (a member's summary): a replacement still waiting
//                            reports it and exits
//
// Contracts:
//  - commit(done): every member of the generation gets the same answer for its next
//    collective (the trainer commits after each one); "commit" only if every member completed
//    it. A member that was stopped and resumed after
//    the others moved on reads their answer, never a different one.
//  - recover(): the survivors' next generation: every member of the current one that reached
//    it, waiting for the others until each has either arrived or gone silent (heartbeat) or
//    asked to rejoin as a new process, or `patience` has passed (set_patience: a member that
//    still beats but does not come is left out too, and finds itself out of the group). Throws
//    OutOfGroup when that generation was formed without this rank, PeerError when forming the
//    Gloo group of the agreed members fails (a member died meanwhile: recover again).
//  - pending_joiners()/admit(): at a round boundary, the replacements every member has seen
//    (one all-gather of the join count) and the generation that takes them in.
//  - join(): a replacement's side: ask, wait for a generation that includes this rank, form it.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "engine/comm/collectives.h"

namespace ppu {

// Live recovery cannot go on under its coverage rules (network.min_live_fraction,
// network.max_uncovered_rounds): the one live-path failure that restarts the gang (exit 3).
// Every other failure of the live path leaves this rank out of the group (exit 5, restarted
// alone): see train().
class LiveRecoveryGaveUp : public PeerError {
 public:
  using PeerError::PeerError;
};

// Job ranks as the store and the logs write them: "0,1,3".
std::string ranks_text(const std::vector<int>& ranks);

class LiveGroup {
 public:
  // Whether a job rank has gone silent (Heartbeat::silent, with keep_watching).
  using IsSilent = std::function<bool(int)>;
  // `silent` tells who is silent while a generation forms.
  LiveGroup(Collectives& collectives, IsSilent silent);

  int64_t generation() const { return generation_; }
  // How long recover() waits for members that neither arrive nor fall silent (default: the
  // collectives' timeout).
  void set_patience(std::chrono::milliseconds patience) { patience_ = patience; }

  // Whether the next collective of this generation took effect on every member; `done`: it
  // completed here.
  bool commit(bool done);

  // Forms the survivors' next generation (see above) and returns the job ranks it lost.
  std::vector<int> recover();

  // The replacements to take in now, the same on every member (a collective of the group).
  std::vector<int> pending_joiners();
  // Forms the next generation with `joiners` added; returns the job ranks actually added (the
  // generation may have been taken by a concurrent recovery, without them): newcomers().
  std::vector<int> admit(const std::vector<int>& joiners);

  // A replacement's side. Returns false when the job finished before taking this rank back
  // (finished_result() is then the job's result).
  bool join();

  // The job rank that sends the current generation's newcomers their state, and those
  // newcomers (empty when the generation only lost ranks).
  int source() const { return source_; }
  const std::vector<int>& newcomers() const { return newcomers_; }
  // Marks the job finished with its result (a member's run summary, JSON): replacements still
  // waiting stop and report it (finished_result()).
  void finish(const std::string& result);
  const std::string& finished_result() const { return finished_result_; }

 private:
  std::string key(int64_t generation, const std::string& name) const;
  // Reads generation `next`'s members (written by whoever decided it), forms it, and records
  // the state source for newcomers relative to `before`.
  void form(int64_t next, const std::vector<int>& before);
  std::vector<int> join_requests(int64_t upto) const;  // ranks of requests joins_seen_+1..upto

  Collectives& col_;
  IsSilent silent_;
  std::atomic<int64_t> generation_{0};  // read by the abort probe on communication threads
  int64_t exchange_ = 0;                // collectives of this generation committed or aborted so far
  int64_t joins_seen_ = 0;              // join requests already taken in (or standing for a member)
  int source_ = 0;
  std::chrono::milliseconds patience_;
  std::vector<int> newcomers_;
  std::string finished_result_;
};

}  // namespace ppu
