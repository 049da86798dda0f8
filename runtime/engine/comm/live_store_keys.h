// The live group's keys in the rendezvous store, defined once for every writer and reader
// (Collectives, LiveGroup, the heartbeat, and the tests that stage a store's state). A restarted
// store is rebuilt from the ranks under these same names (docs/RECOVERY.md).
#pragma once

#include <cstdint>
#include <string>

namespace ppu::live_keys {

// Prefix of the heartbeat's keys; every rank's beat counter is on one board under it
// (beat_board.h, beat_board()).
inline constexpr const char* kHeartbeatPrefix = "ppu/heartbeat/";
inline std::string beat_board(const std::string& prefix = kHeartbeatPrefix) { return prefix + "board"; }
// The job's first group, written once it formed and re-marked with each beat: a process that
// starts and finds it is a replacement (Collectives::is_replacement).
inline constexpr const char* kFirstGroup = "live/g0/members";
// The first group's size, decided once (compare-and-set) by the first rank that saw its slots
// all checked in: an elastic job's desired size then (kDesiredRanks), else the job's.
inline constexpr const char* kFirstGroupSize = "live/g0/size";
// Each process that starts with an external store checks in under <prefix><rank>.
inline constexpr const char* kStartedPrefix = "live/g0/started/";
// An elastic job's desired size (network.min_ranks, docs/RESIZE.md), a decimal number of ranks:
// written by its supervisor (ppu-launch; `ppu-rendezvous --resize` by hand or the operator) before
// the first rank starts, at each resize and after the store restarts. The first group is its
// slots 0 … size−1; the members read it at each round boundary. Absent: every slot.
inline constexpr const char* kDesiredRanks = "live/desired";
// The count of join requests, and each request: join_request(i) holds the asking rank.
inline constexpr const char* kJoins = "live/joins";
// The job's final result, written by the first rank to finish.
inline constexpr const char* kDone = "live/done";

// A member's account (generation, collectives decided, last outcome, members, reach address).
inline std::string account(int rank) { return "live/at/" + std::to_string(rank); }
// What a rank said of itself before it went silent ("hung"); "" once its replacement joined.
inline std::string self_report(int rank) { return "live/fault/" + std::to_string(rank); }
inline std::string join_request(int64_t index) { return "live/join/" + std::to_string(index); }
// A key of one generation: its agreement (`name`) or its process group's prefix ("pg").
inline std::string of_generation(int64_t generation, const std::string& name) {
  return "live/g" + std::to_string(generation) + "/" + name;
}

// Quorum sync's keys of the sync point after inner step `step` (engine/train/quorum_gate.h):
// "arrived" (a count), "slice/<s>" (set once an owner of slice s arrived), "at/<r>" (job rank r
// arrived; live recovery only, for fencing at the gate), "plan" (sitting out), "closed" ("all" or
// "grace", decided once). Not rebuilt after a store restart: a sync point open then closes as
// under outer.sync_mode all, when the last member arrives.
inline std::string quorum(int64_t step, const std::string& name) {
  return "ppu/quorum/" + std::to_string(step) + "/" + name;
}
// Quorum sync's keys of the whole run (sitting out, gang recovery: a store per incarnation):
// "notice/<r>" (job rank r had a notice while it sat out), "stopped" (the job stopped on a notice).
inline std::string quorum_run(const std::string& name) { return "ppu/quorum/run/" + name; }

}  // namespace ppu::live_keys
