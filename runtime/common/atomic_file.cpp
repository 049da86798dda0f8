#include "common/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <sstream>
#include <stdexcept>

namespace ppu {
namespace {

[[noreturn]] void fail(const std::string& path, const char* what, int err) {
  throw std::runtime_error(path + ": " + what + " failed: " + std::strerror(err));
}

void write_all(int fd, const std::string& path, const char* p, size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
      fail(path, "write", err);
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
}

}  // namespace

void atomic_write_file(const std::string& path, std::initializer_list<ByteRange> pieces, Durability durability) {
  const bool power_loss = durability == Durability::PowerLoss;
  namespace fs = std::filesystem;
  // Same directory as the target: rename(2) is only atomic within one filesystem.
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) fail(tmp, "open", errno);
  try {
    for (const ByteRange& r : pieces) write_all(fd, tmp, static_cast<const char*>(r.data), r.size);
  } catch (...) {
    ::unlink(tmp.c_str());
    throw;
  }
  // fsync before rename: otherwise a crash can leave the new name pointing at empty blocks.
  if (power_loss && ::fsync(fd) != 0) {
    const int err = errno;
    ::close(fd);
    ::unlink(tmp.c_str());
    fail(tmp, "fsync", err);
  }
  if (::close(fd) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    fail(tmp, "close", err);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    fail(path, "rename", err);
  }
  if (!power_loss) return;
  // Persist the directory entry too; best effort (some filesystems refuse directory fsync).
  fs::path dir = fs::path(path).parent_path();
  if (dir.empty()) dir = ".";
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

std::string read_file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot open for reading: " + std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw std::runtime_error(path + ": read failed");
  return std::move(ss).str();
}

}  // namespace ppu
