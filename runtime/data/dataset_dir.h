// Dataset directory: train.bin + val.bin (token shards) + meta.json.
//
// meta.json keys: format ("ppu-token-dataset"), version (1), vocab, source ("synthetic" |
// "text"), entropy_rate_nats (number for synthetic data, null otherwise), tokenizer (file name
// inside the directory, "" when none), train_tokens, val_tokens, and per source either
// "synthetic" {vocab, order, support, zipf_exponent, seed} or "inputs" [paths].
// write_dataset writes meta.json last, so a directory with meta.json is complete.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "data/synthetic_corpus.h"

namespace ppu::data {

struct DatasetMeta {
  uint64_t vocab = 0;
  std::string source;                       // "synthetic" | "text"
  std::optional<double> entropy_rate_nats;  // the perplexity floor is exp() of it
  std::string tokenizer;                    // e.g. "tokenizer.model"; "" for synthetic
  uint64_t train_tokens = 0;
  uint64_t val_tokens = 0;
  std::optional<SyntheticCorpusOptions> synthetic;
  std::vector<std::string> inputs;  // text files the tokens came from
};

inline constexpr const char* kTrainShardName = "train.bin";
inline constexpr const char* kValShardName = "val.bin";
inline constexpr const char* kMetaName = "meta.json";

// Creates `dir` if needed. meta.train_tokens / val_tokens are set from the arrays.
void write_dataset(const std::string& dir, DatasetMeta meta, const std::vector<int32_t>& train,
                   const std::vector<int32_t>& val);

// Throws std::runtime_error naming the file and the missing or malformed key.
DatasetMeta read_dataset_meta(const std::string& dir);

}  // namespace ppu::data
