#include "export/hf_tokenizer.h"

#include <google/protobuf/unknown_field_set.h>
#include <openssl/evp.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <tuple>

namespace ppu {

namespace {

using json = nlohmann::json;
using google::protobuf::UnknownField;
using google::protobuf::UnknownFieldSet;

// Field numbers and enum values of SentencePiece's sentencepiece_model.proto (ModelProto).
namespace spm {
constexpr int kPieces = 1, kTrainerSpec = 2, kNormalizerSpec = 3;
constexpr int kPiece = 1, kScore = 2, kType = 3;  // ModelProto.SentencePiece
enum PieceType { kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6 };
constexpr int kModelType = 3, kSplitByWhitespace = 22, kWhitespaceAsSuffix = 24, kByteFallback = 35;  // TrainerSpec
constexpr int kUnkId = 40, kBosId = 41, kEosId = 42, kPadId = 43;
enum ModelType { kUnigram = 1, kBpe = 2 };
constexpr int kNormName = 1, kCharsMap = 2, kDummyPrefix = 3, kRemoveExtraSpaces = 4,
              kEscapeSpaces = 5;  // NormalizerSpec
}  // namespace spm

// A parsed message: for each field number its last value (proto3/proto2 "last one wins") and,
// for repeated fields, all of them.
struct Message {
  std::map<int, std::vector<const UnknownField*>> fields;
  const UnknownField* last(int number) const {
    auto it = fields.find(number);
    return it == fields.end() ? nullptr : it->second.back();
  }
  int64_t varint(int number, int64_t fallback) const {
    const auto* f = last(number);
    // int32 fields carry negative values as 64-bit two's complement varints.
    return f != nullptr && f->type() == UnknownField::TYPE_VARINT ? static_cast<int32_t>(f->varint()) : fallback;
  }
  bool flag(int number, bool fallback) const { return varint(number, fallback ? 1 : 0) != 0; }
  std::string bytes(int number) const {
    const auto* f = last(number);
    return f != nullptr && f->type() == UnknownField::TYPE_LENGTH_DELIMITED ? f->length_delimited() : "";
  }
};

Message index(const UnknownFieldSet& set) {
  Message m;
  for (int i = 0; i < set.field_count(); ++i) m.fields[set.field(i).number()].push_back(&set.field(i));
  return m;
}

std::string base64(const std::string& bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(bytes.data()), static_cast<int>(bytes.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

struct Piece {
  std::string text;
  float score = 0;
  int type = spm::kNormal;
};

// UTF-8 code point boundaries of `s` (byte offsets, excluding 0 and s.size()).
std::vector<size_t> inner_boundaries(const std::string& s) {
  std::vector<size_t> out;
  for (size_t i = 1; i < s.size(); ++i)
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80) out.push_back(i);
  return out;
}

// SentencePiece's BPE encoder merges, among adjacent symbols, the pair whose concatenation is
// the highest-scoring normal piece. As a BPE merge list: every split (left, right) of a normal
// piece into two normal pieces, ranked by the merged piece's score (then id, then the halves'
// ids, so equal scores keep a fixed order).
json bpe_merges(const std::vector<Piece>& pieces, const std::map<std::string, int>& normal_ids) {
  std::vector<std::tuple<float, int, int, int>> ranked;  // -score, merged, left, right
  for (const auto& [text, id] : normal_ids)
    for (size_t cut : inner_boundaries(text)) {
      auto l = normal_ids.find(text.substr(0, cut)), r = normal_ids.find(text.substr(cut));
      if (l != normal_ids.end() && r != normal_ids.end())
        ranked.emplace_back(-pieces[id].score, id, l->second, r->second);
    }
  std::sort(ranked.begin(), ranked.end());
  json merges = json::array();
  for (const auto& [score, id, l, r] : ranked) merges.push_back(pieces[l].text + " " + pieces[r].text);
  return merges;
}

json normalizer(const Message& norm) {
  json steps = json::array();
  const std::string charsmap = norm.bytes(spm::kCharsMap);
  if (!charsmap.empty()) steps.push_back({{"type", "Precompiled"}, {"precompiled_charsmap", base64(charsmap)}});
  if (norm.flag(spm::kRemoveExtraSpaces, true)) {  // no leading/trailing spaces, runs become one
    steps.push_back({{"type", "Strip"}, {"strip_left", true}, {"strip_right", true}});
    steps.push_back({{"type", "Replace"}, {"pattern", {{"Regex", " {2,}"}}}, {"content", " "}});
  }
  return {{"type", "Sequence"}, {"normalizers", steps}};
}

}  // namespace

HfTokenizerFiles hf_tokenizer_files(const std::string& path, int64_t model_max_length) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot open the tokenizer model");
  std::stringstream raw;
  raw << in.rdbuf();
  UnknownFieldSet model_set;
  if (!model_set.ParseFromString(raw.str())) throw std::runtime_error(path + ": not a SentencePiece model (protobuf)");
  const Message model = index(model_set);
  UnknownFieldSet trainer_set, norm_set;
  trainer_set.ParseFromString(model.bytes(spm::kTrainerSpec));
  norm_set.ParseFromString(model.bytes(spm::kNormalizerSpec));
  const Message trainer = index(trainer_set), norm = index(norm_set);

