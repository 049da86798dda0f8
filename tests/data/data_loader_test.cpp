// Every rank samples the whole train split by default (IID ranks); the contiguous mode partitions
// it; batches are a pure function of (seed, rank, index); evaluation reads windows spread over
// the whole val split. A two-"domain" dataset (disjoint token ranges, ordered by domain as a
// concatenation of sources is) shows which ranks and which evaluations see which domain.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <numeric>
#include <set>

#include "data/data_loader.h"
#include "data/dataset_dir.h"
#include "data/token_shard.h"
#include "test_dirs.h"

namespace ppu::data {
namespace {

using testing::ScratchDir;

// Token i is i, so every row reveals where it was read from.
TokenDataset iota_dataset(size_t train, size_t val) {
  TokenDataset ds;
  ds.train.resize(train);
  std::iota(ds.train.begin(), ds.train.end(), 0);
  ds.val.resize(val);
  std::iota(ds.val.begin(), ds.val.end(), 0);
  ds.vocab = static_cast<uint32_t>(std::max(train, val));
  return ds;
}

// Domain A is tokens [0, 100) in the first half of each split, domain B [100, 200) in the second.
TokenDataset two_domain_dataset(size_t train, size_t val) {
  TokenDataset ds;
  auto fill = [](std::vector<int32_t>& v, size_t n) {
    v.resize(n);
    for (size_t i = 0; i < n; ++i) v[i] = static_cast<int32_t>((i < n / 2 ? 0 : 100) + i % 100);
  };
  fill(ds.train, train);
  fill(ds.val, val);
  ds.vocab = 200;
  return ds;
}

// Rows of `b` that hold a domain-A token and rows that hold a domain-B token.
std::pair<int, int> domains_in(const TokenBatch& b) {
  int a = 0, bb = 0;
  for (int r = 0; r < b.batch; ++r) {
    const int32_t* row = &b.tokens[static_cast<size_t>(r) * (b.seq_len + 1)];
    a += std::any_of(row, row + b.seq_len + 1, [](int32_t t) { return t < 100; });
    bb += std::any_of(row, row + b.seq_len + 1, [](int32_t t) { return t >= 100; });
  }
  return {a, bb};
}

TEST(RankLoader, EveryRankSamplesTheWholeSplitByDefault) {
  const TokenDataset ds = iota_dataset(1003, 10);
  for (int world : {1, 4, 7}) {
    for (int rank = 0; rank < world; ++rank) {
      const RankLoader loader(ds, rank, world, 0, 4, 8);
      EXPECT_EQ(loader.region_begin(), 0u);
      EXPECT_EQ(loader.region_end(), 1003u);
    }
  }
}

TEST(RankLoader, IidRanksDrawFromBothDomainsAndContiguousRanksFromTheirOwn) {
  const TokenDataset ds = two_domain_dataset(80000, 10);
  const int K = 8, batch = 4, seq = 15;
  std::vector<std::vector<int32_t>> first_batches;
  for (int rank = 0; rank < K; ++rank) {
    RankLoader iid(ds, rank, K, 7, batch, seq);
    RankLoader contiguous(ds, rank, K, 7, batch, seq, RankSampling::Contiguous);
    int iid_a = 0, iid_b = 0, cont_a = 0, cont_b = 0;
    for (int i = 0; i < 50; ++i) {
      const auto [a, b] = domains_in(iid.next());
      iid_a += a;
      iid_b += b;
      const auto [ca, cb] = domains_in(contiguous.next());
      cont_a += ca;
      cont_b += cb;
    }
    // 200 rows drawn uniformly from a split that is half A, half B: each count is Binomial(200,
    // 1/2) (mean 100, σ ≈ 7.1); 60 is 5.7σ below the mean.
    EXPECT_GT(iid_a, 60) << "rank " << rank;
    EXPECT_GT(iid_b, 60) << "rank " << rank;
    // Contiguous: ranks 0-3 own the A half, ranks 4-7 the B half, and see nothing else.
    EXPECT_EQ(cont_a, rank < K / 2 ? 200 : 0) << "rank " << rank;
    EXPECT_EQ(cont_b, rank < K / 2 ? 0 : 200) << "rank " << rank;
    first_batches.push_back(iid.batch_at(0).tokens);
  }
  // A different stream per rank.
  EXPECT_EQ(std::set<std::vector<int32_t>>(first_batches.begin(), first_batches.end()).size(), static_cast<size_t>(K));
}

TEST(RankLoader, ContiguousRegionsAreDisjointAndCoverTheTrainSplit) {
  const TokenDataset ds = iota_dataset(1003, 10);
  for (int world : {1, 2, 3, 4, 7}) {
    uint64_t expected_begin = 0;
    for (int rank = 0; rank < world; ++rank) {
      const RankLoader loader(ds, rank, world, 0, 4, 8, RankSampling::Contiguous);
      EXPECT_EQ(loader.region_begin(), expected_begin) << world << "/" << rank;
      EXPECT_GT(loader.region_end(), loader.region_begin());
      const uint64_t size = loader.region_end() - loader.region_begin();
      EXPECT_LE(size, 1003u / world + 1);  // equal parts up to rounding
      EXPECT_GE(size, 1003u / world);
      expected_begin = loader.region_end();
    }
    EXPECT_EQ(expected_begin, 1003u) << "world " << world;
  }
}

TEST(RankLoader, ContiguousBatchesStayInsideTheRankRegion) {
  const TokenDataset ds = iota_dataset(10000, 10);
  const int batch = 8, seq = 31;
  for (int rank = 0; rank < 4; ++rank) {
    RankLoader loader(ds, rank, 4, 123, batch, seq, RankSampling::Contiguous);
    std::set<int32_t> starts;
    for (int i = 0; i < 50; ++i) {
      const TokenBatch b = loader.next();
      ASSERT_EQ(b.batch, batch);
      ASSERT_EQ(b.seq_len, seq);
      ASSERT_EQ(b.tokens.size(), static_cast<size_t>(batch * (seq + 1)));
      for (int r = 0; r < batch; ++r) {
        const int32_t* row = &b.tokens[static_cast<size_t>(r) * (seq + 1)];
        ASSERT_GE(static_cast<uint64_t>(row[0]), loader.region_begin());
        ASSERT_LE(static_cast<uint64_t>(row[seq]), loader.region_end() - 1);
        for (int j = 1; j <= seq; ++j) ASSERT_EQ(row[j], row[0] + j);  // contiguous window
        starts.insert(row[0]);
      }
    }
    // 400 draws from ~2470 start positions: nearly all distinct if sampling is uniform-ish.
    // Uniform draws from N = 2469 starts leave N·(1 − (1 − 1/N)^400) = 369.3 distinct on average
    // (σ ≈ 5.0), so 300 is 14 σ below; deterministic anyway (counter-based RNG, the same draws on
    // every platform).
    EXPECT_GT(starts.size(), 300u);
  }
}

TEST(RankLoader, SeekResumesExactly) {
  const TokenDataset ds = iota_dataset(5000, 10);
  for (const auto sampling : {RankSampling::Iid, RankSampling::Contiguous}) {
    RankLoader uninterrupted(ds, 1, 3, 42, 4, 16, sampling);
    std::vector<TokenBatch> reference;
    reference.reserve(20);
    for (int i = 0; i < 20; ++i) reference.push_back(uninterrupted.next());
    EXPECT_EQ(uninterrupted.position(), 20u);

    RankLoader resumed(ds, 1, 3, 42, 4, 16, sampling);  // as after a restart from a checkpoint at 7
    resumed.seek(7);
    for (int i = 7; i < 20; ++i) {
      EXPECT_EQ(resumed.position(), static_cast<uint64_t>(i));
      EXPECT_EQ(resumed.next().tokens, reference[i].tokens) << "batch " << i;
    }
    // Seeking backwards replays too.
    resumed.seek(3);
    EXPECT_EQ(resumed.next().tokens, reference[3].tokens);
    EXPECT_EQ(resumed.batch_at(19).tokens, reference[19].tokens);
  }
}

TEST(RankLoader, SeedAndRankChangeTheBatches) {
  const TokenDataset ds = iota_dataset(5000, 10);
  const auto a = RankLoader(ds, 0, 1, 1, 4, 16).batch_at(0).tokens;
  EXPECT_NE(a, RankLoader(ds, 0, 1, 2, 4, 16).batch_at(0).tokens);
  EXPECT_NE(a, RankLoader(ds, 0, 1, 1, 4, 16).batch_at(1).tokens);
  EXPECT_EQ(a, RankLoader(ds, 0, 1, 1, 4, 16).batch_at(0).tokens);
}

TEST(RankLoader, TooSmallRegionNamesRankAndSizes) {
  const TokenDataset ds = iota_dataset(100, 10);
  try {
    RankLoader(ds, 3, 4, 0, 2, 30, RankSampling::Contiguous);
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("rank 3 of 4"), std::string::npos) << msg;
    EXPECT_NE(msg.find("25 of 100"), std::string::npos) << msg;
    EXPECT_NE(msg.find("31"), std::string::npos) << msg;
  }
  EXPECT_THROW(RankLoader(ds, 4, 4, 0, 2, 3), std::invalid_argument);
  EXPECT_THROW(RankLoader(ds, 0, 4, 0, 0, 3), std::invalid_argument);
  EXPECT_NO_THROW(RankLoader(ds, 3, 4, 0, 2, 24, RankSampling::Contiguous));  // exactly one window fits
  EXPECT_NO_THROW(RankLoader(ds, 3, 4, 0, 2, 30));                            // the whole split is the region when IID
}

TEST(TokenDataset, EvalBatchesAreFixedNonOverlappingWindows) {
  const TokenDataset ds = iota_dataset(100, 1000);
  const int seq = 9;  // windows of 10 tokens: 100 of them
  ASSERT_EQ(ds.eval_windows(seq), 100u);
  std::set<int32_t> starts;
  for (uint64_t i = 0; i < 25; ++i) {
    const TokenBatch b = ds.eval_batch(i, 4, seq, 25);
    EXPECT_EQ(b.tokens, ds.eval_batch(i, 4, seq, 25).tokens);
    for (int r = 0; r < 4; ++r) {
      const int32_t start = b.tokens[static_cast<size_t>(r) * 10];
      EXPECT_EQ(start % 10, 0);
      starts.insert(start);
    }
  }
  EXPECT_EQ(starts.size(), 100u);  // 25 batches x 4 rows visit every window once
  EXPECT_EQ(ds.eval_tokens(4, seq, 25), 1000u);
  // More rows than windows: they wrap.
  EXPECT_EQ(ds.eval_batch(25, 4, seq, 50).tokens, ds.eval_batch(0, 4, seq, 50).tokens);
  EXPECT_EQ(ds.eval_tokens(4, seq, 50), 1000u);
  EXPECT_THROW(ds.eval_batch(0, 1, 1000, 1), std::invalid_argument);
  EXPECT_THROW(ds.eval_batch(3, 4, seq, 3), std::invalid_argument);  // batch index past the evaluation
}

TEST(TokenDataset, EvalWindowsAreSpreadEvenlyOverTheWholeValSplit) {
  const TokenDataset ds = iota_dataset(100, 100000);
  const int seq = 9;  // 10000 windows
  const uint64_t batches = 8;
  const int batch = 4;  // 32 rows: every 312.5th window
  std::vector<int32_t> starts;
  for (uint64_t i = 0; i < batches; ++i) {
    const TokenBatch b = ds.eval_batch(i, batch, seq, batches);
    for (int r = 0; r < batch; ++r) starts.push_back(b.tokens[static_cast<size_t>(r) * 10]);
  }
  ASSERT_EQ(starts.size(), 32u);
  EXPECT_EQ(starts.front(), 0);
  EXPECT_GE(starts.back(), 100000 - 2 * 3130);  // the last stretch of the split is read
  for (size_t j = 1; j < starts.size(); ++j) {
    const int32_t gap = starts[j] - starts[j - 1];
    EXPECT_TRUE(gap == 3120 || gap == 3130) << j << ": " << gap;  // floor(j·W/M)·10, W/M = 312.5
  }
  EXPECT_EQ(ds.eval_tokens(batch, seq, batches), 320u);

  // Both halves of a two-domain val split are read, in equal measure.
  const TokenDataset two = two_domain_dataset(100, 100000);
  int a = 0, b = 0;
  for (uint64_t i = 0; i < batches; ++i) {
    const auto [da, db] = domains_in(two.eval_batch(i, batch, seq, batches));
    a += da;
    b += db;
  }
  EXPECT_EQ(a, 16);
  EXPECT_EQ(b, 16);
}

TEST(TokenDataset, SyntheticCarriesItsEntropyFloor) {
  SyntheticDatasetOptions o;
  o.corpus.vocab = 100;
  o.corpus.support = 10;
  o.train_tokens = 5000;
  o.val_tokens = 700;
  const TokenDataset ds = TokenDataset::synthetic(o);
  EXPECT_EQ(ds.train.size(), 5000u);
  EXPECT_EQ(ds.val.size(), 700u);
  EXPECT_EQ(ds.vocab, 100u);
  ASSERT_TRUE(ds.entropy_rate_nats.has_value());
  EXPECT_DOUBLE_EQ(*ds.entropy_rate_nats, SyntheticCorpus(o.corpus).entropy_rate_nats());
  EXPECT_NE(std::vector<int32_t>(ds.train.begin(), ds.train.begin() + 700), ds.val);
}

TEST(TokenDataset, DirectoryRoundTrip) {
  ScratchDir dir;
  SyntheticDatasetOptions o;
  o.train_tokens = 3000;
  o.val_tokens = 300;
  const TokenDataset ds = TokenDataset::synthetic(o);
  DatasetMeta meta;
  meta.vocab = ds.vocab;
  meta.source = "synthetic";
  meta.entropy_rate_nats = ds.entropy_rate_nats;
  meta.synthetic = o.corpus;
  write_dataset(dir.path().string(), meta, ds.train, ds.val);

  const TokenDataset back = TokenDataset::load(dir.path().string());
  EXPECT_EQ(back.train, ds.train);
  EXPECT_EQ(back.val, ds.val);
  EXPECT_EQ(back.vocab, ds.vocab);
  EXPECT_EQ(back.source, "synthetic");
  ASSERT_TRUE(back.entropy_rate_nats.has_value());
  EXPECT_DOUBLE_EQ(*back.entropy_rate_nats, *ds.entropy_rate_nats);
  const DatasetMeta m = read_dataset_meta(dir.path().string());
  ASSERT_TRUE(m.synthetic.has_value());
  EXPECT_EQ(m.synthetic->order, o.corpus.order);
  EXPECT_EQ(m.train_tokens, 3000u);
}

TEST(TokenDataset, LoadRejectsShardsThatDisagreeWithMeta) {
  ScratchDir dir;
  DatasetMeta meta;
  meta.vocab = 50;
  meta.source = "text";
  write_dataset(dir.path().string(), meta, std::vector<int32_t>(100, 1), {2, 3});
  write_token_shard(dir.file("val.bin"), {2, 3, 4}, 50);  // replaced behind meta's back
  try {
    TokenDataset::load(dir.path().string());
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("val.bin"), std::string::npos) << e.what();
  }
  std::filesystem::remove(dir.file("meta.json"));
  EXPECT_THROW(TokenDataset::load(dir.path().string()), std::runtime_error);
}

// The checks ppu-train --check runs before any work: the same ones load() starts with, and the
// vocabulary against model.vocab, each naming the directory and what is wrong with it.
TEST(TokenDataset, CheckNamesAMissingShardAndAVocabularyAboveTheModels) {
  ScratchDir dir;
  DatasetMeta meta;
  meta.vocab = 50;
  meta.source = "text";
  write_dataset(dir.path().string(), meta, std::vector<int32_t>(100, 1), {2, 3});
  EXPECT_EQ(TokenDataset::check(dir.path().string()).vocab, 50u);
  EXPECT_NO_THROW(TokenDataset::check_vocab(dir.path().string(), 50, 64));
  try {
    TokenDataset::check_vocab(dir.path().string(), 50, 32);
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("model.vocab is 32"), std::string::npos) << e.what();
  }
  std::filesystem::remove(dir.file("train.bin"));
  for (const auto& attempt :
       {+[](const std::string& d) { TokenDataset::check(d); }, +[](const std::string& d) { TokenDataset::load(d); }}) {
    try {
      attempt(dir.path().string());
      FAIL() << "no error";
    } catch (const ShardError& e) {
      EXPECT_NE(std::string(e.what()).find("train.bin is missing"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(dir.path().string()), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace ppu::data
