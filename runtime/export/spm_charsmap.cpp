#include "export/spm_charsmap.h"

#include <stdexcept>

namespace ppu {

namespace {

// A Darts-clone unit: bits 0-7 the label of the edge into it (bit 31 set on leaves), bit 8
// "has a leaf" (some key ends here), bits 10-31 the offset to its children (shifted left by 8
// when bit 9 is set); a leaf unit's low 31 bits are the value.
uint32_t label(uint32_t unit) { return unit & ((1U << 31) | 0xFFU); }
bool has_leaf(uint32_t unit) { return ((unit >> 8) & 1U) != 0; }
uint32_t value(uint32_t unit) { return unit & ((1U << 31) - 1); }
uint32_t offset(uint32_t unit) { return (unit >> 10) << ((unit & (1U << 9)) >> 6); }

uint32_t read_u32(const std::string& bytes, size_t at) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(bytes[at + i]);
  return v;
}

}  // namespace

SpmCharsMap::SpmCharsMap(const std::string& precompiled) {
  if (precompiled.size() < 4) throw std::runtime_error("precompiled_charsmap: too short for its header");
  const uint32_t trie_bytes = read_u32(precompiled, 0);
  if (trie_bytes % 4 != 0 || trie_bytes > precompiled.size() - 4 || trie_bytes == 0)
    throw std::runtime_error("precompiled_charsmap: bad double-array size " + std::to_string(trie_bytes));
  units_.resize(trie_bytes / 4);
  for (size_t i = 0; i < units_.size(); ++i) units_[i] = read_u32(precompiled, 4 + 4 * i);
  strings_ = precompiled.substr(4 + trie_bytes);
}

std::optional<uint32_t> SpmCharsMap::walk(const std::string& key) const {
  uint32_t pos = 0;
  for (const char ch : key) {
    const auto c = static_cast<unsigned char>(ch);
    pos ^= offset(units_[pos]) ^ c;
    if (pos >= units_.size() || label(units_[pos]) != c) return std::nullopt;
  }
  return pos;
}

std::optional<std::string> SpmCharsMap::lookup(const std::string& key) const {
  const auto pos = walk(key);
  if (!pos || key.empty() || !has_leaf(units_[*pos])) return std::nullopt;
  const uint32_t leaf = *pos ^ offset(units_[*pos]);
  if (leaf >= units_.size()) return std::nullopt;
  const uint32_t at = value(units_[leaf]);
  if (at >= strings_.size()) return std::nullopt;
  return std::string(strings_.c_str() + at);  // up to its NUL
}

bool SpmCharsMap::has_longer_key(const std::string& prefix) const {
  const auto pos = walk(prefix);
  if (!pos) return false;
  const uint32_t children = *pos ^ offset(units_[*pos]);
  for (uint32_t c = 1; c < 256; ++c)
    if ((children ^ c) < units_.size() && label(units_[children ^ c]) == c) return true;
  return false;
}

void SpmCharsMap::collect(uint32_t pos, std::string& key, std::vector<std::string>& out) const {
  // A well-formed array is a tree of short keys; a corrupt one could loop.
  if (key.size() > 256) throw std::runtime_error("precompiled_charsmap: a key longer than 256 bytes");
  const uint32_t children = pos ^ offset(units_[pos]);
  for (uint32_t c = 1; c < 256; ++c) {
    const uint32_t child = children ^ c;
    if (child >= units_.size() || label(units_[child]) != c) continue;
    key.push_back(static_cast<char>(c));
    if (has_leaf(units_[child])) out.push_back(key);
    collect(child, key, out);
    key.pop_back();
  }
}

std::vector<std::string> SpmCharsMap::keys() const {
  std::vector<std::string> out;
  std::string key;
  collect(0, key, out);
  return out;
}

}  // namespace ppu
