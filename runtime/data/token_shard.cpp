#include "data/token_shard.h"

#include <cstring>

#include "common/atomic_file.h"
#include "common/fnv1a.h"

// The on-disk format is little-endian and we memcpy integers directly.
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "token shards assume a little-endian host");

namespace ppu::data {
namespace {

constexpr char kMagic[8] = {'P', 'P', 'U', 'T', 'O', 'K', 'S', '\0'};

template <typename T>
void put(std::string& buf, size_t off, T v) {
  std::memcpy(&buf[off], &v, sizeof(T));
}
template <typename T>
T get(const std::string& buf, size_t off) {
  T v;
  std::memcpy(&v, &buf[off], sizeof(T));
  return v;
}

[[noreturn]] void bad(const std::string& path, const std::string& what) {
  throw ShardError("token shard " + path + ": " + what);
}

template <typename T>
std::string encode_payload(const std::vector<int32_t>& tokens) {
  std::string out(tokens.size() * sizeof(T), '\0');
  char* p = out.data();
  for (int32_t t : tokens) {
    const T v = static_cast<T>(t);
    std::memcpy(p, &v, sizeof(T));
    p += sizeof(T);
  }
  return out;
}

template <typename T>
void decode_payload(const std::string& path, const char* p, uint64_t count, uint64_t vocab, std::vector<int32_t>& out) {
  out.resize(count);
  for (uint64_t i = 0; i < count; ++i) {
    T v;
    std::memcpy(&v, p + i * sizeof(T), sizeof(T));
    if (v >= vocab)
      bad(path, "token " + std::to_string(v) + " at index " + std::to_string(i) + " is outside vocab " +
                    std::to_string(vocab));
    out[i] = static_cast<int32_t>(v);
  }
}

}  // namespace

void write_token_shard(const std::string& path, const std::vector<int32_t>& tokens, uint64_t vocab) {
  if (vocab == 0 || vocab > (1ULL << 31)) bad(path, "vocab must be in [1, 2^31], got " + std::to_string(vocab));
  for (size_t i = 0; i < tokens.size(); ++i)
    if (tokens[i] < 0 || static_cast<uint64_t>(tokens[i]) >= vocab)
      bad(path, "cannot write token " + std::to_string(tokens[i]) + " at index " + std::to_string(i) +
                    ": outside vocab " + std::to_string(vocab));

  const uint32_t width = vocab <= 65536 ? 2 : 4;
  const std::string payload = width == 2 ? encode_payload<uint16_t>(tokens) : encode_payload<uint32_t>(tokens);

  std::string header(kTokenShardHeaderBytes, '\0');
  std::memcpy(&header[0], kMagic, sizeof(kMagic));
  put<uint32_t>(header, 8, kTokenShardVersion);
  put<uint32_t>(header, 12, width);
  put<uint64_t>(header, 16, tokens.size());
  put<uint64_t>(header, 24, vocab);
  const uint64_t sum = fnv1a64(payload.data(), payload.size(), fnv1a64(header.data(), 32));
  put<uint64_t>(header, 32, sum);

  atomic_write_file(path, {ByteRange{header.data(), header.size()}, ByteRange{payload.data(), payload.size()}});
}

TokenShard read_token_shard(const std::string& path) {
  std::string buf;
  try {
    buf = read_file_bytes(path);
  } catch (const std::exception& e) {
    throw ShardError(std::string("token shard ") + e.what());
  }
  if (buf.size() < kTokenShardHeaderBytes)
    bad(path, "file is " + std::to_string(buf.size()) + " bytes, shorter than the " +
                  std::to_string(kTokenShardHeaderBytes) + "-byte header (truncated?)");
  if (std::memcmp(buf.data(), kMagic, sizeof(kMagic)) != 0) bad(path, "bad magic (not a PPU token shard)");
  const auto version = get<uint32_t>(buf, 8);
  if (version != kTokenShardVersion)
    bad(path, "unsupported format version " + std::to_string(version) + " (expected " +
                  std::to_string(kTokenShardVersion) + ")");
  const auto width = get<uint32_t>(buf, 12);
  const auto count = get<uint64_t>(buf, 16);
  const auto vocab = get<uint64_t>(buf, 24);
  const auto stored_sum = get<uint64_t>(buf, 32);
  if (width != 2 && width != 4) bad(path, "bad bytes-per-token " + std::to_string(width));
  if (vocab == 0 || vocab > (1ULL << 31) || (width == 2) != (vocab <= 65536))
    bad(path, "vocab " + std::to_string(vocab) + " inconsistent with " + std::to_string(width) + "-byte tokens");
  const uint64_t payload = buf.size() - kTokenShardHeaderBytes;
  if (count > payload / width || count * width != payload)
    bad(path, "size mismatch: header says " + std::to_string(count) + " tokens of " + std::to_string(width) +
                  " bytes but the payload is " + std::to_string(payload) + " bytes (truncated or appended to?)");
  const uint64_t sum = fnv1a64(buf.data() + kTokenShardHeaderBytes, payload, fnv1a64(buf.data(), 32));
  if (sum != stored_sum) bad(path, "checksum mismatch (file is corrupted)");

  TokenShard shard;
  shard.vocab = vocab;
  const char* p = buf.data() + kTokenShardHeaderBytes;
  if (width == 2) decode_payload<uint16_t>(path, p, count, vocab, shard.tokens);
  else decode_payload<uint32_t>(path, p, count, vocab, shard.tokens);
  return shard;
}

}  // namespace ppu::data
