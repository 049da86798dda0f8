// shortest_decimal: the shortest decimal spelling that reads back as the same double ("0.0003",
// "1e-08", "300"), for messages and generated schema files.
#pragma once

#include <charconv>
#include <string>

namespace ppu {

inline std::string shortest_decimal(double v) {
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return ec == std::errc() ? std::string(buf, end) : std::to_string(v);
}

}  // namespace ppu
