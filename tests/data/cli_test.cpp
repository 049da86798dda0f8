// ppu-data end to end: the directories it writes load back through TokenDataset.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>

#include "data/data_loader.h"
#include "data/dataset_dir.h"
#include "data/synthetic_corpus.h"
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
  const double frac = static_cast<double>(a.val.size()) / (a.train.size() + a.val.size());
  EXPECT_NEAR(frac, 0.1, 0.001);
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

}  // namespace
}  // namespace ppu::data
