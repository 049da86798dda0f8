// Synthetic token process with an exactly known entropy rate.
//
// Contract: an order-k context process over tokens [0, vocab). A base distribution p over
// `support` symbols is fixed by the seed. The next token after context c (the previous k
// tokens) is map_c(s) with s ~ p, where map_c is an injective map from symbols to tokens that
// depends on the seed and on all k context tokens. Every conditional next-token distribution
// is therefore a relabelling of p, so H(X_t | X_<t) = H(p) exactly, for every t and whatever
// the stationary distribution: the entropy rate is H(p) and no model can reach a perplexity
// below exp(H(p)). With k >= 2 the map depends on two or more earlier positions, which a
// model has to attend to. The stream starts from a fixed virtual context (tokens 0...0 that
// are not emitted), so even the first emitted tokens have conditional entropy H(p).
// Everything is deterministic from `seed`; `stream` selects independent samples of the same
// process (train and val use different streams).
#pragma once

#include <cstdint>
#include <vector>

namespace ppu::data {

struct SyntheticCorpusOptions {
  uint32_t vocab = 256;        // tokens are in [0, vocab)
  uint32_t order = 2;          // k: how many previous tokens the next token depends on
  uint32_t support = 16;       // S <= vocab: symbols with non-zero probability per context
  double zipf_exponent = 1.0;  // base weights ~ (rank+1)^-exponent, jittered by the seed
  uint64_t seed = 0;
};

class SyntheticCorpus {
 public:
  // Throws std::invalid_argument naming the bad option.
  explicit SyntheticCorpus(const SyntheticCorpusOptions& options);

  const SyntheticCorpusOptions& options() const { return options_; }

  // The base distribution p over the S symbols (sums to 1, all entries > 0).
  const std::vector<double>& base_distribution() const { return p_; }

  // H(p) in nats: the exact entropy rate of the process; exp() of it is the perplexity floor.
  double entropy_rate_nats() const { return entropy_nats_; }

  // Token emitted for `symbol` after `context` (the previous `order` tokens, oldest first).
  // Injective in `symbol` for a fixed context.
  uint32_t map_symbol(const uint32_t* context, uint32_t symbol) const;

  // Exact next-token distribution after `context` (length vocab).
  std::vector<double> next_token_distribution(const uint32_t* context) const;

  // `count` tokens of sample path `stream`.
  std::vector<int32_t> generate(uint64_t count, uint64_t stream) const;

 private:
  uint32_t sample_symbol(double u) const;

  SyntheticCorpusOptions options_;
  std::vector<double> p_;
  std::vector<double> cdf_;
  double entropy_nats_ = 0.0;
};

}  // namespace ppu::data
