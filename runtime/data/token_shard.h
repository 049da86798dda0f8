// Token shard: one binary file holding a token array, self-describing and checksummed.
//
// Layout (little-endian), 64-byte header then payload:
//   [0,8)   magic "PPUTOKS\0"
//   [8,12)  u32 format version (1)
//   [12,16) u32 bytes per token: 2 (uint16) when vocab <= 65536, else 4 (uint32)
//   [16,24) u64 token count
//   [24,32) u64 vocab size (every token is < vocab)
//   [32,40) u64 FNV-1a 64 checksum of header bytes [0,32) followed by the payload
//   [40,64) reserved, zero
//   [64,..) token count * bytes per token
// Writes are atomic (see atomic_file.h). Reads verify magic, version, dtype, file size,
// checksum and token range, and throw ShardError whose message names the file and the fault.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/exit_status.h"

namespace ppu::data {

// A dataset or shard missing, corrupt or not matching the config (exit 4).
class ShardError : public UnusableInput {
 public:
  using UnusableInput::UnusableInput;
  const char* subject() const noexcept override { return "data"; }
};

struct TokenShard {
  uint64_t vocab = 0;
  std::vector<int32_t> tokens;
};

inline constexpr uint32_t kTokenShardVersion = 1;
inline constexpr size_t kTokenShardHeaderBytes = 64;

// Throws ShardError if a token is outside [0, vocab) or vocab is 0 or > 2^31.
void write_token_shard(const std::string& path, const std::vector<int32_t>& tokens, uint64_t vocab);

TokenShard read_token_shard(const std::string& path);

}  // namespace ppu::data
