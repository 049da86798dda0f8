// ppu-data end to end: the directories it writes load back through TokenDataset.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>

#include "data/counter_rng.h"
#include "data/data_loader.h"
#include "data/dataset_dir.h"
#include "data/synthetic_corpus.h"
#include "data/text_documents.h"
#include "data/tokenizer.h"
#include "test_dirs.h"

namespace ppu::data {
namespace {

using testing::ScratchDir;

// Runs ppu-data with `args`; returns the exit status and captures stdout+stderr.
int ppu_data(const std::string& args, std::string* output) {
  const std::string cmd = std::string(PPU_DATA_BIN) + " " + args + " 2>&1";
  FILE* pipe = ::popen(cmd.c_str(), "r");
  if (!pipe) return -1;
  char buf[4096];
  size_t n;
  output->clear();
  while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) output->append(buf, n);
  const int status = ::pclose(pipe);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(PpuDataCli, SyntheticWritesALoadableDatasetAndPrintsTheFloor) {
  ScratchDir dir;
  const std::string out = dir.file("syn");
  std::string log;
  ASSERT_EQ(ppu_data("synthetic --out " + out +
                         " --vocab 128 --order 3 --support 12 --train-tokens 20000"
                         " --val-tokens 2000 --seed 5",
                     &log),
            0)
      << log;
  SyntheticCorpusOptions o;
  o.vocab = 128;
  o.order = 3;
  o.support = 12;
  o.seed = 5;
  const SyntheticCorpus corpus(o);
  char expected[64];
  std::snprintf(expected, sizeof expected, "%.6f nats", corpus.entropy_rate_nats());
  EXPECT_NE(log.find(expected), std::string::npos) << log;
  std::snprintf(expected, sizeof expected, "perplexity floor %.6f", std::exp(corpus.entropy_rate_nats()));
  EXPECT_NE(log.find(expected), std::string::npos) << log;

  const TokenDataset ds = TokenDataset::load(out);
  EXPECT_EQ(ds.train, corpus.generate(20000, 0));
  EXPECT_EQ(ds.val, corpus.generate(2000, 1));
  ASSERT_TRUE(ds.entropy_rate_nats.has_value());
  EXPECT_DOUBLE_EQ(*ds.entropy_rate_nats, corpus.entropy_rate_nats());
}

TEST(PpuDataCli, TextTrainsATokenizerThenReusesIt) {
  ScratchDir dir;
  {
    std::ifstream in(std::string(PPU_SHARED_DIR) + "/data/tinyshakespeare.txt");
    std::ofstream out(dir.file("excerpt.txt"));
    std::string line;
    for (int i = 0; i < 2000 && std::getline(in, line); ++i) out << line << "\n";
  }
  std::string log;
  ASSERT_EQ(ppu_data("text --input " + dir.file("excerpt.txt") + " --out " + dir.file("a") +
                         " --vocab 512 --val-fraction 0.1",
                     &log),
            0)
      << log;
  const TokenDataset a = TokenDataset::load(dir.file("a"));
  EXPECT_EQ(a.vocab, 512u);
  EXPECT_EQ(a.source, "text");
  EXPECT_FALSE(a.entropy_rate_nats.has_value());
  // Whole paragraphs go to val until it holds ceil(10 %) of the tokens: it overshoots by less than
  // the longest paragraph (its lines' tokens plus one </s> per line and one for the boundary).
  const Tokenizer tok = Tokenizer::load(dir.file("a/tokenizer.model"));
  size_t longest = 0;
  for (const auto& doc : read_documents(dir.file("excerpt.txt"), "")) {
    std::vector<int32_t> ids;
    tok.encode_lines(doc, ids);
    longest = std::max(longest, ids.size() + 1);
  }
  const auto want = static_cast<size_t>(std::ceil(0.1 * static_cast<double>(a.train.size() + a.val.size())));
  EXPECT_GE(a.val.size(), want);
  EXPECT_LT(a.val.size(), want + longest);
  EXPECT_EQ(read_dataset_meta(dir.file("a")).tokenizer, "tokenizer.model");

  // Reusing the tokenizer gives the same tokens; a contradicting --vocab is refused.
  ASSERT_EQ(ppu_data("text --input " + dir.file("excerpt.txt") + " --out " + dir.file("b") + " --tokenizer " +
                         dir.file("a/tokenizer.model") + " --val-fraction 0.1",
                     &log),
            0)
      << log;
  const TokenDataset b = TokenDataset::load(dir.file("b"));
  EXPECT_EQ(b.train, a.train);
  EXPECT_EQ(b.val, a.val);
  EXPECT_NE(ppu_data("text --input " + dir.file("excerpt.txt") + " --out " + dir.file("c") + " --tokenizer " +
                         dir.file("a/tokenizer.model") + " --vocab 999",
                     &log),
            0);
  EXPECT_NE(log.find("--vocab"), std::string::npos) << log;
}

// Two "domains" with disjoint alphabets (a-m and n-z), one file each, many paragraphs: the
// validation split holds both in proportion, and the train split is shuffled by document, so
// both its halves hold both domains (a concatenation in file order would give one to each).
TEST(PpuDataCli, TextSplitsWholeShuffledDocumentsFromEveryInput) {
  ScratchDir dir;
  uint64_t state = 12345;
  auto word = [&](char first) {
    std::string w;
    const int len = 3 + static_cast<int>((state = mix64(state)) % 5);
    for (int i = 0; i < len; ++i) w += static_cast<char>(first + (state = mix64(state)) % 13);
    return w;
  };
  for (const auto& [name, first] : {std::pair<std::string, char>{"a.txt", 'a'}, {"b.txt", 'n'}}) {
    std::ofstream out(dir.file(name));
    for (int doc = 0; doc < 300; ++doc) {
      for (int line = 0; line < 3; ++line) {
        for (int w = 0; w < 10; ++w) out << (w ? " " : "") << word(first);
        out << "\n";
      }
      out << "\n";
    }
  }
  std::string log;
  ASSERT_EQ(ppu_data("text --input " + dir.file("a.txt") + " --input " + dir.file("b.txt") + " --out " +
                         dir.file("ds") + " --vocab 320 --val-fraction 0.1 --seed 3",
                     &log),
            0)
      << log;
  EXPECT_NE(log.find("documents"), std::string::npos) << log;
  const TokenDataset ds = TokenDataset::load(dir.file("ds"));
  const Tokenizer tok = Tokenizer::load(dir.file("ds/tokenizer.model"));
  // Counts of domain-a and domain-b tokens in [begin, end) (control tokens decode to nothing).
  auto domains = [&](const std::vector<int32_t>& tokens, size_t begin, size_t end) {
    std::pair<int, int> n{0, 0};
    for (size_t i = begin; i < end; ++i) {
      for (const char ch : tok.decode({tokens[i]})) {
        if (ch >= 'a' && ch <= 'm') {
          ++n.first;
          break;
        }
        if (ch >= 'n' && ch <= 'z') {
          ++n.second;
          break;
        }
      }
    }
    return n;
  };
  // About 60 of the 600 equal-sized paragraphs are in val: each domain's count is hypergeometric
  // around 30 (σ ≈ 3.7); a fifth of the tokens (12 paragraphs) is 4.9σ below. Each train half
  // holds ~270 paragraphs (σ ≈ 5.8 around 135): a fifth is 9σ below.
  const auto [val_a, val_b] = domains(ds.val, 0, ds.val.size());
  EXPECT_GT(val_a, (val_a + val_b) / 5) << val_a << " " << val_b;
  EXPECT_GT(val_b, (val_a + val_b) / 5) << val_a << " " << val_b;
  const size_t half = ds.train.size() / 2;
  for (const auto& [begin, end] : {std::pair<size_t, size_t>{0, half}, {half, ds.train.size()}}) {
    const auto [a, b] = domains(ds.train, begin, end);
    EXPECT_GT(a, (a + b) / 5) << begin;
    EXPECT_GT(b, (a + b) / 5) << begin;
  }
  // The same seed gives the same split; another seed another one.
  ASSERT_EQ(
      ppu_data("text --input " + dir.file("a.txt") + " --input " + dir.file("b.txt") + " --out " + dir.file("again") +
                   " --tokenizer " + dir.file("ds/tokenizer.model") + " --val-fraction 0.1 --seed 3",
               &log),
      0)
      << log;
  EXPECT_EQ(TokenDataset::load(dir.file("again")).val, ds.val);
  ASSERT_EQ(
      ppu_data("text --input " + dir.file("a.txt") + " --input " + dir.file("b.txt") + " --out " + dir.file("other") +
                   " --tokenizer " + dir.file("ds/tokenizer.model") + " --val-fraction 0.1 --seed 4",
               &log),
      0)
      << log;
  EXPECT_NE(TokenDataset::load(dir.file("other")).val, ds.val);
}

}  // namespace
}  // namespace ppu::data
