// spm_charsmap: look-ups in a SentencePiece precompiled_charsmap, the compiled form of a
// normalisation rule (nmt_nfkc, ...): a little-endian uint32 byte size of a Darts-clone double
// array, the array's 32-bit units, then the replacement strings, each ending in a NUL. The
// array maps a key (a UTF-8 sequence) to the offset of its replacement. SentencePiece normalises
// a text by taking, at each position, the longest key that starts there.
//
// The export reads a few keys to decide how the fast tokenizer must be assembled
// (export/hf_normalizer.h). Throws std::runtime_error on a charsmap too short for its header.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ppu {

class SpmCharsMap {
 public:
  explicit SpmCharsMap(const std::string& precompiled);

  // The replacement of exactly `key`; nullopt when `key` is not a key.
  std::optional<std::string> lookup(const std::string& key) const;
  // Whether some key is longer than `prefix` and starts with it.
  bool has_longer_key(const std::string& prefix) const;
  // Every key, in byte order.
  std::vector<std::string> keys() const;

 private:
  // The node `key` leads to, or nullopt when no key starts with `key`.
  std::optional<uint32_t> walk(const std::string& key) const;
  void collect(uint32_t pos, std::string& key, std::vector<std::string>& out) const;
  std::vector<uint32_t> units_;
  std::string strings_;
};

}  // namespace ppu
