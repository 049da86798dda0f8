#include "common/fnv1a.h"

#include <cstdio>

namespace ppu {

uint64_t fnv1a64(const void* data, size_t size, uint64_t state) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < size; ++i) {
    state ^= p[i];
    state *= 0x100000001b3ULL;
  }
  return state;
}

std::string hex64(uint64_t value) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(value));
  return buf;
}

}  // namespace ppu
