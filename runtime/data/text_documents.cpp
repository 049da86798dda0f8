#include "data/text_documents.h"

#include <cmath>
#include <fstream>
#include <numeric>
#include <stdexcept>

#include "data/counter_rng.h"

namespace ppu::data {
namespace {

constexpr uint64_t kSplitTag = 0x73706c6974646f63ULL;

}  // namespace

std::vector<TextDocument> read_documents(const std::string& path, const std::string& separator) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": cannot open");
  std::vector<TextDocument> docs;
  TextDocument current;
  auto close = [&] {
    if (!current.empty()) docs.push_back(std::move(current));
    current.clear();
  };
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const bool boundary = separator.empty() ? line.empty() : line == separator;
    if (boundary) {
      close();
    } else {
      current.push_back(line);
    }
  }
  if (in.bad()) throw std::runtime_error(path + ": read failed");
  close();
  return docs;
}

DocumentSplit split_documents(const std::vector<uint64_t>& tokens, double val_fraction, uint64_t seed) {
  if (!(val_fraction > 0.0 && val_fraction < 1.0))
    throw std::invalid_argument("validation fraction must be in (0, 1), got " + std::to_string(val_fraction));
  std::vector<size_t> order(tokens.size());
  std::iota(order.begin(), order.end(), size_t{0});
  CounterRng rng(hash_combine(kSplitTag, seed));
  for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[uniform_below(rng.next(), i)]);

  const uint64_t total = std::accumulate(tokens.begin(), tokens.end(), uint64_t{0});
  const auto want = static_cast<uint64_t>(std::ceil(static_cast<double>(total) * val_fraction));
  DocumentSplit split;
  uint64_t in_val = 0;
  for (const size_t d : order) {
    if (in_val < want) {
      split.val.push_back(d);
      in_val += tokens[d];
    } else {
      split.train.push_back(d);
    }
  }
  if (split.val.empty() || split.train.empty() || in_val == total)
    throw std::invalid_argument(
        "cannot split " + std::to_string(tokens.size()) + " documents (" + std::to_string(total) +
        " tokens) into non-empty train and validation sets at fraction " + std::to_string(val_fraction));
  return split;
}

}  // namespace ppu::data
