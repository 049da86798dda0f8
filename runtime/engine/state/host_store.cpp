#include "engine/state/host_store.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

#include "core/config.h"

namespace ppu {

namespace {

[[noreturn]] void fail(const std::string& dir, const std::string& what, int err) {
  throw ConfigError("outer.host_state_dir '" + dir + "': " + what + ": " + std::strerror(err));
}

}  // namespace

HostStore::HostStore(std::string dir) : dir_(std::move(dir)) {
  if (dir_.empty()) return;
  std::error_code ec;
  if (!std::filesystem::is_directory(dir_, ec)) fail(dir_, "not a directory", ec ? ec.value() : ENOTDIR);
  if (::access(dir_.c_str(), W_OK | X_OK) != 0) fail(dir_, "not writable", errno);
}

torch::Tensor HostStore::zeros(at::IntArrayRef shape) const {
  if (dir_.empty()) return torch::zeros(shape, torch::kFloat32);
  const auto bytes = static_cast<size_t>(std::max<int64_t>(c10::multiply_integers(shape), 1)) * sizeof(float);
  std::string path = dir_ + "/ppu-outer-state-XXXXXX";
  std::vector<char> name(path.begin(), path.end());
  name.push_back('\0');
  const int fd = ::mkstemp(name.data());
  if (fd < 0) fail(dir_, "cannot create a file", errno);
  ::unlink(name.data());  // the mapping keeps the file alive; no name is left behind
  if (const int err = ::posix_fallocate(fd, 0, static_cast<off_t>(bytes)); err != 0) {
    ::close(fd);
    fail(dir_, "cannot reserve " + std::to_string(bytes) + " bytes", err);
  }
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  const int map_err = errno;
  ::close(fd);
  if (p == MAP_FAILED) fail(dir_, "cannot map " + std::to_string(bytes) + " bytes", map_err);
  // fallocate'd blocks read as zeros.
  return torch::from_blob(
      p, shape, [bytes](void* q) { ::munmap(q, bytes); }, torch::kFloat32);
}

torch::Tensor HostStore::copy_of(const torch::Tensor& t) const {
  if (dir_.empty()) return t.detach().to(torch::kCPU, torch::kFloat32, false, /*copy=*/true);
  auto out = zeros(t.sizes());
  out.copy_(t.detach());
  return out;
}

}  // namespace ppu
