#include "export/utf8.h"

#include <cstdio>

namespace ppu {

namespace {

bool is_continuation(unsigned char c) { return (c & 0xC0U) == 0x80U; }

}  // namespace

std::vector<uint32_t> utf8_code_points(const std::string& s) {
  std::vector<uint32_t> out;
  for (size_t i = 0; i < s.size();) {
    const auto lead = static_cast<unsigned char>(s[i]);
    const size_t len = lead < 0x80 ? 1 : lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
    uint32_t cp = len == 1 ? lead : lead & (0xFFU >> (len + 1));
    size_t n = 1;
    for (; n < len && i + n < s.size() && is_continuation(static_cast<unsigned char>(s[i + n])); ++n)
      cp = (cp << 6) | (static_cast<unsigned char>(s[i + n]) & 0x3FU);
    out.push_back(n == len ? cp : lead);  // a truncated sequence: its lead byte alone
    i += n == len ? len : 1;
  }
  return out;
}

std::string utf8_encode(uint32_t cp) {
  std::string out;
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return out;
}

std::vector<size_t> utf8_inner_boundaries(const std::string& s) {
  std::vector<size_t> out;
  for (size_t i = 1; i < s.size(); ++i)
    if (!is_continuation(static_cast<unsigned char>(s[i]))) out.push_back(i);
  return out;
}

std::string regex_char_class(const std::set<uint32_t>& code_points, bool negated) {
  if (code_points.empty()) return negated ? R"([\s\S])" : R"([^\s\S])";
  std::string cls = negated ? "[^" : "[";
  char buf[16];
  for (uint32_t cp : code_points) {
    std::snprintf(buf, sizeof buf, R"(\x{%X})", cp);
    cls += buf;
  }
  return cls + "]";
}

}  // namespace ppu
