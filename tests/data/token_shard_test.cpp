// Token shards round-trip and every kind of damage is reported with the file's name.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <numeric>

#include "common/atomic_file.h"
#include "common/fnv1a.h"
#include "data/token_shard.h"
#include "test_dirs.h"

namespace ppu::data {
namespace {

using testing::ScratchDir;

std::vector<int32_t> ramp(size_t n, int32_t vocab) {
  std::vector<int32_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<int32_t>((i * 2654435761u) % vocab);
  return v;
}

void flip_byte(const std::string& path, size_t offset) {
  std::string bytes = read_file_bytes(path);
  bytes.at(offset) ^= 0x01;
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

// Expects read_token_shard(path) to throw a ShardError mentioning the path and `fault`.
void expect_fault(const std::string& path, const std::string& fault) {
  try {
    read_token_shard(path);
    FAIL() << "no error for " << fault;
  } catch (const ShardError& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(fault), std::string::npos) << e.what();
  }
}

TEST(TokenShard, RoundTripUint16) {
  ScratchDir dir;
  const auto tokens = ramp(10001, 65536);
  write_token_shard(dir.file("a.bin"), tokens, 65536);
  EXPECT_EQ(std::filesystem::file_size(dir.file("a.bin")), kTokenShardHeaderBytes + 2 * uint64_t{10001});
  const TokenShard s = read_token_shard(dir.file("a.bin"));
  EXPECT_EQ(s.vocab, 65536u);
  EXPECT_EQ(s.tokens, tokens);
}

TEST(TokenShard, RoundTripUint32) {
  ScratchDir dir;
  const auto tokens = ramp(777, 100000);
  write_token_shard(dir.file("a.bin"), tokens, 100000);
  EXPECT_EQ(std::filesystem::file_size(dir.file("a.bin")), kTokenShardHeaderBytes + 4 * uint64_t{777});
  EXPECT_EQ(read_token_shard(dir.file("a.bin")).tokens, tokens);
}

TEST(TokenShard, EmptyShardRoundTrips) {
  ScratchDir dir;
  write_token_shard(dir.file("e.bin"), {}, 10);
  const TokenShard s = read_token_shard(dir.file("e.bin"));
  EXPECT_EQ(s.vocab, 10u);
  EXPECT_TRUE(s.tokens.empty());
}

TEST(TokenShard, AtomicWriteLeavesNoTempFilesAndReplaces) {
  ScratchDir dir;
  write_token_shard(dir.file("a.bin"), ramp(100, 50), 50);
  write_token_shard(dir.file("a.bin"), ramp(30, 50), 50);
  EXPECT_EQ(read_token_shard(dir.file("a.bin")).tokens.size(), 30u);
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) {
    ++files;
    EXPECT_EQ(e.path().filename(), "a.bin");
  }
  EXPECT_EQ(files, 1);
}

TEST(TokenShard, FlippedPayloadByteIsDetected) {
  ScratchDir dir;
  const std::string path = dir.file("a.bin");
  write_token_shard(path, ramp(1000, 256), 256);
  flip_byte(path, kTokenShardHeaderBytes + 517);
  expect_fault(path, "checksum");
}

TEST(TokenShard, FlippedHeaderVocabIsDetected) {
  ScratchDir dir;
  const std::string path = dir.file("a.bin");
  write_token_shard(path, ramp(1000, 256), 256);
  flip_byte(path, 24);  // vocab 256 -> 257: plausible, only the checksum catches it
  expect_fault(path, "checksum");
}

TEST(TokenShard, TruncatedFileIsDetected) {
  ScratchDir dir;
  const std::string path = dir.file("a.bin");
  write_token_shard(path, ramp(1000, 256), 256);
  std::filesystem::resize_file(path, kTokenShardHeaderBytes + 1999);
  expect_fault(path, "size mismatch");
  std::filesystem::resize_file(path, 20);
  expect_fault(path, "truncated");
}

TEST(TokenShard, BadMagicIsDetected) {
  ScratchDir dir;
  const std::string path = dir.file("a.bin");
  write_token_shard(path, ramp(10, 256), 256);
  flip_byte(path, 0);
  expect_fault(path, "magic");
}

TEST(TokenShard, MissingFileNamesThePath) {
  ScratchDir dir;
  expect_fault(dir.file("nope.bin"), "cannot open");
}

TEST(TokenShard, RefusesToWriteOutOfRangeTokens) {
  ScratchDir dir;
  EXPECT_THROW(write_token_shard(dir.file("a.bin"), {1, 2, 300}, 256), ShardError);
  EXPECT_THROW(write_token_shard(dir.file("a.bin"), {1, -1}, 256), ShardError);
  EXPECT_FALSE(std::filesystem::exists(dir.file("a.bin")));
}

TEST(TokenShard, Fnv1aMatchesReferenceVectors) {
  // Published FNV-1a 64 test vectors.
  EXPECT_EQ(fnv1a64("", 0), 0xcbf29ce484222325ULL);
  EXPECT_EQ(fnv1a64("a", 1), 0xaf63dc4c8601ec8cULL);
  EXPECT_EQ(fnv1a64("foobar", 6), 0x85944171f73967e8ULL);
  // Chaining equals hashing the concatenation.
  EXPECT_EQ(fnv1a64("bar", 3, fnv1a64("foo", 3)), fnv1a64("foobar", 6));
}

}  // namespace
}  // namespace ppu::data
