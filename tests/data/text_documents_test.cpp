// Documents of a text file and their seeded train/validation split (text_documents.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <numeric>

#include "data/text_documents.h"
#include "test_dirs.h"

namespace ppu::data {
namespace {

using testing::ScratchDir;

TEST(TextDocuments, ParagraphsOrSeparatorLinesEndDocuments) {
  ScratchDir dir;
  {
    std::ofstream out(dir.file("t.txt"));
    out << "one a\r\none b\n\n\ntwo a\n\fthree a\n\n";
  }
  const auto paragraphs = read_documents(dir.file("t.txt"), "");
  ASSERT_EQ(paragraphs.size(), 2u);
  EXPECT_EQ(paragraphs[0], (TextDocument{"one a", "one b"}));  // '\r' stripped, blank runs collapse
  EXPECT_EQ(paragraphs[1], (TextDocument{"two a", "\fthree a"}));
  const auto by_separator = read_documents(dir.file("t.txt"), "two a");
  ASSERT_EQ(by_separator.size(), 2u);
  EXPECT_EQ(by_separator[0], (TextDocument{"one a", "one b", "", ""}));
  EXPECT_EQ(by_separator[1], (TextDocument{"\fthree a", ""}));
  EXPECT_THROW(read_documents(dir.file("missing.txt"), ""), std::runtime_error);
}

TEST(TextDocuments, SplitTakesWholeShuffledDocumentsUntilTheFraction) {
  std::vector<uint64_t> tokens(1000);
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = 1 + (i * 37) % 50;
  const uint64_t total = std::accumulate(tokens.begin(), tokens.end(), uint64_t{0});
  const auto split = split_documents(tokens, 0.05, 9);
  // Disjoint and covering.
  std::vector<size_t> all = split.train;
  all.insert(all.end(), split.val.begin(), split.val.end());
  std::sort(all.begin(), all.end());
  std::vector<size_t> every(tokens.size());
  std::iota(every.begin(), every.end(), size_t{0});
  EXPECT_EQ(all, every);
  // At least the fraction, and less than one more document past it.
  uint64_t val = 0;
  for (const size_t d : split.val) val += tokens[d];
  const auto want = static_cast<uint64_t>(std::ceil(0.05 * static_cast<double>(total)));
  EXPECT_GE(val, want);
  EXPECT_LT(val - tokens[split.val.back()], want);
  // Shuffled: validation is not a prefix or suffix of the input order, and train is not sorted.
  // About 50 documents reach val (5 % of 25 500 tokens, 25.5 per document): a uniform shuffle puts
  // none of them in the first quarter with probability 0.75^50 ≈ 6e-7, and likewise for the last;
  // deterministic for seed 9 on every platform (counter-based RNG).
  EXPECT_FALSE(std::is_sorted(split.train.begin(), split.train.end()));
  EXPECT_LT(*std::min_element(split.val.begin(), split.val.end()), 250u);
  EXPECT_GT(*std::max_element(split.val.begin(), split.val.end()), 750u);
  // A pure function of the seed.
  EXPECT_EQ(split_documents(tokens, 0.05, 9).val, split.val);
  EXPECT_NE(split_documents(tokens, 0.05, 10).val, split.val);
}

TEST(TextDocuments, SplitRefusesAnEmptySplit) {
  EXPECT_THROW(split_documents({100}, 0.1, 0), std::invalid_argument);
  EXPECT_THROW(split_documents({}, 0.1, 0), std::invalid_argument);
  EXPECT_THROW(split_documents({5, 5}, 1.0, 0), std::invalid_argument);
  EXPECT_NO_THROW(split_documents({5, 5}, 0.1, 0));
}

}  // namespace
}  // namespace ppu::data
