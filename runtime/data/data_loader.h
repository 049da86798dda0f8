// Training data for one rank: the token dataset in memory and a resumable per-rank sampler.
//
// TokenDataset: train and val token arrays, vocab, and the entropy floor when known (the
// synthetic corpus). Built from a dataset directory (see dataset_dir.h) or generated in memory.
// eval_batch(i, B, S, n) reads batch i of an evaluation of n batches: its B·n windows are spread
// evenly over the whole val split (not its first stretch), identical on every rank.
//
// RankLoader: batch i is a pure function of (seed, rank, i): B window starts drawn uniformly
// (with replacement) from a counter-based hash. RankSampling::Iid (the default) draws them from
// the whole train split, a different stream per (seed, rank), as DistributedSampler(shuffle=True)
// users expect; RankSampling::Contiguous draws them only inside D_k = [floor(kN/K),
// floor((k+1)N/K)), the k-th contiguous 1/K of the N train tokens (disjoint regions covering the
// split: non-IID ranks when the split is ordered by source). position()/seek() resume a run
// exactly, and no state other than the batch index needs checkpointing. Windows are seq_len + 1
// tokens; inputs are tokens[:, :-1] and targets tokens[:, 1:].
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "data/dataset_dir.h"
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
  // What load() checks without reading the shards (meta.json readable, both shards present),
  // for a check before any work (ppu-train --check): returns the metadata, throws ShardError.
  static DatasetMeta check(const std::string& dir);
  // Throws ConfigError (exit 2) when a dataset's vocabulary exceeds model.vocab.
  static void check_vocab(const std::string& dir, uint64_t dataset_vocab, int model_vocab);
  // Train is stream 0 and val stream 1 of the same process.
  static TokenDataset synthetic(const SyntheticDatasetOptions& options);

  // Number of distinct eval windows of seq_len + 1 tokens in the val split.
  uint64_t eval_windows(int seq_len) const;
  // Batch i of an evaluation of `batches` batches. Row j = i·batch + b of the M = batch·batches
  // rows is window floor(j·W/M) when M <= W = eval_windows(seq_len) (evenly spaced over the
  // split, each window at most once), else window j mod W. Windows start at multiples of
  // seq_len + 1. Throws std::invalid_argument if the val split is shorter than one window or
  // i >= batches.
  TokenBatch eval_batch(uint64_t i, int batch, int seq_len, uint64_t batches) const;
  // Distinct val tokens one such evaluation reads: min(M, W)·(seq_len + 1).
  uint64_t eval_tokens(int batch, int seq_len, uint64_t batches) const;

 private:
  static TokenDataset load_checked(const std::string& dir);
};

enum class RankSampling { Iid, Contiguous };

class RankLoader {
 public:
  // `dataset` must outlive the loader. Throws std::invalid_argument naming the rank and the
  // sizes when the rank's region is shorter than seq_len + 1, or when an argument is out of range.
  RankLoader(const TokenDataset& dataset, int rank, int world_size, uint64_t seed, int batch, int seq_len,
             RankSampling sampling = RankSampling::Iid);

  TokenBatch next();                      // batch position(), then advances
  TokenBatch batch_at(uint64_t i) const;  // batch i, without moving
  uint64_t position() const { return position_; }
  void seek(uint64_t position) { position_ = position; }

  // The tokens window starts are drawn from: [0, N) for Iid, D_k for Contiguous.
  uint64_t region_begin() const { return begin_; }
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
