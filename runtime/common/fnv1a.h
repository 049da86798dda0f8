// FNV-1a 64: the checksum of token shards, checkpoint files and parameter tensors. Not
// cryptographic; it detects torn writes and bit flips, which is what those files need.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace ppu {

inline constexpr uint64_t kFnv1a64Offset = 0xcbf29ce484222325ULL;

// FNV-1a 64 over bytes, continuing from `state` (pass the previous result to chain).
uint64_t fnv1a64(const void* data, size_t size, uint64_t state = kFnv1a64Offset);

// 16 lower-case hex digits, as checkpoint manifests and summaries print a checksum.
std::string hex64(uint64_t value);

}  // namespace ppu
