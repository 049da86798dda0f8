// Atomic file replacement: after atomic_write_file(path, ...) returns, `path` holds either
// its previous content or the complete new content, never a mix, even across a crash or power
// loss (temp file in the same directory + fsync + rename + fsync of the directory).
// Durability::Readers drops both fsyncs: readers still see the old or the new content whole,
// but a power loss may leave the file empty (for notes rewritten often whose loss is harmless).
// Throws std::runtime_error naming the file and the failing system call.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <string>

namespace ppu {

// Writes the concatenation of the given pieces (so large payloads need no extra copy).
struct ByteRange {
  const void* data;
  size_t size;
};
enum class Durability { PowerLoss, Readers };
void atomic_write_file(const std::string& path, std::initializer_list<ByteRange> pieces,
                       Durability durability = Durability::PowerLoss);

inline void atomic_write_file(const std::string& path, const std::string& content,
                              Durability durability = Durability::PowerLoss) {
  atomic_write_file(path, {ByteRange{content.data(), content.size()}}, durability);
}

// Whole file as bytes; throws std::runtime_error naming the file.
std::string read_file_bytes(const std::string& path);

}  // namespace ppu
