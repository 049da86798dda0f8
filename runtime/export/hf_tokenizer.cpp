#include "export/hf_tokenizer.h"

#include <stdexcept>
#include <utility>

#include "export/hf_normalizer.h"
#include "export/hf_segmenter.h"
#include "export/spm_model.h"
#include "export/spm_support.h"

namespace ppu {

namespace {

using json = nlohmann::json;

json added_tokens(const SpmModel& m) {
  json added = json::array();
  for (size_t i = 0; i < m.pieces.size(); ++i)
    if (m.pieces[i].type == SpmPiece::kControl || m.pieces[i].type == SpmPiece::kUnknown)
      added.push_back({{"id", i},
                       {"content", m.pieces[i].text},
                       {"single_word", false},
                       {"lstrip", false},
                       {"rstrip", false},
                       {"normalized", false},
                       {"special", true}});
  return added;
}

}  // namespace

HfTokenizerFiles hf_tokenizer_files(const std::string& path, int64_t model_max_length) {
  const SpmModel m = read_spm_model(path);
  require_expressible(m, path);

  HfTokenizerFiles out;
  out.special_tokens_map = json::object();
  out.ids = {m.bos_id, m.eos_id, m.unk_id, m.pad_id};
  try {
    out.tokenizer = {{"version", "1.0"},
                     {"truncation", nullptr},
                     {"padding", nullptr},
                     {"added_tokens", added_tokens(m)},
                     {"normalizer", hf_normalizer(m)},
                     {"pre_tokenizer", hf_pre_tokenizer(m)},
                     {"post_processor", nullptr},
                     {"decoder", hf_decoder(m)},
                     {"model", hf_segmentation_model(m)}};
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(path +
                             ": the SentencePiece model cannot be exported as a transformers tokenizer: " + e.what());
  }

  // Every special token is named, absent ones as null: GemmaTokenizer would otherwise add its
  // own "<pad>" etc. as new tokens beyond the vocabulary.
  json special = json::object();
  for (const auto& [key, id] : {std::pair{"bos_token", m.bos_id}, std::pair{"eos_token", m.eos_id},
                                std::pair{"unk_token", m.unk_id}, std::pair{"pad_token", m.pad_id}}) {
    special[key] = id >= 0 ? json(m.pieces[id].text) : json(nullptr);
    if (id >= 0) out.special_tokens_map[key] = m.pieces[id].text;
  }
  out.tokenizer_config = special;
  out.tokenizer_config.update({
      {"tokenizer_class", "GemmaTokenizer"},
      {"add_bos_token", false},
      {"add_eos_token", false},
      {"split_special_tokens", true},
      {"clean_up_tokenization_spaces", false},
      {"model_max_length", model_max_length},
  });
  return out;
}

}  // namespace ppu
