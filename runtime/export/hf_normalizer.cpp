#include "export/hf_normalizer.h"

#include <openssl/evp.h>

#include <set>
#include <stdexcept>
#include <utility>
#include <vector>

#include "export/spm_charsmap.h"
#include "export/utf8.h"

namespace ppu {

namespace {

using json = nlohmann::json;

const char* const kSpace = "\u2581";  // SentencePiece's escaped space, "▁"
// Noncharacters (no NFKC mapping, no key of SentencePiece's maps, not for interchange) mark
// places in the text between the steps; any the text holds itself are escaped.
const char* const kEscape = "\uFDD0";
const char* const kSeparator = "\uFDD3";  // splits grapheme clusters for "Precompiled"
const char* const kBlocker = "\uFDD4";    // stops NFKC composing across it (a starter, ccc 0)
const char* const kFullwidthTilde = "\uFF5E";
// Decoding strips every leading space the first pieces carry; far more than a text holds.
constexpr int kStripAll = 1 << 30;

json replace_string(const std::string& from, const std::string& to) {
  return {{"type", "Replace"}, {"pattern", {{"String", from}}}, {"content", to}};
}
json replace_regex(const std::string& pattern, const std::string& to) {
  return {{"type", "Replace"}, {"pattern", {{"Regex", pattern}}}, {"content", to}};
}
json prepend_space() { return {{"type", "Prepend"}, {"prepend", " "}}; }

std::string base64(const std::string& bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(bytes.data()), static_cast<int>(bytes.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

// The characters of the map's keys of two or more characters: the only ones SentencePiece
// joins with the characters after them (as a key's start, or inside a key).
std::set<uint32_t> composing_characters(const SpmCharsMap& map) {
  std::set<uint32_t> out;
  for (const auto& key : map.keys())
    if (const auto cps = utf8_code_points(key); cps.size() > 1) out.insert(cps.begin(), cps.end() - 1);
  return out;
}

// The character map as the header describes it:
//   escape the marker characters (and ～ where NFKC would change it but the map does not);
//   CR LF as the map's values of CR and of LF;
//   a blocker after every character that no multi-character key continues from, before a
//   non-ASCII one (only non-ASCII characters compose with what precedes them);
//   NFKC, which now composes exactly what SentencePiece's multi-character keys compose;
//   a separator before every non-ASCII character, so that "Precompiled" meets no cluster of
//   several characters and maps each character by itself;
//   Precompiled; drop separators and blockers; unescape.
void charsmap_steps(const std::string& precompiled, json& steps) {
  const SpmCharsMap map(precompiled);
  for (uint32_t cp = 0xFDD0; cp <= 0xFDD6; ++cp) {
    const std::string c = utf8_encode(cp);
    if (map.lookup(c) || map.has_longer_key(c))
      throw std::runtime_error("the character map has a key for the noncharacter " + c);
  }
  // The dummy prefix goes in as a plain space, so no key may start with one.
  if (map.lookup(" ") || map.has_longer_key(" ")) throw std::runtime_error("the character map has keys for a space");
  // Each protected character becomes kEscape + its code; kEscape itself goes first.
  std::vector<std::pair<std::string, std::string>> escaped = {{kEscape, "\uFDD1"}};
  if (!map.lookup(kFullwidthTilde) && !map.has_longer_key(kFullwidthTilde))  // nmt_*: kept, unlike NFKC
    escaped.emplace_back(kFullwidthTilde, "\uFDD2");
  escaped.emplace_back(kSeparator, "\uFDD5");
  escaped.emplace_back(kBlocker, "\uFDD6");
  for (const auto& [c, code] : escaped) steps.push_back(replace_string(c, kEscape + code));

  // CR LF is one grapheme cluster, which "Precompiled" would map as CR's value alone.
  if (const auto cr = map.lookup("\r")) {
    if (map.has_longer_key("\r") || map.has_longer_key("\n"))
      throw std::runtime_error("the character map has keys longer than CR or LF");
    steps.push_back(replace_string("\r\n", *cr + map.lookup("\n").value_or("\n")));
  }
  const std::string non_ascii_next = R"((?=[^\x{0}-\x{7F}]))";
  steps.push_back(
      replace_regex("(?<=" + regex_char_class(composing_characters(map), true) + ")" + non_ascii_next, kBlocker));
  steps.push_back({{"type", "NFKC"}});
  // Not in front of the first character: tokenizers 0.20 panics on an insertion at offset 0.
  steps.push_back(replace_regex(R"((?<=[\s\S]))" + non_ascii_next, kSeparator));
  steps.push_back({{"type", "Precompiled"}, {"precompiled_charsmap", base64(precompiled)}});
  steps.push_back(replace_string(kSeparator, ""));
  steps.push_back(replace_string(kBlocker, ""));
  for (auto it = escaped.rbegin(); it != escaped.rend(); ++it)
    steps.push_back(replace_string(kEscape + it->second, it->first));
}

}  // namespace

json hf_normalizer(const SpmModel& m) {
  json steps = json::array();
  // Without remove_extra_whitespaces the dummy prefix goes in front of every non-empty input,
  // even one the map then empties; as a plain space, which no key of the map starts with.
  if (m.add_dummy_prefix && !m.remove_extra_whitespaces) steps.push_back(prepend_space());
  if (!m.precompiled_charsmap.empty()) charsmap_steps(m.precompiled_charsmap, steps);
  if (m.remove_extra_whitespaces) {
    steps.push_back(replace_regex("\\A +", ""));
    steps.push_back(replace_regex(" {2,}", " "));
    if (m.add_dummy_prefix) steps.push_back(prepend_space());
  }
  steps.push_back(replace_string(" ", kSpace));
  // SentencePiece drops trailing "▁" — escaped spaces and literal ones alike — and with them
  // the dummy prefix of a text that normalised to nothing.
  if (m.remove_extra_whitespaces) steps.push_back(replace_regex(std::string(kSpace) + "+\\z", ""));
  return {{"type", "Sequence"}, {"normalizers", steps}};
}

json hf_decoder(const SpmModel& m) {
  json steps = json::array({replace_string(kSpace, " ")});
  if (m.byte_fallback) steps.push_back({{"type", "ByteFallback"}});
  steps.push_back({{"type", "Fuse"}});
  // SentencePiece's decode drops the "▁" that starts the first piece when add_dummy_prefix or
  // remove_extra_whitespaces is set; with remove_extra_whitespaces again on every following
  // piece while the text is still empty.
  if (m.add_dummy_prefix || m.remove_extra_whitespaces)
    steps.push_back(
        {{"type", "Strip"}, {"content", " "}, {"start", m.remove_extra_whitespaces ? kStripAll : 1}, {"stop", 0}});
  return {{"type", "Sequence"}, {"decoders", steps}};
}

}  // namespace ppu
