// hf_tokenizer_files on SentencePiece models built here field by field (sentencepiece_model.proto's
// numbers, protobuf's UnknownFieldSet): the settings ppu-export refuses are refused naming the
// setting, and an accepted model's files have the shape the Hugging Face libraries need. That the
// files give SentencePiece's ids is runtime_process.hf_tokenizer_parity's job (the real libraries).
#include <google/protobuf/unknown_field_set.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "export/hf_tokenizer.h"

namespace {

using google::protobuf::UnknownFieldSet;
using json = nlohmann::json;
using ppu::hf_tokenizer_files;

struct TestPiece {
  std::string text;
  float score;
  int type;  // 1 normal, 2 unknown, 3 control, 4 user-defined, 5 unused, 6 byte
};

// A small model: <unk> <s> </s>, the 256 byte pieces, then `normal` (normal pieces).
struct TestModel {
  int model_type = 2;  // BPE
  bool byte_fallback = true, whitespace_as_suffix = false;
  std::string norm_name = "identity", charsmap, denorm_charsmap;
  bool escape_whitespaces = true;
  std::vector<TestPiece> extra;
  std::vector<std::pair<std::string, float>> normal = {{"\u2581", -1},  {"a", -2},  {"b", -3},
                                                       {"\u2581a", -4}, {"ab", -5}, {"\u2581ab", -6}};
  bool drop_byte_0x41 = false;
};

std::string serialize(const UnknownFieldSet& set) {
  std::string out;
  set.SerializeToString(&out);
  return out;
}

std::string piece(const TestPiece& p) {
  UnknownFieldSet s;
  s.AddLengthDelimited(1, p.text);
  uint32_t bits = 0;
  std::memcpy(&bits, &p.score, sizeof bits);
  s.AddFixed32(2, bits);
  s.AddVarint(3, p.type);
  return serialize(s);
}

std::string write_model(const TestModel& m, const std::string& name) {
  UnknownFieldSet model, trainer, norm;
  std::vector<TestPiece> pieces = {{"<unk>", 0, 2}, {"<s>", 0, 3}, {"</s>", 0, 3}};
  for (int b = 0; b < 256; ++b) {
    char text[8];
    std::snprintf(text, sizeof text, "<0x%02X>", b);
    if (!(m.drop_byte_0x41 && b == 0x41)) pieces.push_back({text, 0, 6});
  }
  for (const auto& [text, score] : m.normal) pieces.push_back({text, score, 1});
  pieces.insert(pieces.end(), m.extra.begin(), m.extra.end());
  for (const auto& p : pieces) model.AddLengthDelimited(1, piece(p));
  trainer.AddVarint(3, m.model_type);
  trainer.AddVarint(24, m.whitespace_as_suffix ? 1 : 0);
  trainer.AddVarint(35, m.byte_fallback ? 1 : 0);
  norm.AddLengthDelimited(1, m.norm_name);
  if (!m.charsmap.empty()) norm.AddLengthDelimited(2, m.charsmap);
  norm.AddVarint(5, m.escape_whitespaces ? 1 : 0);
  model.AddLengthDelimited(2, serialize(trainer));
  model.AddLengthDelimited(3, serialize(norm));
  if (!m.denorm_charsmap.empty()) {
    UnknownFieldSet denorm;
    denorm.AddLengthDelimited(2, m.denorm_charsmap);
    model.AddLengthDelimited(5, serialize(denorm));
  }
  std::string path = (std::filesystem::temp_directory_path() / ("hf_tokenizer_test_" + name + ".model")).string();
  std::ofstream(path, std::ios::binary) << serialize(model);
  return path;
}

// The message hf_tokenizer_files throws for `m`, or "" when it accepts it.
std::string refusal(const TestModel& m, const std::string& name) {
  const std::string path = write_model(m, name);
  try {
    hf_tokenizer_files(path, 64);
  } catch (const std::runtime_error& e) {
    std::filesystem::remove(path);
    return e.what();
  }
  std::filesystem::remove(path);
  return "";
}

TEST(HfTokenizer, BpeFilesHaveTheShapeTransformersLoads) {
  const std::string path = write_model(TestModel{}, "bpe");
  const auto files = hf_tokenizer_files(path, 64);
  std::filesystem::remove(path);
  EXPECT_EQ(files.ids.unk, 0);
  EXPECT_EQ(files.ids.bos, 1);
  EXPECT_EQ(files.ids.eos, 2);
  EXPECT_EQ(files.ids.pad, -1);
  const json& cfg = files.tokenizer_config;
  EXPECT_EQ(cfg["tokenizer_class"], "GemmaTokenizer");
  EXPECT_TRUE(cfg["pad_token"].is_null());  // else GemmaTokenizer adds a "<pad>" of its own
  EXPECT_EQ(cfg["add_bos_token"], false);
  EXPECT_EQ(cfg["split_special_tokens"], true);
  EXPECT_EQ(cfg["model_max_length"], 64);
  EXPECT_FALSE(files.special_tokens_map.contains("pad_token"));
  const json& tok = files.tokenizer;
  EXPECT_EQ(tok["model"]["type"], "BPE");
  EXPECT_EQ(tok["model"]["vocab"]["\u2581ab"], 3 + 256 + 5);
  // Every split of a piece into two pieces, best merged score first.
  const json merges = tok["model"]["merges"];
  ASSERT_EQ(merges.size(), 4U);
  EXPECT_EQ(merges[0], "\u2581 a");
  EXPECT_EQ(merges[1], "a b");
  EXPECT_TRUE((merges[2] == "\u2581 ab" && merges[3] == "\u2581a b") ||
              (merges[2] == "\u2581a b" && merges[3] == "\u2581 ab"));
  EXPECT_EQ(tok["added_tokens"].size(), 3U);
  // identity: no character map; the whitespace rules and the dummy prefix in the normalizer.
  const std::string normalizer = tok["normalizer"].dump();
  EXPECT_EQ(normalizer.find("Precompiled"), std::string::npos);
  EXPECT_NE(normalizer.find("Prepend"), std::string::npos);
  EXPECT_EQ(tok["pre_tokenizer"]["pretokenizers"][0]["prepend_scheme"], "never");
  EXPECT_EQ(tok["decoder"]["decoders"].back()["type"], "Strip");
}

TEST(HfTokenizer, UnigramKeepsControlAndBytePiecesOutOfSegmentations) {
  TestModel m;
  m.model_type = 1;
  m.normal = {{"\u2581", -1}, {"a", -2}, {"b", -3}, {"ab", -4}};
  const std::string path = write_model(m, "unigram");
  const auto files = hf_tokenizer_files(path, 64);
  std::filesystem::remove(path);
  const json& vocab = files.tokenizer["model"]["vocab"];
  ASSERT_EQ(vocab.size(), 3U + 256 + 4);
  // "<0x41>" is 6 characters: below six single pieces of the lowest score (-4).
  EXPECT_LT(vocab[3 + 0x41][1].get<double>(), 6 * -4.0);
  EXPECT_LT(vocab[1][1].get<double>(), 6 * -4.0);
  EXPECT_EQ(vocab[3 + 256 + 3][1].get<double>(), -4.0);
  EXPECT_EQ(files.tokenizer["pre_tokenizer"]["pretokenizers"][1]["type"], "Split");
}

TEST(HfTokenizer, RefusesWhatItCannotExpressNamingTheSetting) {
  const auto expect = [](const TestModel& m, const std::string& name, const std::string& setting) {
    const std::string why = refusal(m, name);
    EXPECT_NE(why.find(setting), std::string::npos) << name << ": " << why;
    EXPECT_NE(why.find("hf_tokenizer_test_" + name + ".model"), std::string::npos) << why;
  };
  TestModel m;
  m.byte_fallback = false;
  expect(m, "no_byte_fallback", "trainer_spec.byte_fallback=false");
  m = {};
  m.model_type = 3;
  expect(m, "word", "trainer_spec.model_type=WORD");
  m.model_type = 4;
  expect(m, "char", "trainer_spec.model_type=CHAR");
  m = {};
  m.whitespace_as_suffix = true;
  expect(m, "suffix", "trainer_spec.treat_whitespace_as_suffix=true");
  m = {};
  m.escape_whitespaces = false;
  expect(m, "unescaped", "normalizer_spec.escape_whitespaces=false");
  m = {};
  m.extra = {{"<sep>", 0, 4}};
  expect(m, "user_defined", "trainer_spec.user_defined_symbols");
  m = {};
  m.extra = {{"zz", -9, 5}};
  expect(m, "unused", "UNUSED");
  m = {};
  m.norm_name = "user_defined";
  m.charsmap = "not looked at";
  expect(m, "rule_tsv", "normalizer_spec.name=user_defined");
  m = {};
  m.denorm_charsmap = "not looked at";
  expect(m, "denormalizer", "denormalizer_spec");
  m = {};
  m.normal.emplace_back("ba", -6);  // the score of "▁ab"
  expect(m, "tie", "share the score");
  m = {};
  m.drop_byte_0x41 = true;
  expect(m, "no_0x41", "<0x41> is missing");
  m = {};
  m.model_type = 1;
  m.normal = {{"\u2581", -1}, {"a", -2}, {"ac", -3}};
  expect(m, "unigram_inner", "U+0063 occurs inside pieces");
  EXPECT_EQ(refusal(TestModel{}, "accepted"), "");
}

TEST(HfTokenizer, UnreadableModelsNameTheFile) {
  const std::string path = (std::filesystem::temp_directory_path() / "hf_tokenizer_test_garbage.model").string();
  std::ofstream(path, std::ios::binary) << "\xff\xff\xff not a protobuf";
  try {
    hf_tokenizer_files(path, 64);
    ADD_FAILURE() << "garbage accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
  std::filesystem::remove(path);
  EXPECT_THROW(hf_tokenizer_files(path, 64), std::runtime_error);  // missing
}

}  // namespace
