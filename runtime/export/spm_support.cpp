#include "export/spm_support.h"

#include <cstdio>
#include <map>
#include <set>
#include <stdexcept>

#include "export/utf8.h"

namespace ppu {

namespace {

const char* type_name(int model_type) {
  switch (model_type) {
    case SpmModel::kUnigram: return "UNIGRAM";
    case SpmModel::kBpe: return "BPE";
    case SpmModel::kWord: return "WORD";
    case SpmModel::kChar: return "CHAR";
    default: return "unknown";
  }
}

std::string code_point_name(uint32_t cp) {
  char name[16];
  std::snprintf(name, sizeof name, "U+%04X", cp);
  return name;
}

// The reason a model is not exported, or "" when it is.
std::string unsupported(const SpmModel& m) {
  if (m.model_type != SpmModel::kBpe && m.model_type != SpmModel::kUnigram)
    return std::string("trainer_spec.model_type=") + type_name(m.model_type) +
           ": only BPE and Unigram models have a transformers equivalent";
  if (m.treat_whitespace_as_suffix)
    return "trainer_spec.treat_whitespace_as_suffix=true: transformers' Metaspace puts \"\u2581\" in front of words";
  if (!m.escape_whitespaces)
    return "normalizer_spec.escape_whitespaces=false: transformers' Metaspace always escapes spaces as \"\u2581\"";
  if (!m.byte_fallback)
    return "trainer_spec.byte_fallback=false: a character outside the vocabulary would become <unk>, which "
           "SentencePiece decodes as \" \u2047 \" and transformers as \"<unk>\"";
  if (!m.precompiled_charsmap.empty()) {
    static const std::set<std::string> nfkc_family = {"nmt_nfkc", "nfkc", "nmt_nfkc_cf", "nfkc_cf"};
    if (nfkc_family.count(m.normalizer_name) == 0)
      return "normalizer_spec.name=" + m.normalizer_name +
             ": only no normalisation (identity) and the NFKC rules nmt_nfkc, nfkc, nmt_nfkc_cf and nfkc_cf are "
             "exported exactly";
  }
  if (!m.denormalizer_charsmap.empty())
    return "denormalizer_spec: transformers has no step that rewrites decoded text by a character map";
  const int n = static_cast<int>(m.pieces.size());
  if (m.unk_id < 0 || m.unk_id >= n || m.pieces[m.unk_id].type != SpmPiece::kUnknown)
    return "trainer_spec.unk_id=" + std::to_string(m.unk_id) + ": not the model's <unk> piece";
  for (const int id : {m.bos_id, m.eos_id, m.pad_id})
    if (id >= n) return "trainer_spec: special piece id " + std::to_string(id) + " beyond the vocabulary";
  std::set<std::string> bytes;
  for (const auto& p : m.pieces) {
    if (p.type == SpmPiece::kUserDefined)
      return "trainer_spec.user_defined_symbols (\"" + p.text +
             "\"): SentencePiece matches them inside the text before normalising it; transformers normalises the "
             "text on either side of them apart";
    if (p.type == SpmPiece::kUnused) return "piece \"" + p.text + "\" of type UNUSED: transformers would emit it";
    if (p.type == SpmPiece::kByte) bytes.insert(p.text);
  }
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    if (bytes.count(name) == 0)
      return std::string("trainer_spec.byte_fallback: the byte piece ") + name + " is missing";
  }
  if (m.model_type == SpmModel::kBpe) {
    std::map<float, const SpmPiece*> by_score;
    for (const auto& p : m.pieces) {
      if (p.type != SpmPiece::kNormal || utf8_code_points(p.text).size() < 2) continue;
      const auto [it, fresh] = by_score.emplace(p.score, &p);
      if (!fresh)
        return "BPE pieces \"" + it->second->text + "\" and \"" + p.text + "\" share the score " +
               std::to_string(p.score) + ": SentencePiece breaks such ties by position, transformers by rank";
    }
  } else {
    std::set<uint32_t> single, inside;
    for (const auto& p : m.pieces) {
      if (p.type != SpmPiece::kNormal) continue;
      const auto cps = utf8_code_points(p.text);
      (cps.size() == 1 ? single : inside).insert(cps.begin(), cps.end());
    }
    for (uint32_t cp : inside)
      if (single.count(cp) == 0)
        return "Unigram vocabulary: " + code_point_name(cp) +
               " occurs inside pieces without being a piece, so transformers' score for unknown characters would "
               "decide segmentations";
  }
  return "";
}

}  // namespace

void require_expressible(const SpmModel& m, const std::string& path) {
  if (const std::string why = unsupported(m); !why.empty())
    throw std::runtime_error(path + ": the SentencePiece model cannot be exported as a transformers tokenizer: " + why);
}

}  // namespace ppu
