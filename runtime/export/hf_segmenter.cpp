#include "export/hf_segmenter.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>
#include <vector>

#include "export/utf8.h"

namespace ppu {

namespace {

using json = nlohmann::json;

const char* const kSpace = "\u2581";

bool is_normal(const SpmPiece& p) { return p.type == SpmPiece::kNormal; }

json bpe_model(const SpmModel& m) {
  std::map<std::string, int> normal_ids;
  json vocab = json::object();
  for (size_t i = 0; i < m.pieces.size(); ++i) {
    vocab[m.pieces[i].text] = i;
    if (is_normal(m.pieces[i])) normal_ids.emplace(m.pieces[i].text, static_cast<int>(i));
  }
  // (-score, merged id, left id, right id): best score first, then a fixed order.
  std::vector<std::tuple<float, int, int, int>> ranked;
  for (const auto& [text, id] : normal_ids)
    for (size_t cut : utf8_inner_boundaries(text)) {
      auto l = normal_ids.find(text.substr(0, cut)), r = normal_ids.find(text.substr(cut));
      if (l != normal_ids.end() && r != normal_ids.end())
        ranked.emplace_back(-m.pieces[id].score, id, l->second, r->second);
    }
  std::sort(ranked.begin(), ranked.end());
  json merges = json::array();
  for (const auto& [score, id, l, r] : ranked) merges.push_back(m.pieces[l].text + " " + m.pieces[r].text);
  return {{"type", "BPE"},
          {"dropout", nullptr},
          {"unk_token", m.unk_id >= 0 ? m.pieces.at(m.unk_id).text : ""},
          {"continuing_subword_prefix", nullptr},
          {"end_of_word_suffix", nullptr},
          {"fuse_unk", true},
          {"byte_fallback", m.byte_fallback},
          {"ignore_merges", false},
          {"vocab", vocab},
          {"merges", merges}};
}

json unigram_model(const SpmModel& m) {
  float min_normal = 0;
  size_t longest_other = 0;  // in characters
  bool any_normal = false;
  for (const auto& p : m.pieces) {
    if (is_normal(p)) {
      min_normal = any_normal ? std::min(min_normal, p.score) : p.score;
      any_normal = true;
    } else {
      longest_other = std::max(longest_other, utf8_code_points(p.text).size());
    }
  }
  // Below n single-character pieces for any literal of n <= longest_other characters.
  const double other_score = (static_cast<double>(longest_other) + 1) * (static_cast<double>(min_normal) - 1);
  json vocab = json::array();
  for (const auto& p : m.pieces) vocab.push_back({p.text, is_normal(p) ? static_cast<double>(p.score) : other_score});
  return {{"type", "Unigram"}, {"unk_id", m.unk_id}, {"vocab", vocab}, {"byte_fallback", m.byte_fallback}};
}

// A regular expression matching one character that is not a single-character normal piece.
std::string non_piece_character(const SpmModel& m) {
  std::set<uint32_t> known;
  for (const auto& p : m.pieces)
    if (is_normal(p))
      if (const auto cps = utf8_code_points(p.text); cps.size() == 1) known.insert(cps[0]);
  return regex_char_class(known, true);
}

}  // namespace

json hf_pre_tokenizer(const SpmModel& m) {
  bool split = true;
  for (const auto& p : m.pieces)
    if (is_normal(p) && p.text.find(kSpace, 1) != std::string::npos) split = false;
  json steps =
      json::array({{{"type", "Metaspace"}, {"replacement", kSpace}, {"prepend_scheme", "never"}, {"split", split}}});
  if (m.model_type == SpmModel::kUnigram)
    steps.push_back({{"type", "Split"},
                     {"pattern", {{"Regex", non_piece_character(m)}}},
                     {"behavior", "Isolated"},
                     {"invert", false}});
  return {{"type", "Sequence"}, {"pretokenizers", steps}};
}

json hf_segmentation_model(const SpmModel& m) {
  return m.model_type == SpmModel::kBpe ? bpe_model(m) : unigram_model(m);
}

}  // namespace ppu
