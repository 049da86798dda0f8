#include "export/spm_model.h"

#include <google/protobuf/unknown_field_set.h>

#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>

namespace ppu {

namespace {

using google::protobuf::UnknownField;
using google::protobuf::UnknownFieldSet;

// Field numbers of sentencepiece_model.proto (google/sentencepiece, src/).
namespace field {
constexpr int kPieces = 1, kTrainerSpec = 2, kNormalizerSpec = 3, kDenormalizerSpec = 5;  // ModelProto
constexpr int kPiece = 1, kScore = 2, kType = 3;                                          // ModelProto.SentencePiece
constexpr int kModelType = 3, kWhitespaceAsSuffix = 24, kByteFallback = 35, kUnkId = 40, kBosId = 41, kEosId = 42,
              kPadId = 43;  // TrainerSpec
constexpr int kName = 1, kCharsMap = 2, kDummyPrefix = 3, kRemoveExtraSpaces = 4,
              kEscapeSpaces = 5;  // NormalizerSpec
}  // namespace field

// A parsed message: each field number's occurrences in order. A singular field's value is its
// last occurrence (protobuf's "last one wins"); an absent one takes the proto's default.
struct Message {
  std::map<int, std::vector<const UnknownField*>> fields;

  const UnknownField* last(int number) const {
    auto it = fields.find(number);
    return it == fields.end() ? nullptr : it->second.back();
  }
  int varint(int number, int fallback) const {
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

// `set` must outlive the returned Message (it points into it).
Message parse(const std::string& bytes, UnknownFieldSet& set, const std::string& what) {
  if (!set.ParseFromString(bytes)) throw std::runtime_error(what + " does not parse as protobuf");
  Message m;
  for (int i = 0; i < set.field_count(); ++i) m.fields[set.field(i).number()].push_back(&set.field(i));
  return m;
}

}  // namespace

SpmModel read_spm_model(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot open the tokenizer model");
  std::stringstream raw;
  raw << in.rdbuf();
  UnknownFieldSet model_set, trainer_set, norm_set, denorm_set;
  const Message model = parse(raw.str(), model_set, path + ": the SentencePiece model");
  const Message trainer = parse(model.bytes(field::kTrainerSpec), trainer_set, path + ": trainer_spec");
  const Message norm = parse(model.bytes(field::kNormalizerSpec), norm_set, path + ": normalizer_spec");
  const Message denorm = parse(model.bytes(field::kDenormalizerSpec), denorm_set, path + ": denormalizer_spec");

  SpmModel out;
  const auto pieces = model.fields.find(field::kPieces);
  if (pieces == model.fields.end()) throw std::runtime_error(path + ": the SentencePiece model has no pieces");
  for (const UnknownField* f : pieces->second) {
    UnknownFieldSet piece_set;
    if (f->type() != UnknownField::TYPE_LENGTH_DELIMITED)
      throw std::runtime_error(path + ": piece " + std::to_string(out.pieces.size()) + " is not a message");
    const Message p = parse(f->length_delimited(), piece_set, path + ": piece " + std::to_string(out.pieces.size()));
    SpmPiece piece{p.bytes(field::kPiece), 0.0F, p.varint(field::kType, SpmPiece::kNormal)};
    if (const auto* s = p.last(field::kScore); s != nullptr && s->type() == UnknownField::TYPE_FIXED32) {
      const uint32_t bits = s->fixed32();
      std::memcpy(&piece.score, &bits, sizeof bits);
    }
    out.pieces.push_back(std::move(piece));
  }

  out.model_type = trainer.varint(field::kModelType, SpmModel::kUnigram);
  out.byte_fallback = trainer.flag(field::kByteFallback, false);
  out.treat_whitespace_as_suffix = trainer.flag(field::kWhitespaceAsSuffix, false);
  out.unk_id = trainer.varint(field::kUnkId, 0);
  out.bos_id = trainer.varint(field::kBosId, 1);
  out.eos_id = trainer.varint(field::kEosId, 2);
  out.pad_id = trainer.varint(field::kPadId, -1);
  out.normalizer_name = norm.bytes(field::kName);
  out.precompiled_charsmap = norm.bytes(field::kCharsMap);
  out.add_dummy_prefix = norm.flag(field::kDummyPrefix, true);
  out.remove_extra_whitespaces = norm.flag(field::kRemoveExtraSpaces, true);
  out.escape_whitespaces = norm.flag(field::kEscapeSpaces, true);
  out.denormalizer_charsmap = denorm.bytes(field::kCharsMap);
  return out;
}

}  // namespace ppu
