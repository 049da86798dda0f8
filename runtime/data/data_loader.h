// Training data for one rank: the token dataset in memory and a resumable per-rank sampler.
//
// TokenDataset: train and val token arrays, vocab, and the entropy floor when known (the
// synthetic corpus). Built from a dataset directory (see dataset_dir.h) or generated in memory.
// eval_batch(i) reads fixed, non-overlapping windows of the val split: identical on every rank.
//
// RankLoader: rank k of K owns the contiguous region D_k = [floor(kN/K), floor((k+1)N/K)) of
// the N train tokens; the regions are disjoint and cover the train split. Batch i is a pure
// function of (seed, rank, i): B window starts drawn uniformly (with replacement) inside D_k
// from a counter-based hash. So position()/seek() resume a run exactly, and no state other
// than the batch index needs checkpointing. Windows are seq_len + 1 tokens; inputs are
// tokens[:, :-1] and targets tokens[:, 1:].
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "data/synthetic_corpus.h"

namespace ppu::data {

struct TokenBatch {
  int batch = 0;
  int seq_len = 0;
  std::vector<int32_t> tokens;  // row-major [batch, seq_len + 1]
};

struct SyntheticDatasetOptions {
  SyntheticCorpusOptions corpus;
  uint64_t train_tokens = 2000000;
  uint64_t val_tokens = 100000;
};

struct TokenDataset {
  std::vector<int32_t> train;
  std::vector<int32_t> val;
  uint32_t vocab = 0;
  std::optional<double> entropy_rate_nats;  // exact floor for synthetic data
  std::string source;                       // "synthetic" | "text"

  // Reads DIR/meta.json, DIR/train.bin, DIR/val.bin and checks they agree. Throws ShardError
  // naming the directory or file for every fault (missing, unreadable, malformed, inconsistent).
  static TokenDataset load(const std::string& dir);
  // Train is stream 0 and val stream 1 of the same process.
  static TokenDataset synthetic(const SyntheticDatasetOptions& options);

  // Number of distinct eval windows of seq_len + 1 tokens in the val split.
  uint64_t eval_windows(int seq_len) const;
  // Rows are windows (i * batch + b) mod eval_windows(seq_len), each starting at a multiple
  // of seq_len + 1. Throws std::invalid_argument if the val split is shorter than one window.
  TokenBatch eval_batch(uint64_t i, int batch, int seq_len) const;

 private:
  static TokenDataset load_checked(const std::string& dir);
};

class RankLoader {
 public:
  // `dataset` must outlive the loader. Throws std::invalid_argument naming the rank and the
  // sizes when D_k is shorter than seq_len + 1, or when an argument is out of range.
  RankLoader(const TokenDataset& dataset, int rank, int world_size, uint64_t seed, int batch, int seq_len);

  TokenBatch next();                      // batch position(), then advances
  TokenBatch batch_at(uint64_t i) const;  // batch i, without moving
  uint64_t position() const { return position_; }
  void seek(uint64_t position) { position_ = position; }

  uint64_t region_begin() const { return begin_; }  // D_k = [region_begin, region_end)
  uint64_t region_end() const { return end_; }

 private:
  const TokenDataset* dataset_;
  int rank_;
  uint64_t seed_;
  int batch_;
  int seq_len_;
  uint64_t begin_ = 0;
  uint64_t end_ = 0;
  uint64_t position_ = 0;
};

}  // namespace ppu::data
