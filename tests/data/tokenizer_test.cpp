// SentencePiece training on real text (tinyshakespeare) and encode/decode round trips.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>

#include "common/atomic_file.h"
#include "data/tokenizer.h"
#include "test_dirs.h"

namespace ppu::data {
namespace {

using testing::ScratchDir;

const std::string kShakespeare = std::string(PPU_SHARED_DIR) + "/data/tinyshakespeare.txt";

TEST(Tokenizer, TrainsOnShakespeareAndRoundTrips) {
  ASSERT_TRUE(std::filesystem::exists(kShakespeare)) << kShakespeare;
  ScratchDir dir;
  TokenizerTrainOptions opts;
  opts.vocab_size = 1024;
  const Tokenizer tok = Tokenizer::train({kShakespeare}, dir.file("t.model"), opts);
  EXPECT_EQ(tok.vocab_size(), 1024u);
  EXPECT_TRUE(std::filesystem::exists(dir.file("t.model")));

  for (const std::string line :
       {"First Citizen:", "Before we proceed any further, hear me speak.", "What say you, 1234 lords?"}) {
    const auto ids = tok.encode(line);
    ASSERT_FALSE(ids.empty());
    for (int32_t id : ids) {
      ASSERT_GE(id, 0);
      ASSERT_LT(id, 1024);
    }
    EXPECT_EQ(tok.decode(ids), line);
  }
  // Subword merges were learnt (256 of the pieces are byte fallbacks, the rest merges):
  // common English compresses to under half a token per character. A documented margin on a
  // count: byte fallback alone would take one token per character (45), whole-word pieces about
  // one per word (8 words, 2 punctuation marks); the bound 22 sits between. SentencePiece trains with
  // one thread (TokenizerTrainOptions::threads), so the pieces do not depend on the core count.
  const std::string sentence = "Before we proceed any further, hear me speak.";
  EXPECT_LT(tok.encode(sentence).size(), sentence.size() / 2);

  // A reloaded model encodes identically.
  const Tokenizer again = Tokenizer::load(dir.file("t.model"));
  EXPECT_EQ(again.encode(sentence), tok.encode(sentence));
}

TEST(Tokenizer, TrainingIsDeterministicAndEncodeFileEndsLinesWithEos) {
  ScratchDir dir;
  // A 3000-line excerpt keeps two trainings quick.
  {
    std::ifstream in(kShakespeare);
    std::ofstream out(dir.file("excerpt.txt"));
    std::string line;
    for (int i = 0; i < 3000 && std::getline(in, line); ++i) out << line << "\n";
  }
  TokenizerTrainOptions opts;
  opts.vocab_size = 512;
  const Tokenizer a = Tokenizer::train({dir.file("excerpt.txt")}, dir.file("a.model"), opts);
  const Tokenizer b = Tokenizer::train({dir.file("excerpt.txt")}, dir.file("b.model"), opts);
  // The .model embeds its own path, so compare the learnt pieces and scores (.vocab).
  EXPECT_EQ(read_file_bytes(dir.file("a.vocab")), read_file_bytes(dir.file("b.vocab")));

  std::vector<int32_t> ids;
  a.encode_file(dir.file("excerpt.txt"), ids);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), a.eos_id()), 3000);
  EXPECT_EQ(ids.back(), a.eos_id());
  // Decoding the first line's tokens (up to the first </s>) gives the first line back.
  const auto eos = std::find(ids.begin(), ids.end(), a.eos_id());
  EXPECT_EQ(a.decode(std::vector<int32_t>(ids.begin(), eos)), "First Citizen:");
}

TEST(Tokenizer, ErrorsNameTheFile) {
  ScratchDir dir;
  try {
    Tokenizer::load(dir.file("missing.model"));
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("missing.model"), std::string::npos) << e.what();
  }
  EXPECT_THROW(Tokenizer::train({dir.file("nope.txt")}, dir.file("x.model")), std::runtime_error);
  EXPECT_THROW(Tokenizer::train({kShakespeare}, dir.file("x.bin")), std::invalid_argument);
}

}  // namespace
}  // namespace ppu::data
