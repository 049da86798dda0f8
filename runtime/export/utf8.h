// utf8: the code points of a UTF-8 string, for the tokenizer export's look at piece texts
// (SentencePiece pieces are valid UTF-8; a malformed byte counts as one code point of its own),
// and sets of code points as a character class of tokenizers' regular expressions (Oniguruma).
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

namespace ppu {

std::vector<uint32_t> utf8_code_points(const std::string& s);
std::string utf8_encode(uint32_t cp);
// The byte offsets where a code point starts, other than 0 and s.size().
std::vector<size_t> utf8_inner_boundaries(const std::string& s);

// "[\x{41}\x{2581}...]", or "[^...]" when `negated`; an empty set gives "[\s\S]" negated
// (any character) and "[^\s\S]" otherwise (none).
std::string regex_char_class(const std::set<uint32_t>& code_points, bool negated);

}  // namespace ppu
