// QuorumCloseWatch: whether the sync point a rank trains towards has closed (quorum sync,
// docs/QUORUM_SYNC.md), asked off the training thread. Contracts:
//  - ask(step, wait) asks a thread of this watch to look up whether sync point `step` has
//    closed (one store request, on a connection of its own, bounded like every live-path
//    request; asks made while one is in flight are coalesced into the next). closed(step)
//    reads the answers so far: true once that sync point, or a later one, was seen closed.
//    With wait false (a rank whose steps are short against a store round trip) ask never
//    blocks: such a rank learns of a close one inner step later than a request of its own
//    would tell it, and never waits for the store in a step (a synchronous round trip before
//    every step cost the tiny job 8-11 % of its wall time on a loaded 2-core machine:
//    docs/QUORUM_SYNC.md, "What is measured"). With wait true (a slow rank, whose extra step
//    would cost the group more than the round trip) it returns once the thread answered this
//    ask (the request timeout, at most 1 s; a new connection, at most 2 s more).
//  - The store is a helper: while it does not answer (dead, frozen, restarted) closed() stays
//    false (the rank trains on and arrives at the gate, which closes as under sync_mode all),
//    and the thread opens a new connection, at most once every half second.
//  - The destructor logs how many requests the thread made and stops it, once a request in
//    flight is answered or abandoned (within the bounds above).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>

#include "core/config.h"
#include "engine/comm/bounded_store.h"
#include "engine/comm/collectives.h"

namespace ppu {

class QuorumCloseWatch {
 public:
  QuorumCloseWatch(const Config& config, Collectives& collectives);
  ~QuorumCloseWatch();
  QuorumCloseWatch(const QuorumCloseWatch&) = delete;
  QuorumCloseWatch& operator=(const QuorumCloseWatch&) = delete;

  void ask(int64_t step, bool wait);
  bool closed(int64_t step) const { return closed_.load() >= step; }

 private:
  void run();
  void lookup(int64_t step);

  BoundedStore store_;  // used by the watch's thread only
  std::mutex mutex_;
  std::condition_variable asked_cv_, answered_cv_;
  int64_t asked_ = -1;    // the sync point to look up next; -1: none asked since the last lookup
  int64_t asks_ = 0;      // asks so far
  int64_t answered_ = 0;  // the asks the thread has answered (every ask up to this one)
  bool stop_ = false;
  std::atomic<int64_t> closed_{-1};                       // the latest sync point seen closed
  int64_t requests_ = 0;                                  // the thread's
  std::chrono::steady_clock::time_point next_connect_{};  // the thread's: the next reconnect allowed
  std::thread thread_;                                    // last: started once the members above exist
};

}  // namespace ppu
