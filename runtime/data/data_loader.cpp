#include "data/data_loader.h"

#include <algorithm>
#include <filesystem>
#include <stdexcept>
#include <string>

#include "data/counter_rng.h"
#include "data/dataset_dir.h"
#include "data/token_shard.h"

namespace ppu::data {
namespace {

constexpr uint64_t kLoaderTag = 0x6c6f616465722121ULL;

void check_shape(const char* who, int batch, int seq_len) {
  if (batch < 1) throw std::invalid_argument(std::string(who) + ": batch must be >= 1, got " + std::to_string(batch));
  if (seq_len < 1)
    throw std::invalid_argument(std::string(who) + ": seq_len must be >= 1, got " + std::to_string(seq_len));
}

}  // namespace

TokenDataset TokenDataset::load(const std::string& dir) {
  // Every way a dataset can be unusable is a ShardError (ppu-train exit code 4: the operator
  // fails the job at once instead of gang-restarting a run that can never start).
  try {
    return load_checked(dir);
  } catch (const ShardError&) {
    throw;
  } catch (const std::exception& e) {
    throw ShardError("dataset '" + dir + "': " + e.what());
  }
}

DatasetMeta TokenDataset::check(const std::string& dir) {
  namespace fs = std::filesystem;
  if (dir.empty()) throw ShardError("dataset path is empty (set data.path)");
  if (!fs::is_directory(dir)) throw ShardError("dataset '" + dir + "': no such directory");
  DatasetMeta meta;
  try {
    meta = read_dataset_meta(dir);
  } catch (const ShardError&) {
    throw;
  } catch (const std::exception& e) {
    throw ShardError("dataset '" + dir + "': " + e.what());
  }
  for (const char* shard : {kTrainShardName, kValShardName})
    if (!fs::is_regular_file(fs::path(dir) / shard))
      throw ShardError("dataset '" + dir + "': " + shard + " is missing");
  return meta;
}

void TokenDataset::check_vocab(const std::string& dir, uint64_t dataset_vocab, int model_vocab) {
  if (dataset_vocab > static_cast<uint64_t>(model_vocab))
    throw ConfigError("data.path '" + dir + "' has vocabulary " + std::to_string(dataset_vocab) +
                      " but model.vocab is " + std::to_string(model_vocab));
}

TokenDataset TokenDataset::load_checked(const std::string& dir) {
  namespace fs = std::filesystem;
  const DatasetMeta meta = check(dir);
  TokenShard train = read_token_shard((fs::path(dir) / kTrainShardName).string());
  TokenShard val = read_token_shard((fs::path(dir) / kValShardName).string());
  auto agree = [&](const char* name, uint64_t shard_value, uint64_t meta_value, const char* what) {
    if (shard_value != meta_value)
      throw std::runtime_error((fs::path(dir) / name).string() + ": " + what + " " + std::to_string(shard_value) +
                               " disagrees with meta.json (" + std::to_string(meta_value) + ")");
  };
  agree(kTrainShardName, train.vocab, meta.vocab, "vocab");
  agree(kValShardName, val.vocab, meta.vocab, "vocab");
  agree(kTrainShardName, train.tokens.size(), meta.train_tokens, "token count");
  agree(kValShardName, val.tokens.size(), meta.val_tokens, "token count");

  TokenDataset ds;
  ds.train = std::move(train.tokens);
  ds.val = std::move(val.tokens);
  ds.vocab = static_cast<uint32_t>(meta.vocab);
  ds.entropy_rate_nats = meta.entropy_rate_nats;
  ds.source = meta.source;
  return ds;
}

TokenDataset TokenDataset::synthetic(const SyntheticDatasetOptions& options) {
  const SyntheticCorpus corpus(options.corpus);
  TokenDataset ds;
  ds.train = corpus.generate(options.train_tokens, 0);
  ds.val = corpus.generate(options.val_tokens, 1);
  ds.vocab = options.corpus.vocab;
  ds.entropy_rate_nats = corpus.entropy_rate_nats();
  ds.source = "synthetic";
  return ds;
}

uint64_t TokenDataset::eval_windows(int seq_len) const {
  if (seq_len < 1) return 0;
  return val.size() / (static_cast<uint64_t>(seq_len) + 1);
}

TokenBatch TokenDataset::eval_batch(uint64_t i, int batch, int seq_len, uint64_t batches) const {
  check_shape("eval_batch", batch, seq_len);
  if (i >= batches)
    throw std::invalid_argument("eval_batch: batch " + std::to_string(i) + " of an evaluation of " +
                                std::to_string(batches) + " batches");
  const uint64_t window = static_cast<uint64_t>(seq_len) + 1;
  const uint64_t windows = eval_windows(seq_len);
  if (windows == 0)
    throw std::invalid_argument("eval_batch: val split has " + std::to_string(val.size()) +
                                " tokens, fewer than one window of seq_len+1 = " + std::to_string(window));
  const auto rows = static_cast<unsigned __int128>(batches) * static_cast<uint64_t>(batch);
  TokenBatch out{batch, seq_len, {}};
  out.tokens.reserve(batch * window);
  for (int b = 0; b < batch; ++b) {
    const auto j = static_cast<unsigned __int128>(i) * static_cast<uint64_t>(batch) + static_cast<uint64_t>(b);
    // Spread over the whole split when there are enough windows: a val split built from many
    // sources is read from every one of them, not from whichever comes first.
    const uint64_t w = rows <= windows ? static_cast<uint64_t>(j * windows / rows) : static_cast<uint64_t>(j % windows);
    const auto start = val.begin() + static_cast<std::ptrdiff_t>(w * window);
    out.tokens.insert(out.tokens.end(), start, start + static_cast<std::ptrdiff_t>(window));
  }
  return out;
}

uint64_t TokenDataset::eval_tokens(int batch, int seq_len, uint64_t batches) const {
  if (batch < 1 || seq_len < 1) return 0;
  const uint64_t rows = batches * static_cast<uint64_t>(batch);
  return std::min(rows, eval_windows(seq_len)) * (static_cast<uint64_t>(seq_len) + 1);
}

RankLoader::RankLoader(const TokenDataset& dataset, int rank, int world_size, uint64_t seed, int batch, int seq_len,
                       RankSampling sampling)
    : dataset_(&dataset), rank_(rank), seed_(seed), batch_(batch), seq_len_(seq_len) {
  check_shape("RankLoader", batch, seq_len);
  if (world_size < 1 || rank < 0 || rank >= world_size)
    throw std::invalid_argument("RankLoader: rank " + std::to_string(rank) +
                                " is not in [0, world_size=" + std::to_string(world_size) + ")");
  const uint64_t n = dataset.train.size();
  end_ = n;
  if (sampling == RankSampling::Contiguous) {
    const auto k = static_cast<unsigned __int128>(rank);
    const auto kk = static_cast<unsigned __int128>(world_size);
    begin_ = static_cast<uint64_t>(k * n / kk);
    end_ = static_cast<uint64_t>((k + 1) * n / kk);
  }
  const uint64_t window = static_cast<uint64_t>(seq_len) + 1;
  if (end_ - begin_ < window)
    throw std::invalid_argument("RankLoader: rank " + std::to_string(rank) + " of " + std::to_string(world_size) +
                                " gets " + std::to_string(end_ - begin_) + " of " + std::to_string(n) +
                                " train tokens, fewer than one window of seq_len+1 = " + std::to_string(window));
}

TokenBatch RankLoader::next() { return batch_at(position_++); }

TokenBatch RankLoader::batch_at(uint64_t i) const {
  const uint64_t window = static_cast<uint64_t>(seq_len_) + 1;
  const uint64_t starts = end_ - begin_ - window + 1;
  // A fresh generator per (seed, rank, batch): no dependence on earlier batches.
  CounterRng rng(hash_combine(hash_combine(hash_combine(kLoaderTag, seed_), static_cast<uint64_t>(rank_)), i));
  TokenBatch out{batch_, seq_len_, {}};
  out.tokens.reserve(static_cast<size_t>(batch_) * window);
  for (int b = 0; b < batch_; ++b) {
    const uint64_t start = begin_ + uniform_below(rng.next(), starts);
    const auto it = dataset_->train.begin() + static_cast<std::ptrdiff_t>(start);
    out.tokens.insert(out.tokens.end(), it, it + static_cast<std::ptrdiff_t>(window));
  }
  return out;
}

}  // namespace ppu::data
