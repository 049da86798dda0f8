// Heartbeat: every rank's liveness through the rendezvous store, so that a rank that stops
// without closing its connections (SIGSTOP, a hung or lost node, a partitioned pod) is noticed
// within `window` by every survivor, instead of after the collective timeout
// (network.timeout_s, 300 s by default). A rank that dies closes its sockets and fails the next
// collective at once; this covers the ranks that do not.
//
// Contract: a beater thread, with its own connection to the store, increments this rank's
// counter every window / 5 on the job's beat board and so reads every peer's (beat_board.h:
// about two store requests a beat, O(K) for the job); a peer whose counter has not moved for
// `window` while this rank looked at the board at least 4 times (its own late beats are no
// evidence) is reported once to `on_lost`. A peer that has not beaten yet has 3 windows from
// this monitor's start (ranks leave the rendezvous seconds apart on a loaded machine).
// A watchdog thread that does no I/O reports the store itself when the beater has had no
// answer for `window` (a store whose host is stopped never answers, and a TCPStore read does
// not time out). on_lost runs on one of those threads; the monitor then stops. A process that
// is stopped beats no more, whatever its other threads were doing; a rank busy in a long step
// keeps beating. leave() marks this rank as finished, so that peers still evaluating or writing
// do not count it as lost; the destructor stops without that mark (a rank unwinding on an error
// is lost to its peers) and never waits on a store that does not answer.
// With `keep_watching` (network.recovery=live) the monitor goes on after a report: each peer is
// reported once per silence, becomes live again when its counter moves (a replacement beats
// under the same rank), and silent() tells who is silent now; only the store's silence stops it.
// A gap in this process's own schedule longer than the window (it was stopped itself) restarts
// every clock instead of blaming the peers or the store for it.
// With keep_watching the store's silence is reported too (rank -1, once per silence) and the
// monitor goes on reconnecting: the store's supervisor restarts it and the ranks rebuild their
// part of it (LiveGroup); each beat then also writes what announce_with() gives.
// Progress, not liveness (watch_progress): with a ProgressClock this rank beats only while its
// training thread makes progress (progress_clock.h). Once the clock has been idle past its
// window the rank says so (live_keys::self_report: "hung", for the peers that name the fault),
// stops beating, so its peers find it silent and fence it, and `on_hung` runs once (the trainer
// ends the process: its supervisor replaces it).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "engine/comm/collectives.h"
#include "engine/comm/live_store_keys.h"
#include "engine/comm/progress_clock.h"

namespace c10d {
class Store;
}  // namespace c10d

namespace ppu {

class Heartbeat {
 public:
  struct Lost {
    int rank;         // the silent peer, or -1 when the store itself stopped answering
    double silent_s;  // how long it has been silent
  };
  using OnLost = std::function<void(const Lost&)>;
  using OnHung = std::function<void(double idle_seconds)>;

  // `key_prefix` separates incarnations of a job that share a store. Off (no threads) for a
  // single rank or a zero window.
  // `start_now` false: nothing beats until start() (a replacement rank, which must not beat
  // under its rank while its predecessor's silence is what tells the others it died).
  Heartbeat(const RendezvousInfo& info, std::chrono::milliseconds window, OnLost on_lost,
            const std::string& key_prefix = live_keys::kHeartbeatPrefix, bool keep_watching = false,
            bool start_now = true);
  Heartbeat(const Heartbeat&) = delete;
  Heartbeat& operator=(const Heartbeat&) = delete;
  ~Heartbeat();

  // Beat only while `clock` shows progress; `on_hung` once it has been idle past its window.
  // Before or after start(), once; `clock` must outlive this object.
  void watch_progress(const ProgressClock& clock, OnHung on_hung);
  // After each beat, `announce` runs with the beater's own store connection (LiveGroup's
  // account of this member) and returns the store requests it made. Once, before or after
  // start(); it must not block for long.
  using Announce = std::function<int(c10d::Store&)>;
  void announce_with(Announce announce);
  // Starts beating and watching (once; a no-op when off or started).
  void start();
  // This rank finished its work: peers stop watching it.
  void leave();

  // keep_watching: the group has just taken `ranks` in. A replacement beats only from then on
  // (start_now false), so each one's silence counts from now, not from its predecessor's last
  // beat, and none of them is silent.
  void welcome(const std::vector<int>& ranks);
  // Whether `rank` has been silent for the window (keep_watching; false when off).
  bool silent(int rank) const;

  // Store requests the beater has made so far (the board's compare-and-sets and reads, and the
  // announcements).
  int64_t requests() const;

  // The message a rank reports for `lost` (logs, termination message).
  static std::string describe(const Lost& lost);

 private:
  struct Shared;
  // The beater's loop: beat, read the peers, report a silent one.
  static void beat(const std::shared_ptr<Shared>& s);
  void stop(bool leaving);

  std::shared_ptr<Shared> shared_;  // outlives this object while a beater is blocked on the store
  std::thread beater_, watchdog_;
};

}  // namespace ppu
