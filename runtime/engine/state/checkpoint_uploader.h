// CheckpointUploader: checkpoint.upload background — a rank's checkpoint rounds written by a
// thread of its own while the next rounds train (docs/OBJECT_STORAGE.md, "Background upload").
// The training thread only copies its parts' state at the round boundary (a consistent snapshot
// in memory, serialised by this thread: Bytes::later) and hands them over; nothing the thread
// does is a collective. Contracts:
//  - full(): whether checkpoint.max_in_flight rounds of this rank are still being written; the
//    caller skips a round then (every member agrees first, so that no member waits for a part
//    that will not come). enqueue(round) hands one over.
//  - The thread writes each part (the location retries what may pass, with back-off), then, on
//    every member but the group's rank 0, a receipt beside them (round_manifest.h: each part's
//    size and checksum, or why it could not be written). The group's rank 0 writes global.pt,
//    then commits the round with its manifest once the receipts of every member of the group
//    that saved it are there, and prunes older rounds (checkpoint.keep). A receipt that says a
//    part failed, or one still missing checkpoint.write_timeout_s after the round was handed
//    over (its writer lost or cut off), leaves the round without a manifest: never loaded,
//    logged, counted, the previous checkpoint stays the resume point. Waiting for receipts does
//    not hold the queue: later rounds are written meanwhile, each committed on its own.
//  - committed(): the newest round this rank saw committed (rank 0: wrote its manifest; the
//    others look for the manifest of their newest written round while idle), -1 before any.
//    take_failed(): the rounds given up since the last call, for the caller's counters.
//  - drain(bound_s): waits until every handed-over round is committed or given up (on the
//    others, its manifest seen), for at most bound_s; whether all were.
//  - set_note(): a note beside the rounds, written by the thread too (latest text wins).
//  - stats(): rounds written, bytes and seconds on the thread, for the run summary.
//  - The destructor waits at most `exit_drain_s` for the rounds not yet written (and on rank 0
//    for the commits waiting for receipts, not on the others for a manifest to appear), then
//    abandons what is left: the thread stops after the request in progress.
// Every member may be called from the training thread while the upload thread runs.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "engine/state/checkpoint_location.h"
#include "engine/state/round_manifest.h"

namespace ppu {

class CheckpointUploader {
 public:
  // A part's bytes: given, or made once on the upload thread from a snapshot (`later`).
  class Bytes {
   public:
    Bytes(std::string ready) : bytes_(std::move(ready)) {}  // NOLINT(google-explicit-constructor)
    static Bytes later(std::function<std::string()> make);
    const std::string& get();  // makes them on the first call

   private:
    Bytes() = default;
    std::string bytes_;
    std::function<std::string()> make_;
  };
  struct Part {
    int job_rank = 0;
    Bytes bytes;
  };
  // What the group's rank 0 adds: the global part and what the manifest needs.
  struct Commit {
    Bytes global;
    std::vector<int> members;  // the job ranks of the group that saved the round
    int world_size = 0;
    std::string config_yaml;
  };
  struct Round {
    int64_t round = 0;
    std::vector<Part> parts;  // this member's own part and those it stands in for
    std::optional<Commit> commit;
    std::chrono::steady_clock::time_point handed_over{};  // set by enqueue
  };
  struct Stats {
    int64_t rounds_written = 0;  // rounds whose parts (and on rank 0 the commit) were written
    double bytes = 0;            // bytes written: parts, receipts, global.pt and manifests
    double seconds = 0;          // seconds the thread spent writing and committing
  };
  struct Settings {
    int job_rank = 0;
    int keep = 3;
    int max_in_flight = 1;
    double round_timeout_s = 600;  // a round not committed by then is given up
    double exit_drain_s = 25;
  };

  CheckpointUploader(std::unique_ptr<CheckpointLocation> location, Settings settings);
  ~CheckpointUploader();
  CheckpointUploader(const CheckpointUploader&) = delete;
  CheckpointUploader& operator=(const CheckpointUploader&) = delete;

  bool full() const;
  bool wait_for_room(double bound_s);  // until !full(), at most bound_s; whether there is room
  void enqueue(Round round);
  // A small object rewritten often (the reached note): the thread writes the latest text it was
  // given between rounds; a failure is logged when writing it starts to fail and when it works
  // again.
  void set_note(const std::string& name, std::string text);
  bool drain(double bound_s);
  int64_t committed() const;
  std::vector<int64_t> take_failed();
  Stats stats() const;

 private:
  using Clock = std::chrono::steady_clock;
  // A round rank 0 has written its share of and waits to commit.
  struct Pending {
    int64_t round = 0;
    PartRecord global;
    std::vector<int> members;
    int world_size = 0;
    std::string config_yaml;
    std::map<int, PartRecord> parts;  // by job rank: its own writes and the receipts read so far
    std::vector<int> receipts_missing;
    Clock::time_point deadline;
    bool resolved = false;  // committed, given up or superseded
  };

  bool full_locked() const;  // full(), the lock held
  void run();
  void write(Round& round);
  void try_commit(Pending& pending);
  void commit(Pending& pending);
  bool look_for_manifest(int64_t round, Clock::time_point deadline);
  void give_up(int64_t round, const std::string& why);
  void resolved(int64_t committed_round = -1);
  void write_note();

  std::unique_ptr<CheckpointLocation> at_;
  Settings settings_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Round> queue_;
  bool writing_ = false;  // the thread holds a round taken from the queue
  int unfinished_ = 0;    // rounds handed over and not yet committed or given up
  int committing_ = 0;    // rank 0: rounds written, waiting for receipts (pending_.size())
  int64_t committed_ = -1;
  std::optional<std::pair<std::string, std::string>> note_;  // name, text: not written yet
  std::vector<int64_t> failed_;
  Stats stats_;
  bool stop_ = false;
  // The thread's alone.
  std::vector<Pending> pending_;                                 // rank 0: rounds waiting for receipts
  std::optional<std::pair<int64_t, Clock::time_point>> unseen_;  // the others: written, manifest not seen yet
  bool note_failing_ = false;
  std::thread thread_;
};

}  // namespace ppu