  std::vector<Piece> pieces;
  std::vector<UnknownFieldSet> piece_sets(model.fields.count(spm::kPieces) ? model.fields.at(spm::kPieces).size() : 0);
  for (size_t i = 0; i < piece_sets.size(); ++i) {
    const auto* f = model.fields.at(spm::kPieces)[i];
    if (f->type() != UnknownField::TYPE_LENGTH_DELIMITED || !piece_sets[i].ParseFromString(f->length_delimited()))
      throw std::runtime_error(path + ": piece " + std::to_string(i) + " does not parse");
    const Message p = index(piece_sets[i]);
    Piece piece{p.bytes(spm::kPiece), 0.0F, static_cast<int>(p.varint(spm::kType, spm::kNormal))};
    if (const auto* s = p.last(spm::kScore); s != nullptr && s->type() == UnknownField::TYPE_FIXED32) {
      const uint32_t bits = s->fixed32();
      std::memcpy(&piece.score, &bits, sizeof bits);
    }
    pieces.push_back(std::move(piece));
  }
  if (pieces.empty()) throw std::runtime_error(path + ": the SentencePiece model has no pieces");

  const auto type = trainer.varint(spm::kModelType, spm::kUnigram);
  if (type != spm::kBpe && type != spm::kUnigram)
    throw std::runtime_error(path + ": SentencePiece model type " + std::to_string(type) +
                             " has no exact Hugging Face equivalent (BPE and Unigram do)");
  if (trainer.flag(spm::kWhitespaceAsSuffix, false) || !norm.flag(spm::kEscapeSpaces, true) ||
      !trainer.flag(spm::kSplitByWhitespace, true))
    throw std::runtime_error(
        path + ": the model's whitespace handling (suffix, unescaped or unsplit) is not exported exactly");
  const bool byte_fallback = trainer.flag(spm::kByteFallback, false);
  const bool dummy_prefix = norm.flag(spm::kDummyPrefix, true);

  HfTokenizerFiles out;
  out.ids = {static_cast<int>(trainer.varint(spm::kBosId, 1)), static_cast<int>(trainer.varint(spm::kEosId, 2)),
             static_cast<int>(trainer.varint(spm::kUnkId, 0)), static_cast<int>(trainer.varint(spm::kPadId, -1))};
  const auto piece_at = [&](int id) { return id >= 0 && id < static_cast<int>(pieces.size()) ? pieces[id].text : ""; };

  json added = json::array();
  std::map<std::string, int> normal_ids;
  for (size_t i = 0; i < pieces.size(); ++i) {
    if (pieces[i].type == spm::kControl || pieces[i].type == spm::kUnknown || pieces[i].type == spm::kUserDefined)
      added.push_back({{"id", i},
                       {"content", pieces[i].text},
                       {"single_word", false},
                       {"lstrip", false},
                       {"rstrip", false},
                       {"normalized", false},
                       {"special", pieces[i].type != spm::kUserDefined}});
    if (pieces[i].type == spm::kNormal) normal_ids.emplace(pieces[i].text, static_cast<int>(i));
  }

  json model_json;
  if (type == spm::kBpe) {
    json vocab = json::object();
    for (size_t i = 0; i < pieces.size(); ++i) vocab[pieces[i].text] = i;
    model_json = {{"type", "BPE"},
                  {"dropout", nullptr},
                  {"unk_token", piece_at(out.ids.unk)},
                  {"continuing_subword_prefix", nullptr},
                  {"end_of_word_suffix", nullptr},
                  {"fuse_unk", true},
                  {"byte_fallback", byte_fallback},
                  {"ignore_merges", false},
                  {"vocab", vocab},
                  {"merges", bpe_merges(pieces, normal_ids)}};
  } else {
    json vocab = json::array();
    for (const auto& p : pieces) vocab.push_back({p.text, p.score});
    model_json = {{"type", "Unigram"}, {"unk_id", out.ids.unk}, {"vocab", vocab}, {"byte_fallback", byte_fallback}};
  }

  const json metaspace = {{"type", "Metaspace"},
                          {"replacement", "\u2581"},
                          {"prepend_scheme", dummy_prefix ? "always" : "never"},
                          {"split", true}};
  json decoders = json::array({{{"type", "Replace"}, {"pattern", {{"String", "\u2581"}}}, {"content", " "}}});
  if (byte_fallback) decoders.push_back({{"type", "ByteFallback"}});
  decoders.push_back({{"type", "Fuse"}});
  if (dummy_prefix) decoders.push_back({{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}});
  out.tokenizer = {{"version", "1.0"},
                   {"truncation", nullptr},
                   {"padding", nullptr},
                   {"added_tokens", added},
                   {"normalizer", normalizer(norm)},
                   {"pre_tokenizer", metaspace},
                   {"post_processor", nullptr},
                   {"decoder", {{"type", "Sequence"}, {"decoders", decoders}}},
                   {"model", model_json}};

  json special = json::object();
  for (const auto& [key, id] : {std::pair{"bos_token", out.ids.bos}, std::pair{"eos_token", out.ids.eos},
                                std::pair{"unk_token", out.ids.unk}, std::pair{"pad_token", out.ids.pad}})
    if (id >= 0) special[key] = piece_at(id);
  out.special_tokens_map = special;
  out.tokenizer_config = special;
  out.tokenizer_config.update({
      // The SentencePiece-backed class and its fast twin: both load this directory.
      {"tokenizer_class", "LlamaTokenizer"},
      {"legacy", true},  // plain SentencePiece encoding, no extra handling after special tokens
      {"add_bos_token", false},
      {"add_eos_token", false},
      {"split_special_tokens", true},
      {"clean_up_tokenization_spaces", false},
      {"model_max_length", model_max_length},
  });
  return out;
}

}  // namespace ppu
