// spm_model: a SentencePiece .model file (its ModelProto) read into plain fields — the pieces
// and every setting that decides how a text is encoded and decoded — with each field at the
// default sentencepiece_model.proto gives it when the file leaves it out.
//
// The bytes are parsed without the schema (protobuf's UnknownFieldSet), by the field numbers of
// sentencepiece_model.proto (listed in spm_model.cpp): Debian ships SentencePiece's library but
// not the generated header of its model proto. Settings that only steer training
// (split_digits, split_by_unicode_script, character_coverage, ...) leave their trace in the
// pieces and are not read. Throws std::runtime_error naming the file when it cannot be read or
// is not a ModelProto with pieces.
#pragma once

#include <string>
#include <vector>

namespace ppu {

struct SpmPiece {
  enum Type { kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6 };
  std::string text;
  float score = 0;
  int type = kNormal;
};

struct SpmModel {
  enum ModelType { kUnigram = 1, kBpe = 2, kWord = 3, kChar = 4 };
  std::vector<SpmPiece> pieces;
  // TrainerSpec
  int model_type = kUnigram;
  bool byte_fallback = false;
  bool treat_whitespace_as_suffix = false;
  int unk_id = 0, bos_id = 1, eos_id = 2, pad_id = -1;  // -1: no such piece
  // NormalizerSpec: the rule's name, its compiled character map (empty: none), whitespace rules
  std::string normalizer_name;
  std::string precompiled_charsmap;
  bool add_dummy_prefix = true;
  bool remove_extra_whitespaces = true;
  bool escape_whitespaces = true;
  // The denormalizer SentencePiece applies after decoding (its character map; empty: none).
  std::string denormalizer_charsmap;
};

SpmModel read_spm_model(const std::string& path);

}  // namespace ppu
