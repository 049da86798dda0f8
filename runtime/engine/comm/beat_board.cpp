#include "engine/comm/beat_board.h"

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <sstream>

namespace ppu::beat_board {

std::vector<int64_t> parse(const std::string& text, int ranks) {
  std::vector<int64_t> beats(ranks, 0);
  std::istringstream in(text);
  int64_t value = 0;
  for (int r = 0; r < ranks && in >> value; ++r) beats[r] = value;
  return beats;
}

std::string format(const std::vector<int64_t>& beats) {
  std::string out;
  for (int64_t b : beats) out += (out.empty() ? "" : " ") + std::to_string(b);
  return out;
}

std::optional<std::vector<int64_t>> bump(c10d::Store& store, const std::string& key, int rank, int ranks, int64_t delta,
                                         std::string& seen, int64_t& requests, int tries) {
  for (int i = 0; i < tries; ++i) {
    auto beats = parse(seen, ranks);
    beats.at(rank) += delta;
    const std::string want = format(beats);
    const std::vector<uint8_t> expected(seen.begin(), seen.end());
    const auto answer = store.compareSet(key, expected, std::vector<uint8_t>(want.begin(), want.end()));
    ++requests;
    const std::string now(answer.begin(), answer.end());
    if (now == want) {
      seen = now;
      return beats;
    }
    // LibTorch's store answers a compare-and-set on a missing key with the expected value
    // unchanged (1.13) or nothing: the board is gone (a restarted store), start it afresh.
    seen = (now == seen || now.empty()) ? std::string() : now;
  }
  return std::nullopt;
}

}  // namespace ppu::beat_board
