// BeatBoard: every rank's heartbeat counter in one store key, "c0 c1 … c(K-1)", so that one
// request reads the whole job's beats. A beat is a compare-and-set of the board with this rank's
// counter bumped; its answer is the board as the store holds it, which is every peer's counter
// too. The first try of a beat usually finds the board moved by the others' beats since this
// rank last looked and answers with it; the second writes: about two requests a beat whatever K
// is, O(K) for the job, where reading each peer's own key cost K per rank, O(K²) in all. A rank
// missing from the board (it never beat, or the store restarted and lost the board) reads 0.
// Pure functions over a c10d::Store: no thread, no state but the caller's.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace c10d {
class Store;
}  // namespace c10d

namespace ppu::beat_board {

// The board's text as counters for `ranks` ranks: missing or unreadable entries read 0.
std::vector<int64_t> parse(const std::string& text, int ranks);
std::string format(const std::vector<int64_t>& beats);

// Adds `delta` to `rank`'s counter on the board at `key`, starting from `seen` (the board text
// this caller last saw, "" for none) and updating it. Returns the board as written, or none
// when `tries` compare-and-sets all lost a race with other ranks' beats (the caller beats again
// later). `requests` counts the store requests made.
std::optional<std::vector<int64_t>> bump(c10d::Store& store, const std::string& key, int rank, int ranks, int64_t delta,
                                         std::string& seen, int64_t& requests, int tries = 8);

}  // namespace ppu::beat_board
