// Counter-based randomness for the data layer: every random number is a pure function of
// (seed, counters), so generators can be recreated at any position without replaying history.
// SplitMix64's finaliser is a bijection on 64-bit words with good avalanche; chaining it over
// the inputs gives a well-mixed hash. Bit-identical on every platform (no <random>
// distributions, whose outputs differ between standard libraries).
#pragma once

#include <cstdint>

namespace ppu::data {

// SplitMix64 finaliser (Steele, Lea, Flood 2014).
inline uint64_t mix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

// Hash of an ordered pair; not symmetric, so (a, b) and (b, a) differ.
inline uint64_t hash_combine(uint64_t h, uint64_t v) { return mix64(h ^ mix64(v)); }

// Uniform integer in [0, n) from a 64-bit random word (Lemire's multiply-high; the bias is
// at most n / 2^64, far below anything a training run can notice).
inline uint64_t uniform_below(uint64_t word, uint64_t n) {
  return static_cast<uint64_t>((static_cast<unsigned __int128>(word) * n) >> 64);
}

// Uniform double in [0, 1) with 53 random bits.
inline double uniform_unit(uint64_t word) { return static_cast<double>(word >> 11) * 0x1.0p-53; }

// Sequential stream of words: word i of stream (seed) is mix64(seed_hash + i * golden),
// i.e. SplitMix64 proper. Cheap, stateless apart from the counter.
class CounterRng {
 public:
  explicit CounterRng(uint64_t seed) : state_(mix64(seed)) {}
  uint64_t next() { return mix64(state_ += 0x9E3779B97F4A7C15ULL); }

 private:
  uint64_t state_;
};

}  // namespace ppu::data
