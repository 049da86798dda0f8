#include "data/synthetic_corpus.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <string>

#include "data/counter_rng.h"

namespace ppu::data {
namespace {

// Domain-separation tags, so the weights, the maps and the sample paths use unrelated hashes
// of the same seed.
constexpr uint64_t kWeightTag = 0x7765696768747321ULL;
constexpr uint64_t kMapTag = 0x6d61707321212121ULL;
constexpr uint64_t kStreamTag = 0x73747265616d2121ULL;

}  // namespace

SyntheticCorpus::SyntheticCorpus(const SyntheticCorpusOptions& options) : options_(options) {
  if (options.vocab < 2 || options.vocab > (1u << 31))
    throw std::invalid_argument("synthetic corpus: vocab must be in [2, 2^31], got " + std::to_string(options.vocab));
  if (options.support < 1 || options.support > options.vocab)
    throw std::invalid_argument("synthetic corpus: support must be in [1, vocab=" + std::to_string(options.vocab) +
                                "], got " + std::to_string(options.support));
  if (options.order > 64)
    throw std::invalid_argument("synthetic corpus: order must be <= 64, got " + std::to_string(options.order));
  if (!(options.zipf_exponent >= 0.0) || !std::isfinite(options.zipf_exponent))
    throw std::invalid_argument("synthetic corpus: zipf exponent must be finite and >= 0");

  // Zipf weights with a seeded jitter in [0.5, 1.5): the seed changes p itself, not only the
  // labels, and no two symbols are exactly tied.
  const uint64_t wseed = hash_combine(kWeightTag, options.seed);
  p_.resize(options.support);
  for (uint32_t i = 0; i < options.support; ++i) {
    const double jitter = 0.5 + uniform_unit(hash_combine(wseed, i));
    p_[i] = std::pow(static_cast<double>(i + 1), -options.zipf_exponent) * jitter;
  }
  const double total = std::accumulate(p_.begin(), p_.end(), 0.0);
  cdf_.resize(p_.size());
  double run = 0.0;
  for (size_t i = 0; i < p_.size(); ++i) {
    p_[i] /= total;
    run += p_[i];
    cdf_[i] = run;
    entropy_nats_ -= p_[i] * std::log(p_[i]);
  }
}

uint32_t SyntheticCorpus::map_symbol(const uint32_t* context, uint32_t symbol) const {
  const uint64_t vocab = options_.vocab;
  uint64_t h = hash_combine(kMapTag, options_.seed);
  for (uint32_t j = 0; j < options_.order; ++j) h = hash_combine(h, context[j]);
  // Affine map s -> a*s + b (mod V) is injective iff gcd(a, V) = 1. Walking up from a random
  // start reaches a unit after O(log log V) steps on average.
  uint64_t a = 1 + uniform_below(mix64(h ^ 1), vocab - 1);
  while (std::gcd(a, vocab) != 1) a = a + 1 < vocab ? a + 1 : 1;
  const uint64_t b = uniform_below(mix64(h ^ 2), vocab);
  // a < 2^31 and symbol < 2^31, so the product fits in 64 bits.
  return static_cast<uint32_t>((a * symbol + b) % vocab);
}

std::vector<double> SyntheticCorpus::next_token_distribution(const uint32_t* context) const {
  std::vector<double> dist(options_.vocab, 0.0);
  for (uint32_t s = 0; s < options_.support; ++s) dist[map_symbol(context, s)] += p_[s];
  return dist;
}

uint32_t SyntheticCorpus::sample_symbol(double u) const {
  const auto it = std::upper_bound(cdf_.begin(), cdf_.end(), u);
  // u can exceed the last partial sum by rounding; that mass belongs to the last symbol.
  return it == cdf_.end() ? static_cast<uint32_t>(cdf_.size() - 1) : static_cast<uint32_t>(it - cdf_.begin());
}

std::vector<int32_t> SyntheticCorpus::generate(uint64_t count, uint64_t stream) const {
  std::vector<int32_t> out;
  out.reserve(count);
  CounterRng rng(hash_combine(hash_combine(kStreamTag, options_.seed), stream));
  // Context window, oldest first; starts as the virtual all-zero context.
  std::vector<uint32_t> context(options_.order, 0u);
  for (uint64_t t = 0; t < count; ++t) {
    const uint32_t token = map_symbol(context.data(), sample_symbol(uniform_unit(rng.next())));
    out.push_back(static_cast<int32_t>(token));
    if (!context.empty()) {
      std::copy(context.begin() + 1, context.end(), context.begin());
      context.back() = token;
    }
  }
  return out;
}

}  // namespace ppu::data
